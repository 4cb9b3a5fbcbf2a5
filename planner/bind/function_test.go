package bind

import (
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// TestFunctionInlining binds calls of user functions: the body is inlined
// (the plan shows no call), the statement records the functions it calls,
// and the errors are PostgreSQL's kinds.
func TestFunctionInlining(t *testing.T) {
	cat := testCatalog(t)
	inc := &catalog.Function{ID: cat.NextID(), Schema: "public", Name: "inc", ArgNames: []string{"x"},
		ArgTypes: []types.T{types.TInt32}, Returns: types.TInt32, Body: "SELECT x + 1", Volatility: "i"}
	self := &catalog.Function{ID: cat.NextID(), Schema: "public", Name: "self", ArgNames: []string{""},
		ArgTypes: []types.T{types.TInt32}, Returns: types.TInt32, Body: "SELECT self($1) + inc($1)", Volatility: "v"}
	cat.SetFunctions([]*catalog.Function{inc, self})

	bind := func(sql string) (*Binder, error) {
		t.Helper()
		stmts, err := parser.Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		b := New(cat, nil)
		_, err = b.Query(stmts[0].(*parser.Query))
		return b, err
	}
	if got := strings.TrimSpace(bindAndExplain(cat, "SELECT inc(id) FROM t")); got != "columns: inc integer\nProject ($0 + 1)\n  └─Scan public.t" {
		t.Errorf("plan:\n%s", got)
	}
	b, err := bind("SELECT inc(inc(id)) FROM t")
	if err != nil || len(b.Functions()) != 1 || b.Functions()[0] != inc.ID {
		t.Errorf("functions %v, %v", b.Functions(), err)
	}
	for sql, kind := range map[string]error{
		"SELECT inc(true)":       types.ErrUndefinedFunction,
		"SELECT inc(1, 2)":       types.ErrUndefinedFunction,
		"SELECT self(1)":         types.ErrStackDepth,
		"SELECT nope.inc(1)":     types.ErrInvalidSchemaName,
		"SELECT public.nope(1)":  types.ErrUndefinedFunction,
		"SELECT inc(id) FROM nx": types.ErrUndefinedTable,
	} {
		if _, err := bind(sql); !errors.Is(err, kind) {
			t.Errorf("%s: %v, want %v", sql, err, kind)
		}
	}
	// CREATE FUNCTION's check: the body's type against the declared one.
	bad := &catalog.Function{ID: 999, Schema: "public", Name: "bad", ArgTypes: []types.T{types.TInt32},
		ArgNames: []string{"x"}, Returns: types.TInt32, Body: "SELECT x > 1"}
	if err := New(cat, nil).CheckFunction(bad); !errors.Is(err, types.ErrInvalidFunctionDef) {
		t.Errorf("bad body: %v", err)
	}
	bad.Body = "SELECT 1 FROM t"
	if err := New(cat, nil).CheckFunction(bad); !errors.Is(err, types.ErrUnsupported) {
		t.Errorf("body with FROM: %v", err)
	}
}
