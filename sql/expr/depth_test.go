package expr

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestDepthLimit: the constructors refuse trees deeper than
// types.MaxExprDepth with ErrStackDepth, and a tree at the limit evaluates.
func TestDepthLimit(t *testing.T) {
	var e Expr = Column(0, types.TInt64)
	var err error
	for i := 1; i < types.MaxExprDepth; i++ {
		if e, err = Call("+", []Expr{e, Literal(types.DInt(1), types.TInt64)}); err != nil {
			t.Fatalf("depth %d: %v", i+1, err)
		}
	}
	if d := Depth(e); d != types.MaxExprDepth {
		t.Fatalf("Depth = %d, want %d", d, types.MaxExprDepth)
	}
	in := types.NewChunk([]types.T{types.TInt64}, 1)
	in.AppendRow([]types.Datum{types.DInt(5)})
	out := types.NewVector(types.TInt64, 1)
	if err := e.Eval(nil, in, out); err != nil || out.I64[0] != 5+types.MaxExprDepth-1 {
		t.Fatalf("Eval: %v %v", out.I64, err)
	}
	one := Literal(types.DInt(1), types.TInt64)
	for name, build := range map[string]func() (Expr, error){
		"call": func() (Expr, error) { return Call("+", []Expr{e, one}) },
		"cast": func() (Expr, error) { return Cast(e, types.TVarchar) },
		"case": func() (Expr, error) {
			return Case(nil, []Expr{Literal(types.DBool(true), types.TBool)}, []Expr{e}, nil)
		},
		"quantified": func() (Expr, error) { return NewQuantified(e, "=", false, 0, types.TInt64) },
	} {
		if _, err := build(); !errors.Is(err, types.ErrStackDepth) {
			t.Errorf("%s past the limit: got %v, want ErrStackDepth", name, err)
		}
	}
}
