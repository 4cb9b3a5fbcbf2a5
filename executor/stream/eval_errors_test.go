package stream

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

// eventRecorder is a SinkMonitor keeping the events.
type eventRecorder struct {
	mu     sync.Mutex
	events []SinkEvent
}

func (r *eventRecorder) Register(string, ActorID, func() SinkLogStats) func() { return func() {} }
func (r *eventRecorder) Event(e SinkEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// TestExprErrorsBecomeNull: a projection that divides by zero on some rows
// yields NULL for them (the others keep their values), a filter whose
// condition fails drops the row, and the job goes on; the errors are
// reported at most once per second with a count.
func TestExprErrorsBecomeNull(t *testing.T) {
	i64 := types.TInt64
	chunk := `
		 I I
		 + 1 5
		 + 2 0
		 + 3 2
		 + 4 0`
	div := stCall(t, "/", expr.Literal(types.DInt(10), i64), expr.Column(1, i64))
	rec := &eventRecorder{}
	clock := time.Unix(1000, 0)
	errs := NewEvalErrors(7, rec, nil)
	errs.now = func() time.Time { return clock }
	actx := stActx(memkv.New())
	actx.EvalErrors = errs

	src := NewMockSource([]types.T{i64, i64}, ChunkMsg(stChunk(t, chunk)), ChunkMsg(stChunk(t, chunk)))
	p, err := NewProject(actx, &plan.StreamProject{Exprs: []expr.Expr{expr.Column(0, i64), div}, Out: stFields(i64, i64), Key: []int{0}}, src)
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := FormatChunk(m.Chunk), "+ 1 2\n+ 2 .\n+ 3 5\n+ 4 .\n"; got != want {
		t.Fatalf("project:\n%s\nwant\n%s", got, want)
	}
	// The second chunk's errors within the same second are counted, not reported.
	if _, err := p.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.events) != 1 || rec.events[0].Type != EventExprError || rec.events[0].Job != 7 ||
		!strings.Contains(rec.events[0].Err, "division by zero (2 rows") {
		t.Fatalf("events %+v, want one division by zero for 2 rows", rec.events)
	}

	src = NewMockSource([]types.T{i64, i64}, ChunkMsg(stChunk(t, chunk)))
	cond := stCall(t, ">", div, expr.Literal(types.DInt(2), i64))
	f, err := NewFilter(actx, &plan.StreamFilter{Cond: cond}, src)
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Second)
	if m, err = f.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := FormatChunk(m.Chunk), "+ 3 2\n"; got != want {
		t.Fatalf("filter:\n%s\nwant\n%s", got, want)
	}
	// The next report carries the rows counted since the last one (2 + 2).
	if len(rec.events) != 2 || !strings.Contains(rec.events[1].Err, "(4 rows") {
		t.Fatalf("events %+v, want a second report for 4 rows", rec.events)
	}
}
