package window

import (
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// rows builds a partition of (key, value) rows; "." is NULL.
func rows(t *testing.T, spec string) [][]types.Datum {
	t.Helper()
	var out [][]types.Datum
	for _, r := range strings.Fields(spec) {
		kv := strings.Split(r, ":")
		row := make([]types.Datum, 2)
		for i, s := range kv {
			if s == "." {
				row[i] = types.NullDatum
				continue
			}
			d, err := types.ParseText(types.TInt64, s)
			if err != nil {
				t.Fatal(err)
			}
			row[i] = d
		}
		out = append(out, row)
	}
	return out
}

func eval(t *testing.T, f plan.WindowFunc, part [][]types.Datum) (string, error) {
	t.Helper()
	fn, err := New(f, []types.T{types.TInt64, types.TInt64})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]types.Datum, len(part))
	if err := fn.Eval(part, out); err != nil {
		return "", err
	}
	parts := make([]string, len(out))
	for i, d := range out {
		if d.Null {
			parts[i] = "."
		} else {
			parts[i] = types.FormatText(f.Type, &d)
		}
	}
	return strings.Join(parts, " "), nil
}

func rangeBound(t *testing.T, kind plan.BoundKind, off int64, desc bool) plan.FrameBound {
	t.Helper()
	op := "+"
	if (kind == plan.OffsetPreceding) != desc {
		op = "-"
	}
	k := expr.Column(0, types.TInt64)
	target, err := expr.Call(op, []expr.Expr{k, expr.Literal(types.DInt(off), types.TInt64)})
	if err != nil {
		t.Fatal(err)
	}
	return plan.FrameBound{Kind: kind, Target: target, Key: k}
}

func TestFuncs(t *testing.T) {
	sum, err := expr.LookupAgg("sum", []types.T{types.TInt64}, false)
	if err != nil {
		t.Fatal(err)
	}
	asc := []plan.SortKey{{Col: 0}}
	desc := []plan.SortKey{{Col: 0, Desc: true, NullsFirst: true}}
	bound := func(k plan.BoundKind, off int64) plan.FrameBound { return plan.FrameBound{Kind: k, Offset: off} }
	part := "1:10 2:20 2:30 5:40 .:50" // ascending keys, NULL last
	for _, c := range []struct {
		name string
		f    plan.WindowFunc
		part string
		want string
	}{
		{"rank", plan.WindowFunc{Name: "rank", OrderBy: asc, Type: types.TInt64}, part, "1 2 2 4 5"},
		{"dense_rank", plan.WindowFunc{Name: "dense_rank", OrderBy: asc, Type: types.TInt64}, part, "1 2 2 3 4"},
		{"percent_rank", plan.WindowFunc{Name: "percent_rank", OrderBy: asc, Type: types.TFloat64}, part, "0 0.25 0.25 0.75 1"},
		{"cume_dist", plan.WindowFunc{Name: "cume_dist", OrderBy: asc, Type: types.TFloat64}, part, "0.2 0.6 0.6 0.8 1"},
		{"ntile 3 of 5", plan.WindowFunc{Name: "ntile", Args: []int{0}, Type: types.TInt32}, "3:0 3:0 3:0 3:0 3:0", "1 1 2 2 3"},
		{"ntile more buckets than rows", plan.WindowFunc{Name: "ntile", Args: []int{0}, Type: types.TInt32}, "4:0 4:0", "1 2"},
		{"lag 2", plan.WindowFunc{Name: "lag", Args: []int{1, 0}, Type: types.TInt64}, "2:1 2:2 2:3", ". . 1"},
		{"lead by row value", plan.WindowFunc{Name: "lead", Args: []int{1, 0}, Type: types.TInt64}, "1:1 0:2 .:3", "2 2 ."},
		{"default frame peers", plan.WindowFunc{Name: "sum", Agg: sum, Args: []int{1}, OrderBy: asc, Type: sum.Result}, part, "10 60 60 100 150"},
		{"rows 1 preceding", plan.WindowFunc{Name: "sum", Agg: sum, Args: []int{1}, OrderBy: asc, Type: sum.Result,
			Frame: plan.Frame{Mode: plan.FrameRows, Start: bound(plan.OffsetPreceding, 1), End: bound(plan.CurrentRow, 0)}}, part, "10 30 50 70 90"},
		{"rows empty frame", plan.WindowFunc{Name: "sum", Agg: sum, Args: []int{1}, OrderBy: asc, Type: sum.Result,
			Frame: plan.Frame{Mode: plan.FrameRows, Start: bound(plan.OffsetFollowing, 3), End: bound(plan.OffsetFollowing, 4)}}, part, "90 50 . . ."},
		{"groups 1 preceding", plan.WindowFunc{Name: "sum", Agg: sum, Args: []int{1}, OrderBy: asc, Type: sum.Result,
			Frame: plan.Frame{Mode: plan.FrameGroups, Start: bound(plan.OffsetPreceding, 1), End: bound(plan.CurrentRow, 0)}}, part, "10 60 60 90 90"},
		{"range 1 preceding..1 following, NULL peers", plan.WindowFunc{Name: "sum", Agg: sum, Args: []int{1}, OrderBy: asc, Type: sum.Result,
			Frame: plan.Frame{Mode: plan.FrameRange, Start: rangeBound(t, plan.OffsetPreceding, 1, false), End: rangeBound(t, plan.OffsetFollowing, 1, false)}}, part, "60 60 60 40 50"},
		{"range descending, NULLs first", plan.WindowFunc{Name: "sum", Agg: sum, Args: []int{1}, OrderBy: desc, Type: sum.Result,
			Frame: plan.Frame{Mode: plan.FrameRange, Start: bound(plan.CurrentRow, 0), End: rangeBound(t, plan.OffsetFollowing, 3, true)}},
			".:50 5:40 2:20 2:30 1:10", "50 90 60 60 10"},
		{"first and last over a sliding frame", plan.WindowFunc{Name: "last_value", Args: []int{1}, OrderBy: asc, Type: types.TInt64,
			Frame: plan.Frame{Mode: plan.FrameRows, Start: bound(plan.UnboundedPreceding, 0), End: bound(plan.OffsetFollowing, 1)}}, part, "20 30 40 50 50"},
		{"nth_value, peers in the frame", plan.WindowFunc{Name: "nth_value", Args: []int{1, 0}, OrderBy: asc, Type: types.TInt64}, "2:10 2:20 2:30", "20 20 20"},
		{"nth_value", plan.WindowFunc{Name: "nth_value", Args: []int{1, 0}, OrderBy: []plan.SortKey{{Col: 1}}, Type: types.TInt64}, "2:10 2:20 2:30", ". 20 20"},
	} {
		got, err := eval(t, c.f, rows(t, c.part))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestFuncErrors(t *testing.T) {
	for _, c := range []struct {
		f    plan.WindowFunc
		want error
	}{
		{plan.WindowFunc{Name: "ntile", Args: []int{0}, Type: types.TInt32}, types.ErrNtileArgument},
		{plan.WindowFunc{Name: "nth_value", Args: []int{1, 0}, Type: types.TInt64}, types.ErrNthValueArgument},
	} {
		_, err := eval(t, c.f, rows(t, "0:1 0:2"))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.f.Name, err, c.want)
		}
	}
	if _, err := New(plan.WindowFunc{Name: "nope"}, nil); !errors.Is(err, types.ErrUnsupported) {
		t.Errorf("unknown function: %v", err)
	}
}
