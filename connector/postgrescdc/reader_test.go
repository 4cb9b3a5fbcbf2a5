package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/sql/types"
)

// upstream is a private PostgreSQL with wal_level = logical.
type upstream struct {
	t    *testing.T
	c    *pgtest.Cluster
	conn *pgconn.PgConn
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	c := pgtest.StartWith(t, pgtest.LogicalSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return &upstream{t: t, c: c, conn: conn}
}

func (u *upstream) exec(sqls ...string) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range sqls {
		if _, err := u.conn.Exec(ctx, s).ReadAll(); err != nil {
			u.t.Fatalf("%s: %v", s, err)
		}
	}
}

// props are the WITH options for table (slot and publication by default).
func (u *upstream) props(table string, extra ...string) map[string]string {
	host, port, _ := net.SplitHostPort(u.c.Addr)
	p := map[string]string{"connector": Name, OptHostname: host, OptPort: port, OptUsername: "postgres",
		OptDatabase: "dev", OptTable: table}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i]] = extra[i+1]
	}
	return p
}

// spec is a table's spec: columns "name type" and the key's column names.
func spec(relation string, props map[string]string, cols []string, key ...string) connector.SourceSpec {
	s := connector.SourceSpec{Relation: relation, Props: props, Table: true}
	for _, c := range cols {
		f := strings.Fields(c)
		s.Columns = append(s.Columns, connector.SourceColumn{Name: f[0], Type: typeOf(f[1])})
	}
	for _, k := range key {
		for i, c := range s.Columns {
			if c.Name == k {
				s.Key = append(s.Key, i)
			}
		}
	}
	return s
}

func typeOf(name string) types.T {
	return map[string]types.T{
		"bool": types.TBool, "int2": types.TInt16, "int4": types.TInt32, "int8": types.TInt64, "float4": types.TFloat32,
		"float8": types.TFloat64, "numeric": types.TNumeric, "text": types.TVarchar, "bytea": types.TBytea, "date": types.TDate,
		"time": types.TTime, "timestamp": types.TTimestamp, "timestamptz": types.TTimestamptz, "interval": types.TInterval,
		"jsonb": types.TJsonb,
	}[name]
}

func open(t *testing.T, sp connector.SourceSpec) *Source {
	t.Helper()
	s, err := ParseSource(sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// mirror is the Tributary table the rows go into: rows by key, applied as
// TableSet.Apply does (inserts upsert, deletes delete by key).
type mirror struct {
	ts        []types.T
	key       []int
	rows      map[string][]types.Datum
	offset    []byte
	reads     int
	truncates int // Truncate results read
	fresh     int // rows read as Fresh
	// offsets are the offsets read, by split (a ranged table's readers).
	offsets map[string][]byte
}

func newMirror(sp connector.SourceSpec) *mirror {
	m := &mirror{rows: map[string][]types.Datum{}, key: sp.Key}
	for _, c := range sp.Columns {
		m.ts = append(m.ts, c.Type)
	}
	return m
}

func (m *mirror) clone() *mirror {
	c := *m
	c.offsets = maps.Clone(m.offsets)
	c.rows = make(map[string][]types.Datum, len(m.rows))
	for k, v := range m.rows {
		c.rows[k] = v
	}
	return &c
}

func (m *mirror) keyOf(row []types.Datum) string {
	var parts []string
	for _, k := range m.key {
		parts = append(parts, types.FormatText(m.ts[k], &row[k]))
	}
	return strings.Join(parts, "\x00")
}

// read takes one Read of r into m; false when nothing was available.
func (m *mirror) read(t *testing.T, r connector.SplitReader, limit int) bool {
	t.Helper()
	c := types.NewChunk(m.ts, limit)
	res, err := r.Read(c, limit)
	if err != nil {
		t.Fatal(err)
	}
	if res.Split == "" {
		return false
	}
	if res.Truncate {
		for k, row := range m.rows {
			if res.TruncateIn == nil || res.TruncateIn(row) {
				delete(m.rows, k)
			}
		}
		m.truncates++
	}
	if res.Fresh {
		m.fresh += res.Rows
	}
	var row []types.Datum
	for i := 0; i < c.Len(); i++ {
		row = c.Row(i, nil)
		if res.Fresh {
			// Written without a lookup: the key must be new.
			if _, ok := m.rows[m.keyOf(row)]; ok || c.Op(i) != types.OpInsert {
				t.Fatalf("a fresh (copied) row %v (%v) whose key the table holds", row, c.Op(i))
			}
		}
		if c.Op(i).IsInsert() {
			m.rows[m.keyOf(row)] = row
		} else {
			delete(m.rows, m.keyOf(row))
		}
	}
	m.offset = res.Offset
	if m.offsets == nil {
		m.offsets = map[string][]byte{}
	}
	m.offsets[res.Split] = res.Offset
	m.reads++
	return true
}

func (m *mirror) off(t *testing.T) Offset {
	t.Helper()
	o, err := DecodeOffset(m.offset)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// until reads r into m until cond holds (checked when nothing is available
// now), failing after a deadline.
func (m *mirror) until(t *testing.T, r connector.SplitReader, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m.read(t, r, 256) {
			continue
		}
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (offset %s, %d rows)", what, m.offset, len(m.rows))
		}
		select {
		case <-r.Ready():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readN makes n reads that find something, waiting for them.
func (m *mirror) readN(t *testing.T, r connector.SplitReader, n, limit int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for n > 0 {
		if m.read(t, r, limit) {
			n--
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for rows (offset %s)", m.offset)
		}
		select {
		case <-r.Ready():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sorted is m's rows in text, sorted.
func (m *mirror) sorted() []string {
	var out []string
	for _, row := range m.rows {
		out = append(out, rowText(m.ts, row))
	}
	sort.Strings(out)
	return out
}

func rowText(ts []types.T, row []types.Datum) string {
	parts := make([]string, len(row))
	for i := range row {
		if row[i].Null {
			parts[i] = "NULL"
		} else {
			parts[i] = types.FormatText(ts[i], &row[i])
		}
	}
	return strings.Join(parts, "|")
}

// upstreamRows reads the upstream table's rows as the mirror prints them.
func (u *upstream) rows(sp connector.SourceSpec, table string) []string {
	u.t.Helper()
	var cols []string
	var ts []types.T
	for _, c := range sp.Columns {
		cols = append(cols, quoteIdent(c.Name))
		ts = append(ts, c.Type)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := u.conn.Exec(ctx, "SET extra_float_digits = 3; SET TimeZone = 'UTC'; SET IntervalStyle = postgres; SELECT "+strings.Join(cols, ", ")+" FROM "+table).ReadAll()
	if err != nil {
		u.t.Fatal(err)
	}
	var out []string
	for _, raw := range res[len(res)-1].Rows {
		row := make([]types.Datum, len(raw))
		for i, v := range raw {
			if v == nil {
				row[i] = types.NullDatum
				continue
			}
			if row[i], err = types.ParseText(ts[i], string(v)); err != nil {
				u.t.Fatal(err)
			}
		}
		out = append(out, rowText(ts, row))
	}
	sort.Strings(out)
	return out
}

func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	g, w := map[string]bool{}, map[string]bool{}
	for _, r := range got {
		g[r] = true
	}
	for _, r := range want {
		w[r] = true
	}
	var onlyGot, onlyWant []string
	for r := range g {
		if !w[r] {
			onlyGot = append(onlyGot, r)
		}
	}
	for r := range w {
		if !g[r] {
			onlyWant = append(onlyWant, r)
		}
	}
	sort.Strings(onlyGot)
	sort.Strings(onlyWant)
	t.Fatalf("%s: %d rows, want %d\nonly in the mirror (first 10): %v\nonly upstream (first 10): %v", what, len(got), len(want),
		onlyGot[:min(10, len(onlyGot))], onlyWant[:min(10, len(onlyWant))])
}

// sentinel inserts a row and waits until the mirror has it and the copy
// is done: every change committed before it has then been read.
func (m *mirror) sentinel(t *testing.T, u *upstream, r connector.SplitReader, insert string, key string) {
	t.Helper()
	u.exec(insert)
	m.until(t, r, "the sentinel row "+key, func() bool { _, ok := m.rows[key]; return ok && m.off(t).Copied })
}

func openReader(t *testing.T, s *Source, offset []byte, troubles *[]error) connector.SplitReader {
	t.Helper()
	var mu sync.Mutex
	env := connector.ReaderEnv{Trouble: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if troubles != nil {
			*troubles = append(*troubles, err)
		}
		t.Logf("trouble: %v", err)
	}, BadMessage: func(split string, pos int64, err error) { t.Logf("bad message %s@%d: %v", split, pos, err) }}
	r, err := s.Reader(context.Background(), []connector.SplitOffset{{Split: s.split(), Offset: offset}}, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// writer changes the upstream table t (id int8 key, v text, n int4) at
// random until stopped: inserts, updates, deletes and key changes.
type writer struct {
	stop chan struct{}
	done chan struct{}
	err  error
	ops  int
}

func startWriter(t *testing.T, u *upstream, table string, keys int, seed int64) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	conn, err := pgconn.Connect(ctx, u.c.DSN())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer cancel()
		defer conn.Close(context.Background())
		rng := rand.New(rand.NewSource(seed))
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			var stmts []string
			for i := 0; i < 1+rng.Intn(4); i++ {
				k := 1 + rng.Intn(keys)
				switch rng.Intn(5) {
				case 0:
					stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, 'ins %d', %d) ON CONFLICT (id) DO UPDATE SET v = 'ups', n = %s.n + 1", table, k, w.ops, rng.Intn(100), table))
				case 1, 2:
					stmts = append(stmts, fmt.Sprintf("UPDATE %s SET v = 'upd %d', n = n + 1 WHERE id = %d", table, w.ops, k))
				case 3:
					stmts = append(stmts, fmt.Sprintf("DELETE FROM %s WHERE id = %d", table, k))
				case 4: // move a key, up or down
					stmts = append(stmts, fmt.Sprintf("UPDATE %s SET id = %d WHERE id = %d AND NOT EXISTS (SELECT 1 FROM %s WHERE id = %d)", table, 1+rng.Intn(keys), k, table, 1+rng.Intn(keys)))
				}
				w.ops++
			}
			sql := "BEGIN; " + strings.Join(stmts, "; ") + "; COMMIT"
			if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) && pe.Code == "23505" { // a moved key collided: fine
					_, _ = conn.Exec(ctx, "ROLLBACK").ReadAll()
					continue
				}
				w.err = err
				return
			}
		}
	}()
	return w
}

func (w *writer) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
}

var simpleCols = []string{"id int8", "v text", "n int4"}

// TestCopyWithConcurrentChanges copies a table while a writer changes it
// (inserts, updates, deletes, key moves) and follows the stream: the mirror
// equals the upstream exactly.
func TestCopyWithConcurrentChanges(t *testing.T) {
	u := startUpstream(t)
	const rows = 20000
	u.exec("CREATE TABLE t (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO t SELECT g, 'row ' || g, g %% 100 FROM generate_series(1, %d) g", rows))
	sp := spec("public.t", u.props("t", OptChunkRows, "500"), simpleCols, "id")
	s := open(t, sp)
	w := startWriter(t, u, "t", rows*6/5, 1)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	// Read slowly at first so that the writer's changes meet the copy.
	for i := 0; i < 40; i++ {
		m.read(t, r, 100)
		time.Sleep(5 * time.Millisecond)
	}
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	w.finish(t)
	t.Logf("writer: %d changes", w.ops)
	m.sentinel(t, u, r, "INSERT INTO t VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "after the copy and the changes", m.sorted(), u.rows(sp, "t"))
	if o := m.off(t); o.Rows < rows/2 || o.Rows > rows*6/5 {
		t.Errorf("offset counts %d rows copied, want about %d", o.Rows, rows)
	} else if int64(m.fresh) != o.Rows {
		t.Errorf("%d rows read as fresh (copied), want the %d the offset counts", m.fresh, o.Rows)
	}
}

// TestResumeFromOffsets crashes the reader several times in the copy: the
// rows read after the last "committed" offset are forgotten (the mirror
// goes back to its copy at that offset) and a new reader opens there.
func TestResumeFromOffsets(t *testing.T) {
	u := startUpstream(t)
	const rows = 20000
	u.exec("CREATE TABLE t (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO t SELECT g, 'row ' || g, g %% 100 FROM generate_series(1, %d) g", rows))
	sp := spec("public.t", u.props("t", OptChunkRows, "700"), simpleCols, "id")
	s := open(t, sp)
	w := startWriter(t, u, "t", rows*6/5, 2)
	m := newMirror(sp)
	committed := m.clone()
	var r connector.SplitReader
	copied := int64(0)
	for crash := 0; crash < 5; crash++ {
		r = openReader(t, s, committed.offset, nil)
		m = committed.clone()
		// Read some, "commit" part way, read more, crash.
		m.readN(t, r, 10, 300)
		committed = m.clone()
		r.(connector.OffsetCommitter).Committed(s.split(), committed.offset)
		m.readN(t, r, 5, 300)
		r.Close()
		o := committed.off(t)
		if o.Rows < copied {
			t.Fatalf("crash %d: committed rows went back from %d to %d", crash, copied, o.Rows)
		}
		copied = o.Rows
		t.Logf("crash %d at %+v", crash, o)
	}
	if committed.off(t).Copied {
		t.Fatalf("the copy finished before the last crash: crash earlier")
	}
	r = openReader(t, s, committed.offset, nil)
	m = committed.clone()
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	w.finish(t)
	m.sentinel(t, u, r, "INSERT INTO t VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "after crashes", m.sorted(), u.rows(sp, "t"))
}

// TestCompositeKeyNullsAndTypes copies a table of every mapped type with a
// composite key (text and integer), NULLs, and changes of each kind.
func TestCompositeKeyNullsAndTypes(t *testing.T) {
	u := startUpstream(t)
	u.exec(`CREATE TABLE ty (k1 text, k2 int4, b bool, i2 int2, i8 int8, f4 float4, f8 float8, num numeric(12,3),
		by bytea, d date, tm time, ts timestamp, tz timestamptz, iv interval, j jsonb, PRIMARY KEY (k1, k2))`,
		`INSERT INTO ty SELECT 'k' || (g % 37), g, g % 2 = 0, g % 1000, g::int8 * 1000000007, g / 7.0, g / 3.0, g / 11.0,
		   decode(md5(g::text), 'hex'), date '2020-01-01' + g, time '00:00:01' + g * interval '1 second',
		   timestamp '2020-01-01 00:00:00.123456' + g * interval '1 minute', timestamptz '2020-01-01 00:00:00+00' + g * interval '1 hour',
		   g * interval '1 day 2 hours', jsonb_build_object('g', g, 'a', array[g, g+1])
		 FROM generate_series(1, 3000) g`,
		`INSERT INTO ty (k1, k2) VALUES ('nulls', 1)`,
		`INSERT INTO ty VALUES ('edge', 1, true, -32768, -9223372036854775808, 'Infinity', 'NaN', -0.001, '\x', '0001-01-01', '24:00:00',
		   '1999-12-31 23:59:59.999999', '2000-01-01 00:00:00+05', '-1 year 2 mons -3 days 04:05:06.7', '{"a": null, "b": "x\"y"}')`)
	cols := []string{"k1 text", "k2 int4", "b bool", "i2 int2", "i8 int8", "f4 float4", "f8 float8", "num numeric", "by bytea",
		"d date", "tm time", "ts timestamp", "tz timestamptz", "iv interval", "j jsonb"}
	sp := spec("public.ty", u.props("ty", OptChunkRows, "256"), cols, "k1", "k2")
	s := open(t, sp)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	for i := 0; i < 5; i++ {
		m.read(t, r, 64)
	}
	u.exec(`UPDATE ty SET num = num + 1, j = '[1, 2]' WHERE k2 % 5 = 0`,
		`DELETE FROM ty WHERE k2 % 7 = 0`,
		`UPDATE ty SET k1 = 'moved', k2 = k2 + 100000 WHERE k2 % 11 = 0`,
		`INSERT INTO ty (k1, k2, j) VALUES ('new', 1, 'null'), ('a', 0, '{}')`,
		`UPDATE ty SET b = NULL, by = NULL, iv = NULL WHERE k2 % 13 = 0`)
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	m.sentinel(t, u, r, "INSERT INTO ty (k1, k2) VALUES ('zzz-sentinel', 0)", "zzz-sentinel\x000")
	sameRows(t, "every type", m.sorted(), u.rows(sp, "ty"))
}

// TestEmptyTableThenStream copies a table of no rows and follows the
// inserts, updates and deletes that come after.
func TestEmptyTableThenStream(t *testing.T) {
	u := startUpstream(t)
	u.exec("CREATE TABLE e (id int8 PRIMARY KEY, v text, n int4)")
	sp := spec("public.e", u.props("e"), simpleCols, "id")
	s := open(t, sp)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	m.until(t, r, "the copy", func() bool { return m.offset != nil && m.off(t).Copied })
	if len(m.rows) != 0 || m.off(t).Rows != 0 {
		t.Fatalf("an empty table copied %d rows (offset %s)", len(m.rows), m.offset)
	}
	u.exec("INSERT INTO e SELECT g, 'v', g FROM generate_series(1, 100) g", "UPDATE e SET n = -n WHERE id > 50", "DELETE FROM e WHERE id % 3 = 0",
		"UPDATE e SET id = id + 1000 WHERE id % 10 = 1")
	m.sentinel(t, u, r, "INSERT INTO e VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "the stream", m.sorted(), u.rows(sp, "e"))
}

// TestCommittedAdvancesTheSlot: the slot's confirmed LSN moves only when
// the engine says an offset committed.
func TestCommittedAdvancesTheSlot(t *testing.T) {
	u := startUpstream(t)
	u.exec("CREATE TABLE c (id int8 PRIMARY KEY, v text, n int4)")
	sp := spec("public.c", u.props("c", OptSlot, "slot_c"), simpleCols, "id")
	s := open(t, sp)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	m.sentinel(t, u, r, "INSERT INTO c VALUES (1, 'x', 1)", "1")
	confirmed := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := u.conn.Exec(ctx, "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'slot_c'").ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return string(res[0].Rows[0][0])
	}
	before := confirmed()
	o := m.off(t)
	r.(connector.OffsetCommitter).Committed(s.split(), m.offset)
	deadline := time.Now().Add(30 * time.Second)
	for confirmed() != o.LSNString() {
		if time.Now().After(deadline) {
			t.Fatalf("the slot's confirmed LSN is %s (was %s), want %s", confirmed(), before, o.LSNString())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEstimateAndBackfillRate: the offsets carry the upstream's row
// estimate from the start of the copy; a backfill rate of 0 pauses the
// copy while changes to the keys copied so far still flow; a rate of n
// rows/s makes the rest of the copy take about (rows left)/n.
func TestEstimateAndBackfillRate(t *testing.T) {
	u := startUpstream(t)
	const rows = 3000
	u.exec("CREATE TABLE r (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO r SELECT g, 'row ' || g, g FROM generate_series(1, %d) g", rows), "ANALYZE r")
	sp := spec("public.r", u.props("r", OptChunkRows, "500"), simpleCols, "id")
	s := open(t, sp)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	m.readN(t, r, 1, 100)
	if o := m.off(t); o.Estimate != rows {
		t.Fatalf("the offset's estimate is %d, want %d (reltuples after ANALYZE)", o.Estimate, rows)
	}
	if got, est, done := s.Progress(s.split(), m.offset); got != m.off(t).Rows || est != rows || done {
		t.Fatalf("Progress = %d, %d, %v", got, est, done)
	}
	// Pause the copy once a chunk or two are in: the rows copied stop growing.
	r.(connector.BackfillRater).SetBackfillRate(0)
	m.until(t, r, "a pause", func() bool { return m.off(t).Rows > 0 })
	paused := m.off(t)
	if paused.Copied {
		t.Fatal("the copy finished before it was paused")
	}
	// A change of a copied key flows while paused (id 1 is copied: keys go in order).
	u.exec("UPDATE r SET v = 'changed while paused' WHERE id = 1")
	m.until(t, r, "the change of a copied key", func() bool {
		row := m.rows["1"]
		return row != nil && row[1].S == "changed while paused"
	})
	if o := m.off(t); o.Rows != paused.Rows || !slices.Equal(o.PK, paused.PK) {
		t.Fatalf("the copy moved while paused: %+v, then %+v", paused, o)
	}
	// 4000 rows/s: chunks of 1000 rows, each waiting for its tokens.
	const rate = 4000
	began := time.Now()
	r.(connector.BackfillRater).SetBackfillRate(rate)
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	left := float64(rows) - float64(paused.Rows)
	if took, least := time.Since(began), time.Duration((left-rate/4)/rate*float64(time.Second)); took < least {
		t.Fatalf("the last %.0f rows took %v at %d rows/s, want at least %v", left, took, rate, least)
	}
	m.sentinel(t, u, r, "INSERT INTO r VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "after a paused and a throttled copy", m.sorted(), u.rows(sp, "r"))
}

// TestTruncateMirrored truncates the upstream table during the copy and
// after it, with inserts and a writer around: each TRUNCATE reaches the
// reader's caller once, in order with the changes, and the mirror equals
// the upstream; a reader reopened at an offset before a TRUNCATE reads it
// again, one reopened after it does not.
func TestTruncateMirrored(t *testing.T) { truncateMirrored(t) }

// truncateMirrored is TestTruncateMirrored with the extra options opts.
func truncateMirrored(t *testing.T, opts ...string) {
	u := startUpstream(t)
	const rows = 5000
	u.exec("CREATE TABLE tr (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO tr SELECT g, 'row ' || g, g FROM generate_series(1, %d) g", rows))
	sp := spec("public.tr", u.props("tr", append([]string{OptChunkRows, "300"}, opts...)...), simpleCols, "id")
	s := open(t, sp)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	m.readN(t, r, 4, 200)
	before := m.clone() // an offset before the truncate
	// In the copy: truncate, then rows below and above the copied position.
	u.exec("BEGIN; INSERT INTO tr VALUES (100000, 'gone', 0); TRUNCATE tr; INSERT INTO tr SELECT g, 'after ' || g, g FROM generate_series(1, 4000, 7) g; COMMIT")
	w := startWriter(t, u, "tr", 4000, 3)
	m.until(t, r, "the truncate", func() bool { return m.truncates > 0 })
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	w.finish(t)
	m.sentinel(t, u, r, "INSERT INTO tr VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "after a truncate in the copy", m.sorted(), u.rows(sp, "tr"))
	if m.truncates != 1 {
		t.Fatalf("%d truncates read, want 1", m.truncates)
	}
	after := m.clone()
	r.Close()

	// Reopened before the truncate: it is read again, and the copy converges.
	r = openReader(t, s, before.offset, nil)
	m = before.clone()
	m.sentinel(t, u, r, "INSERT INTO tr VALUES (-2, 'sentinel', 0)", "-2")
	sameRows(t, "reopened before the truncate", m.sorted(), u.rows(sp, "tr"))
	if m.truncates != 1 {
		t.Fatalf("reopened before the truncate: %d truncates read, want 1", m.truncates)
	}
	r.Close()

	// Reopened after it: not read again. Then a truncate after the copy.
	r = openReader(t, s, after.offset, nil)
	m = after.clone()
	m.truncates = 0
	m.sentinel(t, u, r, "INSERT INTO tr VALUES (-3, 'sentinel', 0)", "-3")
	if m.truncates != 0 {
		t.Fatalf("reopened after the truncate: %d truncates read, want 0", m.truncates)
	}
	u.exec("TRUNCATE tr", "INSERT INTO tr VALUES (1, 'one', 1), (2, 'two', 2)")
	m.sentinel(t, u, r, "INSERT INTO tr VALUES (-4, 'sentinel', 0)", "-4")
	sameRows(t, "after a truncate after the copy", m.sorted(), u.rows(sp, "tr"))
	if m.truncates != 1 {
		t.Fatalf("%d truncates read after the copy, want 1", m.truncates)
	}
}

// TestSharedSlot: tables of one source read one slot through one stream.
// Two tables copy while writers change both, a third joins later; each
// mirror equals its upstream table, and the slot's confirmed LSN waits
// until every table (including one named only as a sibling) has committed.
func TestSharedSlot(t *testing.T) {
	u := startUpstream(t)
	const rows = 5000
	for _, tb := range []string{"a", "b", "c"} {
		u.exec(fmt.Sprintf("CREATE TABLE %s (id int8 PRIMARY KEY, v text, n int4)", tb),
			fmt.Sprintf("INSERT INTO %s SELECT g, CASE WHEN g %% 9 = 0 THEN NULL ELSE '%s ' || g END, g %% 100 FROM generate_series(1, %d) g", tb, tb, rows))
	}
	props := u.props("", OptChunkRows, "300")
	delete(props, OptTable)
	src := open(t, connector.SourceSpec{Relation: "public.pg", Props: props})
	resolved := src.Resolved()
	if resolved[OptSlot] != "tributary_public_pg" || resolved[OptSlotCreated] != "true" {
		t.Fatalf("resolved options %v", resolved)
	}
	table := func(name string, siblings ...string) (*Source, connector.SourceSpec) {
		p, err := TableOf(resolved, "public.pg", name)
		if err != nil {
			t.Fatal(err)
		}
		p[OptSiblings] = strings.Join(siblings, ",")
		sp := spec("public."+name, p, simpleCols, "id")
		return open(t, sp), sp
	}
	sa, spa := table("a", "public.b")
	sb, spb := table("b", "public.a")
	wa := startWriter(t, u, "a", rows*6/5, 3)
	wb := startWriter(t, u, "b", rows*6/5, 4)
	ra, rb := openReader(t, sa, nil, nil), openReader(t, sb, nil, nil)
	ma, mb := newMirror(spa), newMirror(spb)
	for !ma.off(t).Copied || !mb.off(t).Copied {
		ma.until(t, ra, "a's copy", func() bool { return true })
		mb.until(t, rb, "b's copy", func() bool { return true })
	}
	// c joins while the stream flows for a and b.
	sc, spc := table("c", "public.a", "public.b")
	rc := openReader(t, sc, nil, nil)
	mc := newMirror(spc)
	mc.until(t, rc, "c's copy", func() bool { return mc.offset != nil && mc.off(t).Copied })
	wa.finish(t)
	wb.finish(t)
	ma.sentinel(t, u, ra, "INSERT INTO a VALUES (-1, 'sentinel', 0)", "-1")
	mb.sentinel(t, u, rb, "INSERT INTO b VALUES (-1, 'sentinel', 0)", "-1")
	mc.sentinel(t, u, rc, "INSERT INTO c VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "a", ma.sorted(), u.rows(spa, "a"))
	sameRows(t, "b", mb.sorted(), u.rows(spb, "b"))
	sameRows(t, "c", mc.sorted(), u.rows(spc, "c"))

	confirmed := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := u.conn.Exec(ctx, "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'tributary_public_pg'").ReadAll()
		if err != nil || len(res[0].Rows) != 1 {
			t.Fatalf("the slot: %v", err)
		}
		return string(res[0].Rows[0][0])
	}
	before := confirmed()
	// a and b commit; c has not: the slot stays.
	ra.(connector.OffsetCommitter).Committed(sa.split(), ma.offset)
	rb.(connector.OffsetCommitter).Committed(sb.split(), mb.offset)
	hold := time.Now().Add(2500 * time.Millisecond) // statuses go out every second
	for time.Now().Before(hold) {
		if got := confirmed(); got != before {
			t.Fatalf("the slot moved from %s to %s before table c committed", before, got)
		}
		time.Sleep(100 * time.Millisecond) // polling
	}
	rc.(connector.OffsetCommitter).Committed(sc.split(), mc.offset)
	want := min(ma.off(t).LSN, mb.off(t).LSN, mc.off(t).LSN)
	deadline := time.Now().Add(30 * time.Second)
	for confirmed() != pglogrepl.LSN(want).String() {
		if time.Now().After(deadline) {
			t.Fatalf("the slot's confirmed LSN is %s, want %s (the least committed)", confirmed(), pglogrepl.LSN(want))
		}
		time.Sleep(50 * time.Millisecond) // polling
	}
	// Dropping the source drops the slot it made.
	for _, r := range []connector.SplitReader{ra, rb, rc} {
		r.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := src.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := u.conn.Exec(ctx, "SELECT count(*) FROM pg_replication_slots").ReadAll()
	if err != nil || string(res[0].Rows[0][0]) != "0" {
		t.Fatalf("slots after DROP SOURCE: %v %v", res, err)
	}
}

// TestReadAheadRoom: a copy reads ahead of the engine's commits at most
// minReadAhead rows, or a readAheadShare of the table's estimate when more.
func TestReadAheadRoom(t *testing.T) {
	for _, c := range []struct {
		estimate, read, committed int64
		want                      int
	}{
		{0, 0, 0, minReadAhead},
		{0, 40_000, 0, minReadAhead - 40_000},
		{0, 100_000, 40_000, 0},
		{1_000_000, 100_000, 90_000, 50_000 - 10_000},
		{10_000_000, 300_000, 0, 200_000},
		{10_000_000, 300_000, 400_000, 500_000 + 100_000}, // committed past the queue (a restart's offsets)
	} {
		sp := &rsplit{st: Offset{Rows: c.read, Estimate: c.estimate}}
		sp.committedRows.Store(c.committed)
		tb := &table{sp: sp}
		if got := tb.readAheadRoom(); got != c.want {
			t.Errorf("estimate %d, read %d, committed %d: room %d, want %d", c.estimate, c.read, c.committed, got, c.want)
		}
	}
}
