package postgrescdc

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
)

// checkSplits checks a parallel copy's offset: want ranges (at least 2),
// contiguous, their rows adding up to the offset's.
func checkSplits(t *testing.T, o Offset, want int) {
	t.Helper()
	if len(o.Splits) < 2 || len(o.Splits) > want {
		t.Fatalf("the offset has %d ranges, want 2 to %d: %+v", len(o.Splits), want, o.Splits)
	}
	var rows int64
	for i, s := range o.Splits {
		rows += s.Rows
		if (i == 0) != (s.Lo == nil) || (i == len(o.Splits)-1) != (s.Hi == nil) || i > 0 && *s.Lo != *o.Splits[i-1].Hi {
			t.Fatalf("range %d's bounds do not follow on: %+v", i, o.Splits)
		}
	}
	if rows != o.Rows {
		t.Fatalf("the ranges count %d rows, the offset %d", rows, o.Rows)
	}
}

// TestParallelCopyWithConcurrentChanges copies a table in 4 key ranges at
// once while a writer changes it (inserts, updates, deletes, keys moved
// across ranges): the mirror equals the upstream, each copied row was
// read once (as fresh), and each range used a connection of its own.
func TestParallelCopyWithConcurrentChanges(t *testing.T) {
	u := startUpstream(t)
	const rows = 20000
	u.exec("CREATE TABLE t (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO t SELECT g, 'row ' || g, g %% 100 FROM generate_series(1, %d) g", rows))
	sp := spec("public.t", u.props("t", OptChunkRows, "500", OptParallelism, "4"), simpleCols, "id")
	s := open(t, sp)
	seed := testseed.Int64(t)
	w := startWriter(t, u, "t", rows*6/5, seed)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	conns := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := u.conn.Exec(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tributary-cdc'").ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(string(res[0].Rows[0][0]))
		return n
	}
	opened := workerConns.Load()
	for i := 0; i < 40; i++ {
		m.read(t, r, 100)
		time.Sleep(5 * time.Millisecond) // read slowly at first so that the writer's changes meet the copy
	}
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	// A connection per range; after the copy, only the session's query
	// and replication connections.
	if opened, want := workerConns.Load()-opened, len(m.off(t).Splits); opened != int64(want) {
		t.Errorf("the copy opened %d connections, want %d: one per range", opened, want)
	}
	deadline := time.Now().Add(30 * time.Second)
	for conns() != 2 {
		if time.Now().After(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, _ := u.conn.Exec(ctx, "SELECT backend_type, state, query FROM pg_stat_activity WHERE application_name = 'tributary-cdc'").ReadAll()
			for _, row := range res[0].Rows {
				t.Logf("connection: %s | %s | %s", row[0], row[1], row[2])
			}
			t.Fatalf("%d upstream connections after the copy, want the session's 2", conns())
		}
		time.Sleep(50 * time.Millisecond) // polling
	}
	w.finish(t)
	t.Logf("writer: %d changes", w.ops)
	m.sentinel(t, u, r, "INSERT INTO t VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "after the parallel copy and the changes", m.sorted(), u.rows(sp, "t"))
	o := m.off(t)
	checkSplits(t, o, 4)
	for _, s := range o.Splits {
		if !s.Copied || s.LSNHigh < s.LSNLow {
			t.Errorf("range %d: %+v", s.ID, s)
		}
	}
	if o.Rows < rows/2 || o.Rows > rows*6/5 {
		t.Errorf("offset counts %d rows copied, want about %d", o.Rows, rows)
	} else if int64(m.fresh) != o.Rows {
		t.Errorf("%d rows read as fresh (copied), want the %d the offset counts", m.fresh, o.Rows)
	}
	if total, copied, completed := o.splitCounts(); total != len(o.Splits) || copied != total || completed != total {
		t.Errorf("split counts %d %d %d, want %d of each", total, copied, completed, len(o.Splits))
	}
}

// TestParallelResumeFromOffsets crashes a 4-range copy several times (the
// rows read after the last "committed" offset are forgotten): every range
// resumes from its own position with the same bounds, the result equals
// the upstream, and the rows copied over all runs stay under 1.2x.
func TestParallelResumeFromOffsets(t *testing.T) {
	u := startUpstream(t)
	const rows = 20000
	u.exec("CREATE TABLE t (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO t SELECT g, 'row ' || g, g %% 100 FROM generate_series(1, %d) g", rows))
	sp := spec("public.t", u.props("t", OptChunkRows, "400", OptParallelism, "4"), simpleCols, "id")
	s := open(t, sp)
	seed := testseed.Int64(t)
	w := startWriter(t, u, "t", rows*6/5, seed)
	m := newMirror(sp)
	committed := m.clone()
	var r connector.SplitReader
	var bounds []SplitState
	copied, read := int64(0), int64(0)
	for crash := 0; crash < 5; crash++ {
		r = openReader(t, s, committed.offset, nil)
		m = committed.clone()
		start := int64(0)
		if committed.offset != nil {
			start = committed.off(t).Rows
		}
		m.readN(t, r, 8, 300)
		committed = m.clone()
		r.(connector.OffsetCommitter).Committed(s.split(), committed.offset)
		m.readN(t, r, 2, 300) // read again after the crash: at most 600 rows a crash
		r.Close()
		read += m.off(t).Rows - start
		o := committed.off(t)
		if o.Rows < copied {
			t.Fatalf("crash %d: committed rows went back from %d to %d", crash, copied, o.Rows)
		}
		copied = o.Rows
		if len(o.Splits) > 0 {
			checkSplits(t, o, 4)
			if bounds == nil {
				bounds = o.Splits
			}
			for i := range bounds {
				if !slices.Equal(ptrs(bounds[i].Lo, bounds[i].Hi), ptrs(o.Splits[i].Lo, o.Splits[i].Hi)) {
					t.Fatalf("crash %d: the ranges moved: %+v, were %+v", crash, o.Splits, bounds)
				}
			}
		}
		t.Logf("crash %d: %d rows committed, ranges %+v", crash, o.Rows, o.Splits)
	}
	if committed.off(t).Copied {
		t.Fatalf("the copy finished before the last crash: crash earlier")
	}
	start := committed.off(t).Rows
	r = openReader(t, s, committed.offset, nil)
	m = committed.clone()
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	read += m.off(t).Rows - start
	w.finish(t)
	m.sentinel(t, u, r, "INSERT INTO t VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "after crashes", m.sorted(), u.rows(sp, "t"))
	checkSplits(t, m.off(t), 4)
	if read > rows*12/10 {
		t.Errorf("%d rows copied over all runs for %d rows: more than 1.2x", read, rows)
	}
	t.Logf("%d rows copied over all runs", read)
}

func ptrs(ps ...*string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		if p == nil {
			out[i] = "<nil>"
		} else {
			out[i] = *p
		}
	}
	return out
}

// TestParallelCompositeTextKey copies a table with a composite key whose
// first column is text (ordered COLLATE "C") in 3 ranges, with changes.
func TestParallelCompositeTextKey(t *testing.T) {
	u := startUpstream(t)
	u.exec(`CREATE TABLE ck (k1 text, k2 int4, v int8, PRIMARY KEY (k1, k2))`,
		`INSERT INTO ck SELECT CASE WHEN g % 3 = 0 THEN 'B' ELSE 'a' END || (g % 50), g, g FROM generate_series(1, 6000) g`)
	cols := []string{"k1 text", "k2 int4", "v int8"}
	sp := spec("public.ck", u.props("ck", OptChunkRows, "128", OptParallelism, "3"), cols, "k1", "k2")
	s := open(t, sp)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	for i := 0; i < 5; i++ {
		m.read(t, r, 64)
	}
	u.exec(`UPDATE ck SET v = -v WHERE k2 % 5 = 0`, `DELETE FROM ck WHERE k2 % 7 = 0`,
		`UPDATE ck SET k1 = 'Z' || k1, k2 = k2 + 100000 WHERE k2 % 11 = 0`, `INSERT INTO ck VALUES ('', 1, 1), ('zzz', 2, 2)`)
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	m.sentinel(t, u, r, "INSERT INTO ck VALUES ('~sentinel', 0, 0)", "~sentinel\x000")
	sameRows(t, "a composite text key", m.sorted(), u.rows(sp, "ck"))
	checkSplits(t, m.off(t), 3)
}

// TestParallelEmptyTable: a parallel copy of no rows is one range, copied
// at once; the stream follows.
func TestParallelEmptyTable(t *testing.T) {
	u := startUpstream(t)
	u.exec("CREATE TABLE e (id int8 PRIMARY KEY, v text, n int4)")
	sp := spec("public.e", u.props("e", OptParallelism, "8"), simpleCols, "id")
	s := open(t, sp)
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	m.until(t, r, "the copy", func() bool { return m.offset != nil && m.off(t).Copied })
	if o := m.off(t); len(o.Splits) != 1 || o.Rows != 0 {
		t.Fatalf("an empty table's parallel copy: %+v", o)
	}
	u.exec("INSERT INTO e SELECT g, 'v', g FROM generate_series(1, 100) g", "DELETE FROM e WHERE id % 3 = 0")
	m.sentinel(t, u, r, "INSERT INTO e VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "the stream", m.sorted(), u.rows(sp, "e"))
}

// TestParallelTruncateMirrored: TestTruncateMirrored for a copy in 4
// ranges (the TRUNCATE drops the chunks in flight and the changes they
// held).
func TestParallelTruncateMirrored(t *testing.T) { truncateMirrored(t, OptParallelism, "4") }

func TestParallelismOption(t *testing.T) {
	for _, v := range []string{"0", "-1", "257", "two", ""} {
		if _, err := ParseConfig(map[string]string{OptHostname: "h", OptUsername: "u", OptDatabase: "d", OptTable: "t", OptParallelism: v}, "public.t", true); err == nil {
			t.Errorf("%s = %q was accepted", OptParallelism, v)
		}
	}
	for _, v := range []string{"0", "-5", "1e3", ""} {
		if _, err := ParseConfig(map[string]string{OptHostname: "h", OptUsername: "u", OptDatabase: "d", OptTable: "t", OptRowsPerSplit: v}, "public.t", true); err == nil {
			t.Errorf("%s = %q was accepted", OptRowsPerSplit, v)
		}
	}
	c, err := ParseConfig(map[string]string{OptHostname: "h", OptUsername: "u", OptDatabase: "d", OptTable: "t", OptParallelism: " 16 "}, "public.t", true)
	if err != nil || c.Parallelism != 16 {
		t.Fatalf("parallelism 16: %v %+v", err, c)
	}
}

func TestSnapshotSees(t *testing.T) {
	sn, err := parseSnapshot("4294967400:4294967410:4294967403,4294967405")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		xid  uint32
		sees bool
	}{
		{103, true},        // 2^32+103, below xmin
		{107, false},       // in progress
		{109, false},       // in progress
		{110, true},        // between xmin and xmax, committed
		{114, false},       // xmax: not yet seen
		{4294967290, true}, // the epoch before
		{4294967295, true}, // the epoch before
	} {
		if got := sn.sees(c.xid); got != c.sees {
			t.Errorf("xid %d: sees %v, want %v", c.xid, got, c.sees)
		}
	}
	sn, err = parseSnapshot("740:750:")
	if err != nil || !sn.sees(739) || !sn.sees(745) || sn.sees(750) || len(sn.xip) != 0 {
		t.Fatalf("740:750: %+v %v", sn, err)
	}
	for _, bad := range []string{"", "1:2", "a:2:", "1:2:x"} {
		if _, err := parseSnapshot(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestParallelSplitBounds: the ranges of an analyzed table come from its
// histogram (about the quartiles); an unanalyzed one's from a sample, each
// range holding a fair share.
func TestParallelSplitBounds(t *testing.T) {
	u := startUpstream(t)
	const rows = 40000
	u.exec("CREATE TABLE a (id int8 PRIMARY KEY, v text, n int4)", "CREATE TABLE s (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO a SELECT g, 'row ' || g, g FROM generate_series(1, %d) g", rows),
		"INSERT INTO s SELECT * FROM a", "ANALYZE a")
	bounds := func(table string) []int64 {
		sp := spec("public."+table, u.props(table, OptParallelism, "4"), simpleCols, "id")
		r := openReader(t, open(t, sp), nil, nil)
		m := newMirror(sp)
		m.until(t, r, "the ranges", func() bool { return m.offset != nil && len(m.off(t).Splits) > 0 })
		var out []int64
		for _, s := range m.off(t).Splits[1:] {
			v, err := strconv.ParseInt(*s.Lo, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	got := bounds("a")
	if len(got) != 3 {
		t.Fatalf("analyzed: bounds %v, want 3", got)
	}
	for i, v := range got {
		if want := int64(i+1) * rows / 4; v < want-rows/50 || v > want+rows/50 {
			t.Errorf("analyzed: bound %d is %d, want about %d", i, v, want)
		}
	}
	got = bounds("s")
	if len(got) != 3 {
		t.Fatalf("sampled: bounds %v, want 3", got)
	}
	prev := int64(0)
	for _, v := range append(got, rows) {
		if v-prev < rows/10 {
			t.Errorf("sampled: bounds %v leave a range of %d rows", got, v-prev)
		}
		prev = v
	}
}

// TestParallelRowsPerSplit: backfill.num_rows_per_split makes about
// rows/n ranges, copied backfill.parallelism at a time (as many
// connections), through a crash, under a writer.
func TestParallelRowsPerSplit(t *testing.T) {
	u := startUpstream(t)
	const rows = 20000
	u.exec("CREATE TABLE t (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO t SELECT g, 'row ' || g, g %% 100 FROM generate_series(1, %d) g", rows))
	sp := spec("public.t", u.props("t", OptChunkRows, "300", OptParallelism, "3", OptRowsPerSplit, "2000"), simpleCols, "id")
	s := open(t, sp)
	seed := testseed.Int64(t)
	w := startWriter(t, u, "t", rows*6/5, seed)
	opened := workerConns.Load()
	r := openReader(t, s, nil, nil)
	m := newMirror(sp)
	m.readN(t, r, 10, 300)
	committed := m.clone()
	r.(connector.OffsetCommitter).Committed(s.split(), committed.offset)
	m.readN(t, r, 2, 300)
	r.Close()
	if n := workerConns.Load() - opened; n != 3 {
		t.Errorf("the copy opened %d connections, want 3 (backfill.parallelism)", n)
	}
	r = openReader(t, s, committed.offset, nil)
	m = committed.clone()
	m.until(t, r, "the copy", func() bool { return m.off(t).Copied })
	w.finish(t)
	m.sentinel(t, u, r, "INSERT INTO t VALUES (-1, 'sentinel', 0)", "-1")
	sameRows(t, "after a copy in ranges of about 2000 rows", m.sorted(), u.rows(sp, "t"))
	o := m.off(t)
	if len(o.Splits) < 5 || len(o.Splits) > 20 {
		t.Fatalf("%d ranges for %d rows at 2000 a range", len(o.Splits), rows)
	}
	checkSplits(t, o, 20)
}

// ranged reopens a table's Source as CREATE records it: with the key
// ranges Check fixed (OptRanges), so that its splits are the ranges.
func ranged(t *testing.T, s *Source, sp connector.SourceSpec) (*Source, connector.SourceSpec) {
	t.Helper()
	if ok, _ := s.SharedSplits(); !ok {
		t.Fatalf("a table with %s = %s does not share its splits out", OptParallelism, sp.Props[OptParallelism])
	}
	sp.Props = s.Resolved()
	if sp.Props[OptRanges] == "" {
		t.Fatalf("Check fixed no ranges: %v", sp.Props)
	}
	r, err := ParseSource(sp)
	if err != nil {
		t.Fatal(err)
	}
	return r, sp
}

// readers are the readers of a ranged table's splits as one share of them
// (an actor's each), reading into one mirror.
type readers struct {
	rs []connector.SplitReader
}

func openShare(t *testing.T, s *Source, m *mirror, share [][]string) *readers {
	t.Helper()
	out := &readers{}
	for _, splits := range share {
		var offs []connector.SplitOffset
		for _, sp := range splits {
			offs = append(offs, connector.SplitOffset{Split: sp, Offset: m.offsets[sp]})
		}
		r, err := s.Reader(context.Background(), offs, connector.ReaderEnv{Trouble: func(err error) { t.Logf("trouble: %v", err) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		out.rs = append(out.rs, r)
	}
	return out
}

func (rs *readers) close() {
	for _, r := range rs.rs {
		r.Close()
	}
}

// readAll makes up to n reads over the readers, round robin; it reports
// whether any found rows.
func (rs *readers) readAll(t *testing.T, m *mirror, n, limit int) bool {
	t.Helper()
	any := false
	for i := 0; i < n; i++ {
		if m.read(t, rs.rs[i%len(rs.rs)], limit) {
			any = true
		}
	}
	return any
}

// until reads until cond holds (checked when no reader has anything).
func (rs *readers) until(t *testing.T, m *mirror, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if rs.readAll(t, m, len(rs.rs), 256) {
			continue
		}
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%d rows)", what, len(m.rows))
		}
		time.Sleep(20 * time.Millisecond) // polling several readers
	}
}

// commit tells the readers that the mirror's offsets are committed.
func (rs *readers) commit(m *mirror) {
	for _, r := range rs.rs {
		for split, off := range m.offsets {
			r.(connector.OffsetCommitter).Committed(split, off)
		}
	}
}

// rangedCopied reports whether every range's offset says copied, and the
// rows they count.
func rangedCopied(t *testing.T, m *mirror, splits []string) (bool, int64) {
	t.Helper()
	all, rows := true, int64(0)
	for _, sp := range splits {
		o, err := DecodeOffset(m.offsets[sp])
		if err != nil {
			t.Fatal(err)
		}
		all = all && o.Copied
		rows += o.Rows
	}
	return all, rows
}

// TestRangedSplitsMove copies a table whose 4 key ranges are its splits
// while a writer changes it, the ranges read by readers that change (an
// actor's share each: 2 readers of 2, 4 of 1, 1 of 4, 3) between
// "crashes" that forget what was read after the last commit: each range
// resumes from its own offset in whichever reader, the mirror equals the
// upstream, and the rows copied over all runs stay under 1.2x.
func TestRangedSplitsMove(t *testing.T) {
	u := startUpstream(t)
	const rows = 20000
	u.exec("CREATE TABLE t (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO t SELECT g, 'row ' || g, g %% 100 FROM generate_series(1, %d) g", rows), "ANALYZE t")
	sp := spec("public.t", u.props("t", OptChunkRows, "400", OptParallelism, "4"), simpleCols, "id")
	s, sp := ranged(t, open(t, sp), sp)
	splits := s.splits()
	if !slices.Equal(splits, []string{"0", "1", "2", "3"}) {
		t.Fatalf("splits %v, want 4 ranges", splits)
	}
	seed := testseed.Int64(t)
	w := startWriter(t, u, "t", rows*6/5, seed)
	m := newMirror(sp)
	committed := m.clone()
	shares := [][][]string{{{"0", "2"}, {"1", "3"}}, {{"0"}, {"1"}, {"2"}, {"3"}}, {{"3", "2", "1", "0"}}, {{"1"}, {"0", "3"}, {"2"}}}
	var read int64
	for i, share := range shares {
		m = committed.clone()
		_, start := rangedCopied(t, m, splits)
		rs := openShare(t, s, m, share)
		for k := 0; k < 6; k++ {
			rs.readAll(t, m, 4, 300)
			time.Sleep(20 * time.Millisecond) // the copies move on meanwhile
		}
		committed = m.clone()
		rs.commit(committed)
		rs.readAll(t, m, 2, 100) // read after the commit: forgotten by the crash
		rs.close()
		_, now := rangedCopied(t, m, splits)
		read += now - start
		done, c := rangedCopied(t, committed, splits)
		if done {
			t.Fatalf("share %d: the copy finished: crash earlier", i)
		}
		t.Logf("share %v: %d rows committed", share, c)
	}
	m = committed.clone()
	_, start := rangedCopied(t, m, splits)
	rs := openShare(t, s, m, [][]string{{"0", "1"}, {"2", "3"}})
	rs.until(t, m, "the copy", func() bool { done, _ := rangedCopied(t, m, splits); return done })
	_, end := rangedCopied(t, m, splits)
	read += end - start
	w.finish(t)
	u.exec("INSERT INTO t VALUES (-1, 'sentinel', 0), (100000000, 'sentinel', 0)")
	rs.until(t, m, "the sentinels", func() bool {
		_, a := m.rows["-1"]
		_, b := m.rows["100000000"]
		return a && b
	})
	// Each range's reader follows the stream on its own: poll until the
	// mirror has caught up with every one.
	want := u.rows(sp, "t")
	for deadline := time.Now().Add(time.Minute); !slices.Equal(m.sorted(), want) && time.Now().Before(deadline); {
		rs.readAll(t, m, 4, 256)
		time.Sleep(20 * time.Millisecond) // polling
	}
	sameRows(t, "after the ranges moved", m.sorted(), want)
	for _, split := range splits {
		o, _ := DecodeOffset(m.offsets[split])
		if len(o.Splits) != 1 || o.Splits[0].ID != indexOf(splits, split) || !o.Splits[0].Copied {
			t.Errorf("range %s's offset: %+v", split, o)
		}
	}
	if read > int64(len(want))*12/10 {
		t.Errorf("%d rows copied over all runs for a table of %d rows: more than 1.2x", read, len(want))
	}
	t.Logf("%d rows copied over all runs, the table has %d", read, len(want))
}

// TestRangedTruncate: an upstream TRUNCATE in the copy of a table in 4
// ranges read by 2 readers deletes each range's rows in that range's
// order (TruncateIn), and the mirror converges.
func TestRangedTruncate(t *testing.T) {
	u := startUpstream(t)
	u.exec("CREATE TABLE tr (id int8 PRIMARY KEY, v text, n int4)",
		"INSERT INTO tr SELECT g, 'row ' || g, g FROM generate_series(1, 5000) g", "ANALYZE tr")
	sp := spec("public.tr", u.props("tr", OptChunkRows, "300", OptParallelism, "4"), simpleCols, "id")
	s, sp := ranged(t, open(t, sp), sp)
	m := newMirror(sp)
	rs := openShare(t, s, m, [][]string{{"0", "1"}, {"2", "3"}})
	rs.readAll(t, m, 6, 200)
	u.exec("BEGIN; INSERT INTO tr VALUES (100000, 'gone', 0); TRUNCATE tr; INSERT INTO tr SELECT g, 'after ' || g, g FROM generate_series(1, 4000, 7) g; COMMIT")
	rs.until(t, m, "the copy", func() bool { done, _ := rangedCopied(t, m, s.splits()); return done && m.truncates == 4 })
	u.exec("INSERT INTO tr VALUES (-1, 'sentinel', 0)")
	rs.until(t, m, "the sentinel", func() bool { _, ok := m.rows["-1"]; return ok })
	sameRows(t, "after a truncate in a ranged copy", m.sorted(), u.rows(sp, "tr"))
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// TestRouteByRange: a change goes to the range holding its key's first
// column (lo < k <= hi), none when that range is not in the session; a
// range's TRUNCATE deletes the rows of its range alone.
func TestRouteByRange(t *testing.T) {
	bounds := []string{"100", "200"}
	b := &binding{names: []string{"id", "v"}, types: []types.T{types.TInt64, types.TVarchar}, pk: []int{0}, pkTypes: []types.T{types.TInt64}}
	cfg := Config{Ranged: true, Bounds: bounds}
	mk := func(i int) *table {
		t := &table{cfg: cfg, b: b, sp: &rsplit{name: strconv.Itoa(i), st: Offset{Splits: []SplitState{rangeState(bounds, i)}}}}
		t.newPcopy()
		return t
	}
	all := []*table{mk(0), mk(1), mk(2)}
	key := func(k int64) []types.Datum { return []types.Datum{types.DInt(k)} }
	for _, c := range []struct {
		ts   []*table
		k    int64
		want string // the range's split, "" for none
	}{
		{all, -5, "0"}, {all, 100, "0"}, {all, 101, "1"}, {all, 200, "1"}, {all, 201, "2"}, {all, 1 << 40, "2"},
		{all[1:], 50, ""}, {all[1:], 150, "1"}, {[]*table{all[0], all[2]}, 150, ""}, {[]*table{all[0], all[2]}, 250, "2"}, {all[:2], 300, ""},
	} {
		got := ""
		if r := route(c.ts, key(c.k)); r != nil {
			got = r.sp.name
		}
		if got != c.want {
			t.Errorf("key %d over %d ranges: range %q, want %q", c.k, len(c.ts), got, c.want)
		}
	}
	in := all[1].rangeRows()
	for k, want := range map[int64]bool{100: false, 101: true, 200: true, 201: false} {
		if got := in([]types.Datum{types.DInt(k), types.DString("x")}); got != want {
			t.Errorf("range 1's truncate holds key %d: %v, want %v", k, got, want)
		}
	}
	one := &table{cfg: Config{}, b: b, sp: &rsplit{name: "public.t"}}
	if route([]*table{one}, key(7)) != one || one.rangeRows() != nil {
		t.Error("a table in one range takes every key and truncates every row")
	}
}
