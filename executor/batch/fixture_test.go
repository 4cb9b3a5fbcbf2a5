package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// Text fixtures (STYLE 10). A table is written as a header of column types
// then one row per line, values separated by spaces, NULL for NULL:
//
//	I T
//	1 a
//	2 NULL
//
// Type letters: I int8, i int4, F float8, N numeric, T varchar, B bool, D date.
var fixtureTypes = map[string]types.T{
	"I": types.TInt64, "i": types.TInt32, "F": types.TFloat64, "N": types.TNumeric,
	"T": types.TVarchar, "B": types.TBool, "D": types.TDate,
}

// parseTable parses a text table into its types and rows.
func parseTable(t testing.TB, text string) ([]types.T, [][]types.Datum) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	var ts []types.T
	for _, f := range strings.Fields(lines[0]) {
		typ, ok := fixtureTypes[f]
		if !ok {
			t.Fatalf("fixture: unknown type letter %q", f)
		}
		ts = append(ts, typ)
	}
	var rows [][]types.Datum
	for _, line := range lines[1:] {
		fs := strings.Fields(line)
		if len(fs) != len(ts) {
			t.Fatalf("fixture: row %q has %d values, want %d", line, len(fs), len(ts))
		}
		row := make([]types.Datum, len(ts))
		for i, f := range fs {
			if f == "NULL" {
				row[i] = types.NullDatum
				continue
			}
			d, err := types.ParseText(ts[i], f)
			if err != nil {
				t.Fatalf("fixture: %v", err)
			}
			row[i] = d
		}
		rows = append(rows, row)
	}
	return ts, rows
}

// values builds a plan.Values from a text table (columns named c0, c1, ...).
func values(t testing.TB, text string) *plan.Values {
	t.Helper()
	ts, rows := parseTable(t, text)
	v := &plan.Values{Out: fields(ts...)}
	for _, row := range rows {
		es := make([]expr.Expr, len(row))
		for i := range row {
			es[i] = expr.Literal(row[i], ts[i])
		}
		v.Rows = append(v.Rows, es)
	}
	return v
}

// fields names columns c0, c1, ...
func fields(ts ...types.T) []plan.Field {
	fs := make([]plan.Field, len(ts))
	for i, t := range ts {
		fs[i] = plan.Field{Name: fmt.Sprintf("c%d", i), Type: t}
	}
	return fs
}

// chunkOf builds one chunk from a text table.
func chunkOf(t testing.TB, text string) *types.Chunk {
	t.Helper()
	ts, rows := parseTable(t, text)
	c := types.NewChunk(ts, len(rows))
	for _, r := range rows {
		c.AppendRow(r)
	}
	return c
}

// format prints the visible rows of c, one line each.
func format(c *types.Chunk, lines []string) []string {
	var b []byte
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		b = b[:0]
		for j := range c.Cols {
			if j > 0 {
				b = append(b, ' ')
			}
			d := c.Cols[j].Get(i)
			if d.Null {
				b = append(b, "NULL"...)
			} else {
				b = types.AppendText(b, c.Cols[j].Type, &d)
			}
		}
		lines = append(lines, string(b))
	}
	return lines
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newEnv() *Env { return &Env{Ctx: &expr.Ctx{}} }

// collect runs x to the end, closes it, and returns its rows as text.
func collect(t testing.TB, x Executor) ([]string, error) {
	t.Helper()
	ctx := testCtx(t)
	var lines []string
	defer func() {
		if err := x.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := x.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
	}()
	for {
		c, err := x.Next(ctx)
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		if c.Len() == 0 {
			t.Errorf("Next returned an empty chunk")
		}
		if got, want := len(c.Cols), len(x.Schema()); got != want {
			t.Errorf("chunk has %d columns, schema %d", got, want)
		}
		lines = format(c, lines)
	}
}

// query builds and runs a plan, failing the test on error.
func query(t testing.TB, env *Env, n plan.Node) []string {
	t.Helper()
	lines, err := queryErr(t, env, n)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return lines
}

func queryErr(t testing.TB, env *Env, n plan.Node) ([]string, error) {
	t.Helper()
	x, err := Build(env, &plan.Query{Root: n})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return collect(t, x)
}

// expectRows compares rows with a text block (one row per line), in order.
func expectRows(t testing.TB, got []string, want string) {
	t.Helper()
	w := splitLines(want)
	if !slices.Equal(got, w) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(w, "\n"))
	}
}

// expectSet compares rows with a text block ignoring order.
func expectSet(t testing.TB, got []string, want string) {
	t.Helper()
	g := slices.Clone(got)
	slices.Sort(g)
	w := splitLines(want)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("rows (any order):\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func expectKind(t testing.TB, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want kind %v", err, kind)
	}
}

// col, call and lit shorten expression building in tests.
func col(i int, t types.T) expr.Expr { return expr.Column(i, t) }

func lit(v int64) expr.Expr { return expr.Literal(types.DInt(v), types.TInt64) }

func call(t testing.TB, name string, args ...expr.Expr) expr.Expr {
	t.Helper()
	e, err := expr.Call(name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return e
}

func agg(t testing.TB, name string, distinct bool, args ...types.T) *expr.Agg {
	t.Helper()
	a, err := expr.LookupAgg(name, args, distinct)
	if err != nil {
		t.Fatalf("agg %s: %v", name, err)
	}
	return a
}

// chunkSource replays chunks (for benchmarks and Vis tests).
type chunkSource struct {
	ts     []types.T
	chunks []*types.Chunk
	pos    int
	closed bool
}

func (s *chunkSource) Schema() []types.T { return s.ts }
func (s *chunkSource) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if s.pos >= len(s.chunks) {
		return nil, io.EOF
	}
	s.pos++
	return s.chunks[s.pos-1], nil
}
func (s *chunkSource) Close() error { s.closed = true; return nil }
