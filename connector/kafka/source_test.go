package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// noLeaks checks, after the test's other cleanups (the cluster's Close
// among them), that every goroutine the test started has ended.
func noLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func props(brokers []string, topic string, kv ...string) map[string]string {
	p := map[string]string{"connector": "kafka", OptBootstrapServer: strings.Join(brokers, ","), OptTopic: topic}
	for i := 0; i < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return p
}

func col(name string, t types.T) connector.SourceColumn {
	return connector.SourceColumn{Name: name, Type: t}
}

func meta(name string, t types.T, m string) connector.SourceColumn {
	return connector.SourceColumn{Name: name, Type: t, Meta: m}
}

func TestSourceParse(t *testing.T) {
	cols := []connector.SourceColumn{col("id", types.TInt32), col("v", types.TVarchar), meta("_row_id", types.TInt64, connector.MetaRowID)}
	brokers := []string{"a:1", "b:2"}
	spec := func(p map[string]string, format, encode string) connector.SourceSpec {
		return connector.SourceSpec{Relation: "public.s", Props: p, Format: format, Encode: encode, Columns: cols, Key: []int{2}}
	}
	// Through the registry, as the engine parses.
	c, src, err := connector.ParseSource(spec(props(brokers, "t", OptStartupMode, "Timestamp", OptStartupMillis, "1700000000000", OptMaxMessageBytes, "1000"), "PLAIN", "JSON"))
	if err != nil || c.Name != "kafka" || !c.Shared {
		t.Fatalf("ParseSource = %+v, %v", c, err)
	}
	want := SourceConfig{Brokers: brokers, Topic: "t", Startup: StartTimestamp, StartupMillis: 1700000000000, MaxMessageBytes: 1000}
	if got := src.(*Source).Config(); !reflect.DeepEqual(got, want) {
		t.Errorf("config %+v, want %+v", got, want)
	}
	if src.Upsert() || src.DefaultRate() != -1 || src.TotalRows() != -1 || src.ChunkRows() != 1024 {
		t.Errorf("upsert %v rate %d total %d chunk %d", src.Upsert(), src.DefaultRate(), src.TotalRows(), src.ChunkRows())
	}
	s, err := ParseSource(spec(props(brokers, "t"), "", ""))
	if err != nil || s.Config().Startup != StartEarliest || s.Config().MaxMessageBytes != DefaultMaxMessageBytes {
		t.Errorf("defaults: %+v, %v", s, err)
	}

	for _, tc := range []struct {
		name   string
		spec   connector.SourceSpec
		kind   error
		naming string // the error names it
	}{
		{"unknown option", spec(props(brokers, "t", "colour", "blue"), "", ""), types.ErrInvalidParameter, `"colour"`},
		{"no brokers", spec(map[string]string{"connector": "kafka", "topic": "t"}, "", ""), types.ErrInvalidParameter, OptBootstrapServer},
		{"empty brokers", spec(props([]string{" , "}, "t"), "", ""), types.ErrInvalidParameter, OptBootstrapServer},
		{"no topic", spec(props(brokers, " "), "", ""), types.ErrInvalidParameter, OptTopic},
		{"bad mode", spec(props(brokers, "t", OptStartupMode, "newest"), "", ""), types.ErrInvalidParameter, OptStartupMode},
		{"timestamp without millis", spec(props(brokers, "t", OptStartupMode, "timestamp"), "", ""), types.ErrInvalidParameter, OptStartupMillis},
		{"millis without timestamp", spec(props(brokers, "t", OptStartupMillis, "5"), "", ""), types.ErrInvalidParameter, OptStartupMillis},
		{"bad millis", spec(props(brokers, "t", OptStartupMode, "timestamp", OptStartupMillis, "yesterday"), "", ""), types.ErrInvalidParameter, OptStartupMillis},
		{"bad max bytes", spec(props(brokers, "t", OptMaxMessageBytes, "0"), "", ""), types.ErrInvalidParameter, OptMaxMessageBytes},
		{"upsert source", spec(props(brokers, "t"), "upsert", "json"), types.ErrUnsupported, "CREATE TABLE"},
		{"debezium", spec(props(brokers, "t"), "debezium", "json"), types.ErrUnsupported, "DEBEZIUM"},
		{"avro", spec(props(brokers, "t"), "plain", "avro"), types.ErrUnsupported, "AVRO"},
		{"upsert on the row id", func() connector.SourceSpec {
			s := spec(props(brokers, "t"), "upsert", "json")
			s.Table = true
			return s
		}(), types.ErrInvalidParameter, `"_row_id"`},
		{"upsert without key", func() connector.SourceSpec {
			s := spec(props(brokers, "t"), "upsert", "json")
			s.Table, s.Key = true, nil
			return s
		}(), types.ErrInvalidParameter, "primary key"},
		{"include partition as timestamp", func() connector.SourceSpec {
			s := spec(props(brokers, "t"), "", "")
			s.Columns = append(append([]connector.SourceColumn(nil), cols...), meta("p", types.TTimestamp, connector.MetaPartition))
			return s
		}(), types.ErrInvalidParameter, `"p"`},
		{"include headers", func() connector.SourceSpec {
			s := spec(props(brokers, "t"), "", "")
			s.Columns = append(append([]connector.SourceColumn(nil), cols...), meta("h", types.TVarchar, "headers"))
			return s
		}(), types.ErrUnsupported, "headers"},
	} {
		_, err := ParseSource(tc.spec)
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.naming) {
			t.Errorf("%s: error %v, want kind %v naming %s", tc.name, err, tc.kind, tc.naming)
		}
	}
	var unknown error
	if _, unknown = ParseSource(spec(props(brokers, "t", "colour", "blue"), "", "")); !strings.Contains(unknown.Error(), OptStartupMode) {
		t.Errorf("the unknown option's error lists no known options: %v", unknown)
	}
}

// testReader opens a reader of spec's source over splits, with its bad
// messages and troubles recorded.
type testReader struct {
	*Reader
	mu       sync.Mutex
	bad      []string // "split/position: error"
	troubles []error
	trouble  chan struct{}
}

func openReader(t *testing.T, spec connector.SourceSpec, splits []connector.SplitOffset) *testReader {
	t.Helper()
	s, err := ParseSource(spec)
	if err != nil {
		t.Fatal(err)
	}
	tr := &testReader{trouble: make(chan struct{}, 1)}
	env := connector.ReaderEnv{
		BadMessage: func(split string, pos int64, err error) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.bad = append(tr.bad, fmt.Sprintf("%s/%d: %v", split, pos, err))
		},
		Trouble: func(err error) {
			tr.mu.Lock()
			tr.troubles = append(tr.troubles, err)
			tr.mu.Unlock()
			signal(tr.trouble)
		},
	}
	r, err := s.Reader(context.Background(), splits, env)
	if err != nil {
		t.Fatal(err)
	}
	tr.Reader = r.(*Reader)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func (tr *testReader) badMessages() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.bad...)
}

func (tr *testReader) troubleList() []error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]error(nil), tr.troubles...)
}

// read reads until every split in want has reached its Next position,
// returning the rows and each split's last result.
func (tr *testReader) read(t *testing.T, ctx context.Context, ts []types.T, want map[string]int64) (*types.Chunk, map[string]connector.ReadResult) {
	t.Helper()
	c := types.NewChunk(ts, 64)
	last := map[string]connector.ReadResult{}
	done := func() bool {
		for s, n := range want {
			if last[s].Next < n {
				return false
			}
		}
		return true
	}
	for !done() {
		res, err := tr.Read(c, 7)
		if err != nil {
			t.Fatal(err)
		}
		if res.Split != "" {
			if prev, ok := last[res.Split]; ok && res.Next <= prev.Next {
				t.Fatalf("split %s went from %d to %d", res.Split, prev.Next, res.Next)
			}
			if n, err := DecodeOffset(res.Offset); err != nil || n != res.Next {
				t.Fatalf("offset %x for next %d", res.Offset, res.Next)
			}
			last[res.Split] = res
			continue
		}
		select {
		case <-tr.Ready():
		case <-ctx.Done():
			t.Fatalf("read %v, want %v: %v", last, want, ctx.Err())
		}
	}
	return c, last
}

// rowsText prints c's rows: op then each column's text (NULL for null).
func rowsText(c *types.Chunk) []string {
	var out []string
	for i := 0; i < c.Len(); i++ {
		parts := []string{c.Op(i).String()}
		for j := range c.Cols {
			d := c.Cols[j].Get(i)
			if d.Null {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, types.FormatText(c.Cols[j].Type, &d))
			}
		}
		out = append(out, strings.Join(parts, " | "))
	}
	return out
}

func typesOf(cols []connector.SourceColumn) []types.T {
	ts := make([]types.T, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	return ts
}

type msg struct {
	partition int32
	key       []byte
	value     []byte
	ts        time.Time
}

func val(s string) msg { return msg{value: []byte(s)} }

// produce writes msgs in order and waits for them.
func produce(t *testing.T, ctx context.Context, brokers []string, topic string, msgs ...msg) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		recs[i] = &kgo.Record{Partition: m.partition, Key: m.key, Value: m.value, Timestamp: m.ts}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// allTypes are a payload column of every type, under names in mixed case.
var allTypes = []connector.SourceColumn{
	col("I2", types.TInt16), col("i4", types.TInt32), col("i8", types.TInt64),
	col("f4", types.TFloat32), col("f8", types.TFloat64), col("n", types.TNumeric), col("n2", types.T{ID: types.Numeric, Width: 5, Scale: 2}),
	col("b", types.TBool), col("s", types.TVarchar), col("by", types.TBytea),
	col("d", types.TDate), col("tm", types.TTime), col("ts", types.TTimestamp), col("tz", types.TTimestamptz),
	col("iv", types.TInterval), col("j", types.TJsonb),
}

func TestSourcePlainJSON(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 1, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	produce(t, ctx, brokers, "t",
		val(`{"i2":-7,"I4":2147483647,"I8":-9007199254740993,"F4":0.5,"f8":1e300,"n":"123.456789012345678901","n2":3.14159,`+
			`"b":true,"s":"h\u00e9llo \"q\"","by":"\\x00ff","d":"2024-02-29","tm":"12:34:56.789","ts":"2024-01-02 03:04:05.5",`+
			`"tz":"2024-01-02T03:04:05+02:00","iv":"1 day 02:00:00","j":{"b":[1,"x",null],"a":2.50}}`),
		val(`{"s":42,"n":1e2,"f8":"NaN","b":"yes","ts":1700000000123,"j":"str","extra":{"ignored":1}}`), // others missing
		val(`{}`),
		val(`{"S":"last wins?","s":"yes, the last"}`),
	)
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t"), Columns: allTypes}, []connector.SplitOffset{{Split: "0"}})
	c, last := r.read(t, ctx, typesOf(allTypes), map[string]int64{"0": 4})
	want := []string{
		`+ | -7 | 2147483647 | -9007199254740993 | 0.5 | 1e+300 | 123.456789012345678901 | 3.14 | t | hé"q" | \x00ff | 2024-02-29 | 12:34:56.789 | 2024-01-02 03:04:05.5 | 2024-01-02 01:04:05+00 | 1 day 02:00:00 | {"a": 2.50, "b": [1, "x", null]}`,
		`+ | NULL | NULL | NULL | NULL | NaN | 100 | NULL | t | 42 | NULL | NULL | NULL | 2023-11-14 22:13:20.123 | NULL | NULL | "str"`,
		`+ | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL`,
		`+ | NULL | NULL | NULL | NULL | NULL | NULL | NULL | NULL | yes, the last | NULL | NULL | NULL | NULL | NULL | NULL | NULL`,
	}
	want[0] = strings.Replace(want[0], `hé"q"`, "h\u00e9llo \"q\"", 1)
	if got := rowsText(c); !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c.Ops != nil {
		t.Errorf("plain rows have ops %v", c.Ops)
	}
	if last["0"].Next != 4 {
		t.Errorf("next %d", last["0"].Next)
	}
	if bad := r.badMessages(); len(bad) != 0 {
		t.Errorf("bad messages: %v", bad)
	}
}

func TestSourceInclude(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 2, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	at := time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.UTC)
	produce(t, ctx, brokers, "t",
		msg{partition: 1, key: []byte("k1"), value: []byte(`{"v":1}`), ts: at},
		msg{partition: 1, value: []byte(`{"v":2}`), ts: at.Add(time.Second)},
		msg{partition: 0, key: []byte{0xff, 0}, value: []byte(`{"v":3}`), ts: at},
	)
	cols := []connector.SourceColumn{
		col("v", types.TInt32),
		meta("_row_id", types.TInt64, connector.MetaRowID),
		meta("_split", types.TVarchar, connector.MetaSplit),
		meta("_pos", types.TInt64, connector.MetaPosition),
		meta("p", types.TVarchar, connector.MetaPartition),
		meta("pi", types.TInt32, connector.MetaPartition),
		meta("o", types.TInt64, connector.MetaOffset),
		meta("os", types.TVarchar, connector.MetaOffset),
		meta("ts", types.TTimestamptz, connector.MetaTimestamp),
		meta("ts2", types.TTimestamp, connector.MetaTimestamp),
		meta("k", types.TBytea, connector.MetaKey),
		meta("ks", types.TVarchar, connector.MetaKey),
	}
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t"), Columns: cols}, []connector.SplitOffset{{Split: "0"}, {Split: "1"}})
	c, _ := r.read(t, ctx, typesOf(cols), map[string]int64{"0": 1, "1": 2})
	got := rowsText(c)
	want := map[string]bool{
		`+ | 1 | 1099511627776 | 1 | 0 | 1 | 1 | 0 | 0 | 2024-05-06 07:08:09.123+00 | 2024-05-06 07:08:09.123 | \x6b31 | k1`: true,
		`+ | 2 | 1099511627777 | 1 | 1 | 1 | 1 | 1 | 1 | 2024-05-06 07:08:10.123+00 | 2024-05-06 07:08:10.123 | NULL | NULL`: true,
		`+ | 3 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 2024-05-06 07:08:09.123+00 | 2024-05-06 07:08:09.123 | \xff00 | NULL`:           true,
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected row %s", g)
		}
		delete(want, g)
	}
	for w := range want {
		t.Errorf("missing row %s", w)
	}
	// The key that is not UTF-8 is NULL in the varchar column, and said.
	if bad := r.badMessages(); len(bad) != 1 || !strings.HasPrefix(bad[0], "0/0: ") || !strings.Contains(bad[0], `"ks"`) {
		t.Errorf("bad messages %v", bad)
	}
}

func TestSourceBadMessages(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 1, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	produce(t, ctx, brokers, "t",
		val(`{"a":"12","b":"x","c":"2024-01-01"}`),        // 0: a string in an int column
		val(`{"a":40000,"b":"y","c":"2024-13-01"}`),       // 1: out of range, bad date: one report
		val(`{"a":1,"b":"z"`),                             // 2: malformed
		val(`[1,2]`),                                      // 3: not an object
		val(`{"a":2,"b":"`+strings.Repeat("x", 300)+`"}`), // 4: too large
		msg{},                           // 5: no value: skipped silently
		val(`{"a":3.5,"b":true,"c":7}`), // 6: a fraction, a bool in varchar, a number as a date
		val(`{"a":3.0,"b":"ok","c":"2024-01-01","d":"e"}`),    // 7: all fine
		val(`{"a":1e2,"b":[1,{"x":"y"}],"c":null,"A":"dup"}`), // 8: the last of a and A wins
	)
	cols := []connector.SourceColumn{col("a", types.TInt16), col("b", types.TVarchar), col("c", types.TDate), meta("_p", types.TInt64, connector.MetaPosition)}
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t", OptMaxMessageBytes, "200"), Columns: cols}, []connector.SplitOffset{{Split: "0"}})
	c, last := r.read(t, ctx, typesOf(cols), map[string]int64{"0": 9})
	want := []string{
		`+ | NULL | x | 2024-01-01 | 0`,
		`+ | NULL | y | NULL | 1`,
		`+ | NULL | true | NULL | 6`,
		`+ | 3 | ok | 2024-01-01 | 7`,
		`+ | NULL | [1,{"x":"y"}] | NULL | 8`,
	}
	if got := rowsText(c); !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if last["0"].Next != 9 {
		t.Errorf("next %d, want 9", last["0"].Next)
	}
	bad := r.badMessages()
	wantBad := []string{"0/0: ", "0/1: ", "0/2: ", "0/3: ", "0/4: ", "0/6: ", "0/8: "}
	if len(bad) != len(wantBad) {
		t.Fatalf("bad messages:\n%s", strings.Join(bad, "\n"))
	}
	for i, w := range wantBad {
		if !strings.HasPrefix(bad[i], w) {
			t.Errorf("bad message %d: %s, want %s...", i, bad[i], w)
		}
	}
	for i, s := range []string{`"a"`, `"a"`, "malformed", "not an object", "larger than " + OptMaxMessageBytes, `"a"`, `"a"`} {
		if !strings.Contains(bad[i], s) {
			t.Errorf("bad message %s does not say %s", bad[i], s)
		}
	}
	t.Logf("bad messages:\n%s", strings.Join(bad, "\n"))
}

func TestSourceUpsert(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 1, "t", "raw")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	kv := func(k, v string) msg {
		m := msg{key: []byte(k)}
		if v != "" {
			m.value = []byte(v)
		}
		return m
	}
	produce(t, ctx, brokers, "t",
		kv(`{"ID":1,"region":"eu"}`, `{"id":99,"region":"xx","v":"a"}`), // the key's values win
		kv(`{"id":2,"region":"us"}`, `{"v":"b"}`),
		kv(`{"id":1,"region":"eu"}`, `{"v":"a2"}`),
		kv(`{"id":2,"region":"us"}`, ""),            // tombstone
		kv(`{"id":3}`, `{"v":"c"}`),                 // no region: skipped
		kv(`7`, `{"v":"d"}`),                        // a scalar for a two-column key: skipped
		msg{value: []byte(`{"v":"e"}`)},             // no key: skipped
		kv(`{"id":"x","region":"eu"}`, `{"v":"f"}`), // a key value of the wrong type: skipped
	)
	cols := []connector.SourceColumn{col("id", types.TInt64), col("region", types.TVarchar), col("v", types.TVarchar), meta("_pos", types.TInt64, connector.MetaPosition)}
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t"), Format: "upsert", Encode: "json", Columns: cols, Key: []int{0, 1}, Table: true},
		[]connector.SplitOffset{{Split: "0"}})
	if !r.dec.plan.upsert {
		t.Fatal("not upsert")
	}
	c, _ := r.read(t, ctx, typesOf(cols), map[string]int64{"0": 8})
	want := []string{
		`+ | 1 | eu | a | 0`,
		`+ | 2 | us | b | 1`,
		`+ | 1 | eu | a2 | 2`,
		`- | 2 | us | NULL | 3`,
	}
	if got := rowsText(c); !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if bad := r.badMessages(); len(bad) != 4 {
		t.Errorf("bad messages:\n%s", strings.Join(bad, "\n"))
	}

	// A scalar JSON key of a one-column key; the raw key as INCLUDE KEY.
	produce(t, ctx, brokers, "raw",
		kv(`5`, `{"v":"x"}`),
		kv(`"k"`, `{"v":"y"}`),
		kv(`5`, ""),
	)
	one := []connector.SourceColumn{col("id", types.TInt64), col("v", types.TVarchar)}
	r1 := openReader(t, connector.SourceSpec{Props: props(brokers, "raw"), Format: "upsert", Encode: "json", Columns: one, Key: []int{0}, Table: true},
		[]connector.SplitOffset{{Split: "0"}})
	c, _ = r1.read(t, ctx, typesOf(one), map[string]int64{"0": 3})
	if got, want := rowsText(c), []string{`+ | 5 | x`, `- | 5 | NULL`}; !reflect.DeepEqual(got, want) {
		t.Errorf("scalar key rows %q, want %q", got, want)
	}
	raw := []connector.SourceColumn{col("v", types.TVarchar), meta("k", types.TVarchar, connector.MetaKey)}
	r2 := openReader(t, connector.SourceSpec{Props: props(brokers, "raw"), Format: "upsert", Encode: "json", Columns: raw, Key: []int{1}, Table: true},
		[]connector.SplitOffset{{Split: "0"}})
	c, _ = r2.read(t, ctx, typesOf(raw), map[string]int64{"0": 3})
	if got, want := rowsText(c), []string{`+ | x | 5`, `+ | y | "k"`, `- | NULL | 5`}; !reflect.DeepEqual(got, want) {
		t.Errorf("raw key rows %q, want %q", got, want)
	}
}

// positions reads c's position column (the last) per split column (the one
// before it).
func positions(c *types.Chunk) map[string][]int64 {
	out := map[string][]int64{}
	n := len(c.Cols)
	for i := 0; i < c.Len(); i++ {
		s := c.Cols[n-2].Str[i]
		out[s] = append(out[s], c.Cols[n-1].I64[i])
	}
	return out
}

var posCols = []connector.SourceColumn{col("n", types.TInt64), meta("_split", types.TVarchar, connector.MetaSplit), meta("_pos", types.TInt64, connector.MetaPosition)}

// numbered returns count messages {"n": from...} per partition.
func numbered(partitions int32, from, count int) []msg {
	var out []msg
	for i := from; i < from+count; i++ {
		for p := int32(0); p < partitions; p++ {
			out = append(out, msg{partition: p, value: []byte(`{"n":` + strconv.Itoa(i) + `}`)})
		}
	}
	return out
}

func TestSourceResume(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 4, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	produce(t, ctx, brokers, "t", numbered(4, 0, 50)...)
	spec := connector.SourceSpec{Props: props(brokers, "t"), Columns: posCols}
	all := []connector.SplitOffset{{Split: "0"}, {Split: "1"}, {Split: "2"}, {Split: "3"}}
	r := openReader(t, spec, all)
	// Read until each split has passed 20, keeping the offsets returned.
	c, last := r.read(t, ctx, typesOf(posCols), map[string]int64{"0": 20, "1": 20, "2": 20, "3": 20})
	got := positions(c)
	_ = r.Close()

	produce(t, ctx, brokers, "t", numbered(4, 50, 30)...)
	var from []connector.SplitOffset
	for _, s := range all {
		from = append(from, connector.SplitOffset{Split: s.Split, Offset: last[s.Split].Offset})
	}
	r2 := openReader(t, spec, from)
	c2, _ := r2.read(t, ctx, typesOf(posCols), map[string]int64{"0": 80, "1": 80, "2": 80, "3": 80})
	for s, ps := range positions(c2) {
		got[s] = append(got[s], ps...)
	}
	for _, s := range all {
		ps := got[s.Split]
		if len(ps) != 80 {
			t.Errorf("split %s: %d rows, want 80", s.Split, len(ps))
		}
		for i, p := range ps {
			if p != int64(i) {
				t.Errorf("split %s: row %d at position %d", s.Split, i, p)
				break
			}
		}
	}
	// The payload agrees with the positions.
	for i := 0; i < c2.Len(); i++ {
		if c2.Cols[0].I64[i] != c2.Cols[2].I64[i] {
			t.Fatalf("row %d: n %d at position %d", i, c2.Cols[0].I64[i], c2.Cols[2].I64[i])
		}
	}
}

func deleteRecords(t *testing.T, ctx context.Context, brokers []string, topic string, partition int32, before int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, before
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
}

func TestSourceBounds(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 3, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var msgs []msg
	for i := 0; i < 10; i++ { // partition 0: offsets 0-9 at base+i s; partition 1: 5 messages; 2: empty
		msgs = append(msgs, msg{partition: 0, value: []byte(`{}`), ts: base.Add(time.Duration(i) * time.Second)})
		if i < 5 {
			msgs = append(msgs, msg{partition: 1, value: []byte(`{}`), ts: base.Add(time.Duration(i) * time.Second)})
		}
	}
	produce(t, ctx, brokers, "t", msgs...)
	deleteRecords(t, ctx, brokers, "t", 1, 2)

	splits := []string{"0", "1", "2"}
	bounds := func(kv ...string) map[string]connector.SplitBounds {
		t.Helper()
		s, err := ParseSource(connector.SourceSpec{Relation: "public.s", Props: props(brokers, "t", kv...), Columns: posCols})
		if err != nil {
			t.Fatal(err)
		}
		e, err := s.Enumerator(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		got, err := e.Splits(ctx)
		if err != nil || !reflect.DeepEqual(got, splits) {
			t.Fatalf("Splits = %v, %v", got, err)
		}
		b, err := e.Bounds(ctx, splits)
		if err != nil {
			t.Fatal(err)
		}
		for s, sb := range b {
			if n, err := DecodeOffset(sb.Start); err != nil || n != sb.StartPos {
				t.Errorf("split %s: start %x for position %d", s, sb.Start, sb.StartPos)
			}
			sb.Start = nil
			b[s] = sb
		}
		return b
	}
	sb := func(start, end int64) connector.SplitBounds { return connector.SplitBounds{StartPos: start, End: end} }
	for _, tc := range []struct {
		name string
		opts []string
		want map[string]connector.SplitBounds
	}{
		{"earliest", nil, map[string]connector.SplitBounds{"0": sb(0, 10), "1": sb(2, 5), "2": sb(0, 0)}},
		{"latest", []string{OptStartupMode, "latest"}, map[string]connector.SplitBounds{"0": sb(10, 10), "1": sb(5, 5), "2": sb(0, 0)}},
		{"timestamp", []string{OptStartupMode, "timestamp", OptStartupMillis, strconv.FormatInt(base.Add(3500*time.Millisecond).UnixMilli(), 10)},
			map[string]connector.SplitBounds{"0": sb(4, 10), "1": sb(4, 5), "2": sb(0, 0)}},
		{"timestamp after all", []string{OptStartupMode, "timestamp", OptStartupMillis, strconv.FormatInt(base.Add(time.Hour).UnixMilli(), 10)},
			map[string]connector.SplitBounds{"0": sb(10, 10), "1": sb(5, 5), "2": sb(0, 0)}},
	} {
		if got := bounds(tc.opts...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: bounds %+v, want %+v", tc.name, got, tc.want)
		}
	}

	// A reader without offsets starts at the startup position.
	spec := connector.SourceSpec{Props: props(brokers, "t", OptStartupMode, "timestamp", OptStartupMillis, strconv.FormatInt(base.Add(7*time.Second).UnixMilli(), 10)), Columns: posCols}
	r := openReader(t, spec, []connector.SplitOffset{{Split: "0"}})
	c, _ := r.read(t, ctx, typesOf(posCols), map[string]int64{"0": 10})
	if got := positions(c)["0"]; !reflect.DeepEqual(got, []int64{7, 8, 9}) {
		t.Errorf("from the timestamp: positions %v", got)
	}

	// Unknown splits and topics are errors with context.
	s, _ := ParseSource(connector.SourceSpec{Relation: "public.s", Props: props(brokers, "missing"), Columns: posCols})
	e, err := s.Enumerator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Splits(ctx); !errors.Is(err, kerr.UnknownTopicOrPartition) || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("Splits of a missing topic: %v", err)
	}
	if _, err := e.Bounds(ctx, []string{"x"}); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("Bounds of split x: %v", err)
	}
}

func TestSourceNewPartition(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 2, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	s, err := ParseSource(connector.SourceSpec{Props: props(brokers, "t"), Columns: posCols})
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Enumerator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, err := e.Splits(ctx); err != nil || !reflect.DeepEqual(got, []string{"0", "1"}) {
		t.Fatalf("Splits = %v, %v", got, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "t", 3
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Splits(ctx); err != nil || !reflect.DeepEqual(got, []string{"0", "1", "2"}) {
		t.Fatalf("Splits after adding a partition = %v, %v", got, err)
	}
	produce(t, ctx, brokers, "t", msg{partition: 2, value: []byte(`{"n":5}`)})
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t"), Columns: posCols}, []connector.SplitOffset{{Split: "2"}})
	c, _ := r.read(t, ctx, typesOf(posCols), map[string]int64{"2": 1})
	if got := rowsText(c); !reflect.DeepEqual(got, []string{"+ | 5 | 2 | 0"}) {
		t.Errorf("rows %q", got)
	}
}

func TestSourceCheck(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 1, "t")
	ctx := testCtx(t)
	check := func(ctx context.Context, brokers []string, topic string) error {
		s, err := ParseSource(connector.SourceSpec{Props: props(brokers, topic), Columns: posCols})
		if err != nil {
			t.Fatal(err)
		}
		return s.Check(ctx)
	}
	if err := check(ctx, cluster.ListenAddrs(), "t"); err != nil {
		t.Errorf("existing topic: %v", err)
	}
	if err := check(ctx, cluster.ListenAddrs(), "nope"); !errors.Is(err, types.ErrInvalidParameter) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("missing topic: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := check(short, []string{"127.0.0.1:1"}, "t"); !errors.Is(err, types.ErrInvalidParameter) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable brokers: %v", err)
	}
}

// TestSourceTruncated: offsets deleted before they were read are reported,
// and reading goes on from the log start.
func TestSourceTruncated(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 1, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	produce(t, ctx, brokers, "t", numbered(1, 0, 10)...)
	deleteRecords(t, ctx, brokers, "t", 0, 6)
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t"), Columns: posCols}, []connector.SplitOffset{{Split: "0", Offset: EncodeOffset(3)}})
	c, _ := r.read(t, ctx, typesOf(posCols), map[string]int64{"0": 10})
	if got := positions(c)["0"]; !reflect.DeepEqual(got, []int64{6, 7, 8, 9}) {
		t.Errorf("positions %v, want 6-9", got)
	}
	troubles := r.troubleList()
	if len(troubles) == 0 || !strings.Contains(troubles[0].Error(), "offsets 3 to 5 were deleted") {
		t.Errorf("troubles %v", troubles)
	}
}

// TestSourceBrokerDown: the cluster goes away while a reader runs and comes
// back on the same port with its data: Trouble says so, and reading goes
// on at exactly the next offset.
func TestSourceBrokerDown(t *testing.T) {
	noLeaks(t)
	dir := t.TempDir()
	ctx := testCtx(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	brokers := cluster.ListenAddrs()
	_, port, _ := net.SplitHostPort(brokers[0])
	produce(t, ctx, brokers, "t", numbered(2, 0, 20)...)
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t"), Columns: posCols}, []connector.SplitOffset{{Split: "0"}, {Split: "1"}})
	c, _ := r.read(t, ctx, typesOf(posCols), map[string]int64{"0": 20, "1": 20})
	got := positions(c)

	cluster.Close()
	select {
	case <-r.trouble:
	case <-ctx.Done():
		t.Fatal("no trouble reported with the cluster gone")
	}
	t.Logf("troubles: %v", r.troubleList())
	if res, err := r.Read(c, 10); err != nil || res.Rows != 0 {
		t.Fatalf("Read with the cluster gone = %+v, %v", res, err)
	}

	p, _ := strconv.Atoi(port)
	cluster, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir), kfake.Ports(p))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	produce(t, ctx, brokers, "t", numbered(2, 20, 15)...)
	c.Reset()
	c, _ = r.read(t, ctx, typesOf(posCols), map[string]int64{"0": 35, "1": 35})
	for s, ps := range positions(c) {
		got[s] = append(got[s], ps...)
	}
	for _, s := range []string{"0", "1"} {
		ps := got[s]
		if len(ps) != 35 {
			t.Errorf("split %s: %d rows, want 35", s, len(ps))
		}
		for i, p := range ps {
			if p != int64(i) {
				t.Errorf("split %s: row %d at position %d", s, i, p)
				break
			}
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// benchMessage is a JSON event of about 10 fields, Nexmark-bid-like.
const benchMessage = `{"auction":1000123,"bidder":2001234,"price":12345678,"channel":"Google","url":"https://www.nexmark.com/wjd/qol/aecj/item.htm?query=1&channel_id=1234567",` +
	`"date_time":"2024-01-02 03:04:05.678","extra":"kjdsf8934jkfd9834kjfd","ratio":0.7512,"ok":true,"id":"a1b2c3d4"}`

var benchCols = []connector.SourceColumn{
	col("auction", types.TInt64), col("bidder", types.TInt64), col("price", types.TInt64), col("channel", types.TVarchar),
	col("url", types.TVarchar), col("date_time", types.TTimestamp), col("extra", types.TVarchar), col("ratio", types.TFloat64),
	col("ok", types.TBool), col("id", types.TVarchar), meta("_row_id", types.TInt64, connector.MetaRowID),
}

// BenchmarkDecode measures decoding JSON messages into a chunk (rows/s:
// b.N is messages).
func BenchmarkDecode(b *testing.B) {
	s, err := ParseSource(connector.SourceSpec{Props: props([]string{"x:1"}, "t"), Columns: benchCols})
	if err != nil {
		b.Fatal(err)
	}
	d := newDecoder(s.plan, DefaultMaxMessageBytes)
	recs := make([]*kgo.Record, types.DefaultChunkSize)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(benchMessage), Offset: int64(i), Partition: 3}
	}
	c := types.NewChunk(typesOf(benchCols), types.DefaultChunkSize)
	b.SetBytes(int64(len(benchMessage)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c.Len() == types.DefaultChunkSize {
			c.Reset()
		}
		if ok, err := d.decode(c, recs[i%len(recs)], "3"); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestSourceTopicDeleted: a topic deleted under a reader is reported, and
// the reader goes on (finding nothing) until closed.
func TestSourceTopicDeleted(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 1, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	produce(t, ctx, brokers, "t", numbered(1, 0, 3)...)
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t"), Columns: posCols}, []connector.SplitOffset{{Split: "0"}})
	c, _ := r.read(t, ctx, typesOf(posCols), map[string]int64{"0": 3})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{"t"}
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("t")
	req.Topics = append(req.Topics, dt)
	req.TimeoutMillis = 5000
	if _, err := req.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.trouble:
	case <-ctx.Done():
		t.Fatal("no trouble reported with the topic deleted")
	}
	troubles := r.troubleList()
	if !strings.Contains(troubles[0].Error(), `"t"`) {
		t.Errorf("troubles %v", troubles)
	}
	t.Logf("troubles: %v", troubles)
	if res, err := r.Read(c, 10); err != nil || res.Rows != 0 {
		t.Fatalf("Read with the topic gone = %+v, %v", res, err)
	}
}

// TestSourceJSONArrays reads array columns from JSON arrays (elements read
// as the element type's own values, nulls kept) and from PostgreSQL's text
// form in a string; an element of the wrong kind makes the message bad.
func TestSourceJSONArrays(t *testing.T) {
	noLeaks(t)
	cluster := newCluster(t, 1, "t")
	ctx := testCtx(t)
	brokers := cluster.ListenAddrs()
	produce(t, ctx, brokers, "t",
		val(`{"a":[1,null,3],"s":["x","y z",null],"d":["2024-01-02"]}`),
		val(`{"a":"{4,5}","s":[],"d":null}`),
		val(`{"a":[1,"two"],"s":"{}"}`),
	)
	cols := []connector.SourceColumn{
		col("a", types.ArrayOf(types.TInt32)), col("s", types.ArrayOf(types.TVarchar)), col("d", types.ArrayOf(types.TDate)),
	}
	r := openReader(t, connector.SourceSpec{Props: props(brokers, "t"), Columns: cols}, []connector.SplitOffset{{Split: "0"}})
	c, _ := r.read(t, ctx, typesOf(cols), map[string]int64{"0": 3})
	want := []string{
		`+ | {1,NULL,3} | {x,"y z",NULL} | {2024-01-02}`,
		`+ | {4,5} | {} | NULL`,
		`+ | NULL | {} | NULL`,
	}
	if got := rowsText(c); !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if bad := r.badMessages(); len(bad) != 1 || !strings.Contains(bad[0], `"a"`) {
		t.Errorf("bad messages %v", bad)
	}
}
