package postgrescdc

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tributary/tributary/connector"
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
	seed := time.Now().UnixNano()
	t.Logf("writer seed %d", seed)
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
	seed := time.Now().UnixNano()
	t.Logf("writer seed %d", seed)
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
	seed := time.Now().UnixNano()
	t.Logf("writer seed %d", seed)
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
