package pgwire

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

// testEngine is the in-test SQL engine behind the server: a table of canned
// statements keyed by their exact text. It counts open results so tests can check
// that pgwire closes every Result it runs.
type testEngine struct {
	openResults atomic.Int64
	sessions    atomic.Int64  // open sessions
	sleeping    chan struct{} // receives when "select sleep" blocks in Next
	// panicOnConnect makes the factory panic (a panic outside statements).
	panicOnConnect atomic.Bool
	mu             struct {
		sync.Mutex
		lastParams []types.Datum
	}
}

func newTestEngine() *testEngine {
	return &testEngine{sleeping: make(chan struct{}, 16)}
}

func (e *testEngine) factory(params map[string]string, n Notifier) (Session, error) {
	if e.panicOnConnect.Load() {
		panic("boom (deliberate test panic in the session factory)")
	}
	if params["database"] == "nosuchdb" {
		return nil, types.Errorf(types.ErrInvalidCatalogName, "database %q does not exist", params["database"])
	}
	e.sessions.Add(1)
	return &testSession{e: e, n: n, tx: 'I'}, nil
}

type testSession struct {
	e      *testEngine
	n      Notifier
	tx     byte
	closed bool
}

func (s *testSession) TxStatus() byte { return s.tx }

// Recovered implements Recoverer: a panicked statement fails the block.
func (s *testSession) Recovered() {
	if s.tx == 'T' {
		s.tx = 'E'
	}
}

func (s *testSession) Close() {
	if !s.closed {
		s.closed = true
		s.e.sessions.Add(-1)
	}
}

func (s *testSession) Parse(ctx context.Context, sql string, paramTypes []types.T) ([]Statement, error) {
	var out []Statement
	for _, part := range strings.Split(sql, ";") {
		q := strings.TrimSpace(part)
		if q == "" {
			continue
		}
		c, ok := cannedStatements[q]
		if !ok && strings.HasPrefix(strings.ToLower(q), "copy ") {
			c, ok = cannedStatements["copy"]
		}
		if !ok {
			return nil, types.ErrorAt(types.ErrSyntax, strings.Index(sql, q)+1, "syntax error at or near %q", strings.Fields(q)[0])
		}
		out = append(out, &testStatement{s: s, c: c, declared: paramTypes})
	}
	return out, nil
}

type testStatement struct {
	s         *testSession
	c         canned
	declared  []types.T
	described bool
}

func (st *testStatement) Describe(ctx context.Context) ([]types.T, []Column, error) {
	if st.c.describeErr != nil {
		return nil, nil, st.c.describeErr
	}
	if st.s.tx == 'E' && !st.c.endsTx {
		return nil, nil, types.Errorf(types.ErrInFailedTx, "current transaction is aborted, commands ignored until end of transaction block")
	}
	params := append([]types.T(nil), st.c.params...)
	for i := range params {
		if i < len(st.declared) && st.declared[i].ID != types.Unknown {
			params[i] = st.declared[i]
		}
	}
	st.described = true
	return params, st.c.cols, nil
}

func (st *testStatement) Run(ctx context.Context, params []types.Datum) (Result, error) {
	if !st.described {
		return nil, types.Errorf(types.ErrInternal, "Run before Describe")
	}
	if len(params) != len(st.c.params) {
		return nil, types.Errorf(types.ErrInternal, "got %d params, want %d", len(params), len(st.c.params))
	}
	st.s.e.mu.Lock()
	st.s.e.mu.lastParams = append([]types.Datum(nil), params...)
	st.s.e.mu.Unlock()
	r := &testResult{e: st.s.e, cols: st.c.cols, tag: st.c.tag}
	if st.c.run != nil {
		if err := st.c.run(ctx, st.s, params, r); err != nil {
			return nil, err
		}
	}
	st.s.e.openResults.Add(1)
	return r, nil
}

// testResult serves prepared chunks, or calls next when set.
type testResult struct {
	e      *testEngine
	cols   []Column
	chunks []*types.Chunk
	next   func(ctx context.Context) (*types.Chunk, error)
	tag    string
	closed bool
}

func (r *testResult) Columns() []Column { return r.cols }
func (r *testResult) Tag() string       { return r.tag }

func (r *testResult) Next(ctx context.Context) (*types.Chunk, error) {
	if r.next != nil {
		return r.next(ctx)
	}
	if len(r.chunks) == 0 {
		return nil, io.EOF
	}
	ch := r.chunks[0]
	r.chunks = r.chunks[1:]
	return ch, nil
}

func (r *testResult) Close() {
	if !r.closed {
		r.closed = true
		r.e.openResults.Add(-1)
	}
}

type canned struct {
	params      []types.T
	cols        []Column
	tag         string
	describeErr error
	endsTx      bool
	run         func(ctx context.Context, s *testSession, params []types.Datum, r *testResult) error
}

func cols(spec ...any) []Column {
	out := []Column{}
	for i := 0; i < len(spec); i += 2 {
		out = append(out, Column{Name: spec[i].(string), Type: spec[i+1].(types.T)})
	}
	return out
}

func chunkOf(cs []Column, rows ...[]types.Datum) *types.Chunk {
	ts := make([]types.T, len(cs))
	for i, c := range cs {
		ts[i] = c.Type
	}
	ch := types.NewChunk(ts, len(rows))
	for _, r := range rows {
		ch.AppendRow(r)
	}
	return ch
}

func dec(s string) types.Datum {
	var d apd.Decimal
	if _, _, err := d.SetString(s); err != nil {
		panic(err) // test fixture literal
	}
	return types.DDecimal(&d)
}

func mustParse(t types.T, s string) types.Datum {
	d, err := types.ParseText(t, s)
	if err != nil {
		panic(fmt.Sprintf("fixture %s %q: %v", t, s, err))
	}
	return d
}

func rowsResult(cs []Column, tag string, rows ...[]types.Datum) func(context.Context, *testSession, []types.Datum, *testResult) error {
	return func(_ context.Context, _ *testSession, _ []types.Datum, r *testResult) error {
		r.chunks = []*types.Chunk{chunkOf(cs, rows...)}
		r.tag = tag
		return nil
	}
}

var typesCols = cols(
	"i8", types.TInt64, "f8", types.TFloat64, "num", types.TNumeric, "b", types.TBool, "txt", types.TVarchar,
	"by", types.TBytea, "tstz", types.TTimestamptz, "d", types.TDate, "iv", types.TInterval, "tm", types.TTime,
	"j", types.TJsonb, "i2", types.TInt16, "i4", types.TInt32, "f4", types.TFloat32, "ts", types.TTimestamp,
)

// typesRow is one value of every type (see TestTypesRoundTrip for the expected Go values).
func typesRow() []types.Datum {
	return []types.Datum{
		types.DInt(-9007199254740993),
		types.DFloat(3.25),
		dec("-12345.678900"),
		types.DBool(true),
		types.DString("héllo"),
		types.DString("\x00\x01\xff"),
		mustParse(types.TTimestamptz, "2024-02-29 12:34:56.789012+00"),
		mustParse(types.TDate, "1999-12-31"),
		mustParse(types.TInterval, "1 year 2 mons 3 days 04:05:06.5"),
		mustParse(types.TTime, "13:14:15.5"),
		mustParse(types.TJsonb, `{"a": [1, 2.5, null], "bb": "x"}`),
		types.DInt(-32768),
		types.DInt(2147483647),
		types.DFloat(1.5),
		mustParse(types.TTimestamp, "1969-07-20 20:17:40"),
	}
}

func nullRow(n int) []types.Datum {
	out := make([]types.Datum, n)
	for i := range out {
		out[i] = types.NullDatum
	}
	return out
}

var cannedStatements = map[string]canned{}

func init() {
	add := func(q string, c canned) { cannedStatements[q] = c }
	ttCols := []Column{
		{Name: "a", Type: types.TInt32, TableOID: 16404, ColumnAttr: 1},
		{Name: "b", Type: types.TVarchar, TableOID: 16404, ColumnAttr: 2},
		{Name: "c", Type: types.TTimestamptz, TableOID: 16404, ColumnAttr: 3},
		{Name: "d", Type: types.TNumeric, TableOID: 16404, ColumnAttr: 4},
	}
	// The statements of the pgx v5.12.0 wire trace (testdata/pgx_trace.txt).
	add("select $1::int + 1, $2::text", canned{
		params: []types.T{types.TInt32, types.TVarchar},
		cols:   cols("?column?", types.TInt32, "text", types.TVarchar),
		run: func(_ context.Context, _ *testSession, p []types.Datum, r *testResult) error {
			r.chunks = []*types.Chunk{chunkOf(r.cols, []types.Datum{types.DInt(p[0].I + 1), p[1]})}
			r.tag = "SELECT 1"
			return nil
		},
	})
	add("select $1 = 'a'", canned{
		params: []types.T{types.TUnknown},
		cols:   cols("?column?", types.TBool),
		run: func(_ context.Context, _ *testSession, p []types.Datum, r *testResult) error {
			r.chunks = []*types.Chunk{chunkOf(r.cols, []types.Datum{types.DBool(p[0].S == "a")})}
			r.tag = "SELECT 1"
			return nil
		},
	})
	add("create temp table tt(a int, b text, c timestamptz, d numeric)", canned{tag: "CREATE TABLE"})
	add("insert into tt values ($1,$2,now(),$3)", canned{
		params: []types.T{types.TInt32, types.TVarchar, types.TNumeric}, tag: "INSERT 0 1",
	})
	add("select a,b,c,d from tt", canned{
		cols: ttCols,
		// c = 2026-11-29 16:05:29.6389+00, the value in the trace.
		run: rowsResult(ttCols, "SELECT 1", []types.Datum{types.DInt(1), types.DString("b"),
			types.DInt(1795968329638900), dec("1.5")}),
	})
	add("select  '7' ::int", canned{cols: cols("int4", types.TInt32),
		run: rowsResult(cols("int4", types.TInt32), "SELECT 1", []types.Datum{types.DInt(7)})})
	add("select $1::int", canned{
		params: []types.T{types.TInt32},
		cols:   cols("int4", types.TInt32),
		run: func(_ context.Context, _ *testSession, p []types.Datum, r *testResult) error {
			r.chunks = []*types.Chunk{chunkOf(r.cols, []types.Datum{p[0]})}
			r.tag = "SELECT 1"
			return nil
		},
	})
	add("select * from nosuch", canned{
		describeErr: types.ErrorAt(types.ErrUndefinedTable, 15, "relation %q does not exist", "nosuch"),
	})

	// Values of every type, then a row of NULLs.
	add("select types", canned{cols: typesCols,
		run: rowsResult(typesCols, "SELECT 2", typesRow(), nullRow(len(typesCols)))})
	// Every type as a parameter, echoed back.
	add("select echo($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15)", canned{
		params: func() []types.T {
			ts := make([]types.T, len(typesCols))
			for i, c := range typesCols {
				ts[i] = c.Type
			}
			return ts
		}(),
		cols: typesCols,
		run: func(_ context.Context, _ *testSession, p []types.Datum, r *testResult) error {
			r.chunks = []*types.Chunk{chunkOf(r.cols, p)}
			r.tag = "SELECT 1"
			return nil
		},
	})
	// n rows 0..n-1 in chunks of 100, every third row of a chunk hidden by Vis and
	// replaced by an extra visible row so that exactly n rows are visible.
	add("select gen($1)", canned{
		params: []types.T{types.TInt64},
		cols:   cols("n", types.TInt64),
		run: func(_ context.Context, _ *testSession, p []types.Datum, r *testResult) error {
			n := p[0].I
			var next int64
			ch := types.NewChunk([]types.T{types.TInt64}, 150)
			r.next = func(ctx context.Context) (*types.Chunk, error) {
				if next >= n {
					return nil, io.EOF
				}
				ch.Reset()
				ch.Vis = make([]bool, 0, 150)
				for k := 0; k < 100 && next < n; k++ {
					if k%3 == 2 {
						row := []types.Datum{types.DInt(-1)}
						ch.AppendRow(row)
						ch.Vis[len(ch.Vis)-1] = false
					}
					ch.AppendRow([]types.Datum{types.DInt(next)})
					next++
				}
				return ch, nil
			}
			r.tag = fmt.Sprintf("SELECT %d", n)
			return nil
		},
	})
	// Blocks in Next until its context is cancelled.
	add("select sleep", canned{cols: cols("x", types.TInt32),
		run: func(_ context.Context, s *testSession, _ []types.Datum, r *testResult) error {
			r.next = func(ctx context.Context) (*types.Chunk, error) {
				s.e.sleeping <- struct{}{}
				<-ctx.Done()
				return nil, types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
			}
			return nil
		},
	})
	// Sends one row, then fails in Next.
	add("select 1/0", canned{cols: cols("?column?", types.TInt32),
		run: func(_ context.Context, _ *testSession, _ []types.Datum, r *testResult) error {
			sent := false
			r.next = func(ctx context.Context) (*types.Chunk, error) {
				if !sent {
					sent = true
					return chunkOf(r.cols, []types.Datum{types.DInt(1)}), nil
				}
				return nil, fmt.Errorf("eval: %w", types.Errorf(types.ErrDivisionByZero, "division by zero"))
			}
			return nil
		},
	})
	add("select notice", canned{cols: cols("x", types.TInt32),
		run: func(_ context.Context, s *testSession, _ []types.Datum, r *testResult) error {
			s.n.Notice("NOTICE", "00000", "progress 50%")
			r.chunks = []*types.Chunk{chunkOf(r.cols, []types.Datum{types.DInt(1)})}
			r.tag = "SELECT 1"
			return nil
		},
	})
	add("select panic", canned{cols: cols("x", types.TInt32),
		run: func(context.Context, *testSession, []types.Datum, *testResult) error {
			panic("boom (deliberate test panic)")
		},
	})
	add("begin", canned{tag: "BEGIN", run: func(_ context.Context, s *testSession, _ []types.Datum, _ *testResult) error {
		s.tx = 'T'
		return nil
	}})
	add("commit", canned{tag: "COMMIT", endsTx: true, run: func(_ context.Context, s *testSession, _ []types.Datum, r *testResult) error {
		if s.tx == 'E' {
			r.tag = "ROLLBACK"
		}
		s.tx = 'I'
		return nil
	}})
	add("fail", canned{run: func(_ context.Context, s *testSession, _ []types.Datum, _ *testResult) error {
		if s.tx == 'T' {
			s.tx = 'E'
		}
		return types.ErrorAt(types.ErrDataException, 1, "deliberate failure")
	}})
	// pgx CopyFrom prepares this first, then sends COPY ... FROM STDIN.
	add(`select "a" from "t"`, canned{cols: cols("a", types.TInt32), run: rowsResult(cols("a", types.TInt32), "SELECT 0")})
	add("copy", canned{run: func(context.Context, *testSession, []types.Datum, *testResult) error {
		return types.Errorf(types.ErrUnsupported, "COPY FROM STDIN is not supported")
	}})
}
