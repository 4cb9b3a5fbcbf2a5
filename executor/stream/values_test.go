package stream

import (
	"context"
	"errors"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

func stValuesNode(rows int) *plan.StreamValues {
	n := &plan.StreamValues{Out: stFields(types.TInt64, types.TDate), Key: []int{0}}
	for i := range rows {
		n.Rows = append(n.Rows, []expr.Expr{
			expr.Literal(types.DInt(int64(i)), types.TInt64),
			expr.Literal(types.DString("2024-01-02"), types.TUnknown), // read as the column's date
		})
	}
	return n
}

// stValuesRun runs Values -> Materialize in one actor over kv for the
// barriers, returning the view's rows seen in the change stream.
func stValuesRun(t *testing.T, kv *memkv.Store, n *plan.StreamValues, barriers ...Message) *RowSet {
	t.Helper()
	ch := make(chan *Barrier, len(barriers))
	for _, b := range barriers {
		ch <- b.Barrier
	}
	actx := stActx(kv)
	v, err := NewValues(actx, n, ch)
	if err != nil {
		t.Fatal(err)
	}
	mv, err := NewMaterialize(actx, stMVNode(7, []int{0}, types.TInt64, types.TDate), v)
	if err != nil {
		t.Fatal(err)
	}
	set := NewRowSet([]int{0})
	if got := len(stDrive(t, mv, actx, set)); got != len(barriers) {
		t.Fatalf("%d barriers passed, want %d", got, len(barriers))
	}
	return set
}

func TestValues(t *testing.T) {
	kv := memkv.New()
	set := stValuesRun(t, kv, stValuesNode(3), stBarrier(1, 2), stBarrier(2, 3), stStop(3, 4, 1))
	want := "0 2024-01-02\n1 2024-01-02\n2 2024-01-02"
	if got := set.String(); got != want {
		t.Fatalf("stream: got\n%s\nwant\n%s", got, want)
	}
	if got := stTableRows(t, kv, stMVNode(7, []int{0}, types.TInt64, types.TDate).State()[0]); got != want {
		t.Fatalf("table: got\n%s\nwant\n%s", got, want)
	}
	// After a restart the rows are in the view already: not emitted again.
	set = stValuesRun(t, kv, stValuesNode(3), stBarrier(4, 5), stStop(5, 6, 1))
	if got := set.String(); got != "" {
		t.Fatalf("re-emitted after restart:\n%s", got)
	}
}

func TestValuesManyRows(t *testing.T) {
	set := stValuesRun(t, memkv.New(), stValuesNode(2500), stBarrier(1, 2), stStop(2, 3, 1))
	if got := len(set.rows); got != 2500 {
		t.Fatalf("%d rows, want 2500", got)
	}
}

func TestValuesStopsFirst(t *testing.T) {
	set := stValuesRun(t, memkv.New(), stValuesNode(3), stStop(1, 2, 1))
	if got := set.String(); got != "" {
		t.Fatalf("rows emitted by a job stopped at once:\n%s", got)
	}
}

func TestValuesCancel(t *testing.T) {
	v, err := NewValues(stActx(memkv.New()), stValuesNode(1), make(chan *Barrier))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	closed := make(chan *Barrier)
	close(closed)
	if v, err = NewValues(stActx(memkv.New()), stValuesNode(1), closed); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Next(stCtx(t)); err == nil {
		t.Fatal("a closed barrier channel was not reported")
	}
}
