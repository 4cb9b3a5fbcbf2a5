package stream

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

// copySteps is what the st-copy connector's reader returns, in order: rows
// (ids) or, with truncate, a TRUNCATE; each with the offset after it,
// "rows copied/estimate/done" (the connector's Progress reads it).
type copyStep struct {
	ids      []int64
	truncate bool
	offset   string
}

var copyTest struct {
	sync.Mutex
	steps []copyStep
	rates []int64 // SetBackfillRate calls
}

func init() {
	connector.RegisterSource(connector.SourceConnector{Name: "st-copy", Parse: func(connector.SourceSpec) (connector.Source, error) {
		return copySource{}, nil
	}})
}

type copySource struct{}

func (copySource) Check(context.Context) error { return nil }
func (copySource) Enumerator(context.Context) (connector.SplitEnumerator, error) {
	return copyEnum{}, nil
}
func (copySource) Reader(context.Context, []connector.SplitOffset, connector.ReaderEnv) (connector.SplitReader, error) {
	return &copyReader{ready: make(chan struct{})}, nil
}
func (copySource) DefaultRate() int64 { return -1 }
func (copySource) TotalRows() int64   { return -1 }
func (copySource) ChunkRows() int     { return 100 }
func (copySource) Upsert() bool       { return true }
func (copySource) Progress(_ string, offset []byte) (rows, estimate int64, done bool) {
	var d string
	fmt.Sscanf(string(offset), "%d/%d/%s", &rows, &estimate, &d)
	return rows, estimate, d == "true"
}

type copyEnum struct{}

func (copyEnum) Splits(context.Context) ([]string, error) { return []string{"s"}, nil }
func (copyEnum) Bounds(_ context.Context, splits []string) (map[string]connector.SplitBounds, error) {
	return map[string]connector.SplitBounds{"s": {}}, nil
}
func (copyEnum) Close() error { return nil }

type copyReader struct {
	pos   int
	ready chan struct{}
}

func (r *copyReader) Read(dst *types.Chunk, limit int) (connector.ReadResult, error) {
	copyTest.Lock()
	defer copyTest.Unlock()
	if r.pos >= len(copyTest.steps) {
		return connector.ReadResult{}, nil
	}
	st := copyTest.steps[r.pos]
	r.pos++
	for _, id := range st.ids {
		dst.AppendRowOp(types.OpInsert, []types.Datum{types.DInt(id), types.DInt(0)})
	}
	return connector.ReadResult{Split: "s", Rows: len(st.ids), Offset: []byte(st.offset), Truncate: st.truncate}, nil
}
func (r *copyReader) Ready() <-chan struct{} { return r.ready }
func (r *copyReader) Close() error           { return nil }
func (r *copyReader) SetBackfillRate(n int64) {
	copyTest.Lock()
	defer copyTest.Unlock()
	copyTest.rates = append(copyTest.rates, n)
}

// opWriter records the writes and truncates, in order.
type opWriter struct {
	mu  sync.Mutex
	ops []string
}

func (w *opWriter) Write(_ context.Context, epoch uint64, c *types.Chunk, _ string) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for i := 0; i < c.Len(); i++ {
		ids = append(ids, fmt.Sprint(c.Cols[0].I64[i]))
	}
	w.ops = append(w.ops, fmt.Sprintf("e%d write %s", epoch, strings.Join(ids, ",")))
	return true, nil
}

func (w *opWriter) Truncate(_ context.Context, epoch uint64, _ func([]types.Datum) bool) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ops = append(w.ops, fmt.Sprintf("e%d truncate", epoch))
	return true, nil
}

func (w *opWriter) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ops...)
}

// TestConnectorSourceProgressRateTruncate: a connector.Progresser source's
// progress is read from its stored offsets at each barrier (not done until
// every split says so); the job's backfill rate reaches a BackfillRater
// reader (at open and by a SetRateLimit{Backfill} mutation) and not the
// source's own rate; a Truncate result reaches the writer in order with
// the rows around it, in the open epoch.
func TestConnectorSourceProgressRateTruncate(t *testing.T) {
	ctx := stCtx(t)
	copyTest.Lock()
	copyTest.steps = []copyStep{{ids: []int64{1, 2, 3}, offset: "3/10/false"}, {truncate: true, offset: "3/10/false"},
		{ids: []int64{4, 5}, offset: "5/10/true"}}
	copyTest.rates = nil
	copyTest.Unlock()
	rel := &catalog.Relation{ID: 60, Name: "c", Kind: catalog.KindTable, PK: []int{0},
		Columns: []catalog.Column{{Name: "id", Type: types.TInt64}, {Name: "v", Type: types.TInt32}}}
	rel.Connector = &catalog.Connector{RateLimit: -1, Props: map[string]string{"connector": "st-copy"}}
	n := &plan.StreamConnectorSource{Table: rel, State: plan.ConnectorSourceState(61), RateLimit: -1}
	var mu sync.Mutex
	var reports []BackfillReport
	report := func(r BackfillReport) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, r)
	}
	w := &opWriter{}
	ch := make(chan *Barrier, 1)
	actx := stActx(memkv.New())
	var asked atomic.Int32 // barriers the source asked for
	actx.RequestBarrier = func() { asked.Add(1) }
	e, closer, err := NewConnectorSource(actx, n, ch, w, report, nil, 42, SplitShare{})
	if err != nil {
		t.Fatal(err)
	}
	defer closer()
	type result struct {
		m   Message
		err error
	}
	msgs := make(chan result, 1)
	runCtx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	defer func() { cancel(); <-exited }()
	go func() {
		defer close(exited)
		for {
			m, err := e.Next(runCtx)
			select {
			case msgs <- result{m, err}:
			case <-runCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	barrier := func(epoch uint64, m Mutation) BackfillReport {
		t.Helper()
		b := &Barrier{Epoch: Epoch{Prev: epoch - 1, Curr: epoch}, Checkpoint: true, Mutation: m}
		ch <- b
		res := <-msgs
		if res.err != nil || res.m.Barrier != b {
			t.Fatalf("barrier %d: %v %v", epoch, res.m, res.err)
		}
		mu.Lock()
		defer mu.Unlock()
		return reports[len(reports)-1]
	}
	if r := barrier(1, nil); r.Done || r.Rows != 0 {
		t.Fatalf("progress before any row: %+v", r)
	}
	want := []string{"e1 write 1,2,3", "e1 truncate", "e1 write 4,5"}
	for deadline := time.Now().Add(10 * time.Second); len(w.list()) < len(want); {
		if time.Now().After(deadline) {
			t.Fatalf("the source wrote %v, want %v", w.list(), want)
		}
		time.Sleep(time.Millisecond)
	}
	if got := strings.Join(w.list(), "; "); got != strings.Join(want, "; ") {
		t.Fatalf("the source wrote %s, want %s", got, strings.Join(want, "; "))
	}
	// The copy's last rows are written: the source asks for the barrier that ends it (once),
	// rather than leave it to the interval.
	for deadline := time.Now().Add(10 * time.Second); asked.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the copy is written but the source asked for no barrier")
		}
		time.Sleep(time.Millisecond)
	}
	if r := barrier(2, &SetRateLimit{Actors: map[ActorID]bool{actx.ID: true}, RowsPerSecond: 7, Backfill: true}); !r.Done || r.Rows != 5 || r.Estimate != 10 {
		t.Fatalf("progress after the copy: %+v, want 5 rows of 10, done", r)
	}
	copyTest.Lock()
	rates := fmt.Sprint(copyTest.rates)
	copyTest.Unlock()
	if n := asked.Load(); n != 1 {
		t.Fatalf("the source asked for %d barriers, want 1", n)
	}
	if rates != "[42 7]" {
		t.Fatalf("the reader's backfill rates: %s, want [42 7]", rates)
	}
	if es := e.(*sourceExec); es.rate != -1 || es.backfillRate != 7 {
		t.Fatalf("source rate %d, backfill rate %d: want -1 and 7", es.rate, es.backfillRate)
	}
}
