package coordinator

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	tbl = &catalog.Relation{ID: 100, Schema: "public", Name: "t", Kind: catalog.KindTable,
		Columns: []catalog.Column{{Name: "id", Type: types.TInt64}, {Name: "v", Type: types.TInt64}}, PK: []int{0}}
	mv = &catalog.Relation{ID: 200, Schema: "public", Name: "mv", Kind: catalog.KindMaterializedView,
		Columns: []catalog.Column{{Name: "id", Type: types.TInt64}, {Name: "v", Type: types.TInt64}}, PK: []int{0}}
)

func fields(r *catalog.Relation) []plan.Field {
	out := make([]plan.Field, len(r.Columns))
	for i, c := range r.Columns {
		out[i] = plan.Field{Name: c.Name, Type: c.Type}
	}
	return out
}

// copyJob is "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t" planned by hand.
func copyJob() plan.StreamNode {
	src := &plan.StreamSource{Relation: tbl, Out: fields(tbl)}
	ex := &plan.StreamExchange{Input: src, Dist: plan.DistHash, Keys: []int{0}}
	m := &plan.StreamMaterialize{Input: ex, Relation: mv, PK: []int{0}}
	m.SetState(m.StateLayouts())
	return m
}

// insert runs INSERT INTO t VALUES (id, v)... through the coordinator's DML path.
func insert(ctx context.Context, c *Coordinator, rows ...[2]int64) error {
	ins := insertStmt(rows...)
	return c.DML(ctx, func(tables *batch.TableSet, snapshot uint64) error {
		return runInsert(ctx, c, ins, tables, snapshot)
	})
}

// insertStmt is the INSERT of rows (id, v) into tbl.
func insertStmt(rows ...[2]int64) *plan.Insert {
	vals := make([][]expr.Expr, len(rows))
	for i, r := range rows {
		vals[i] = []expr.Expr{expr.Literal(types.DInt(r[0]), types.TInt64), expr.Literal(types.DInt(r[1]), types.TInt64)}
	}
	return &plan.Insert{Table: tbl, Input: &plan.Values{Rows: vals, Out: fields(tbl)}}
}

// runInsert runs ins as a statement's work in c.DML: on tables, reading at snapshot.
func runInsert(ctx context.Context, c *Coordinator, ins *plan.Insert, tables *batch.TableSet, snapshot uint64) error {
	env := &batch.Env{Store: c.kv, Epoch: snapshot, Tables: tables}
	x, _, err := batch.BuildDML(env, ins, nil, 0)
	if err != nil {
		return err
	}
	defer x.Close()
	for {
		if _, err := x.Next(ctx); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// mvRows reads the MV's rows at the committed epoch.
func mvRows(t *testing.T, c *Coordinator) map[int64]int64 { return relRows(t, c, mv) }

func TestCoordinatorMaintainsJobAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := memkv.New()
	defer kv.Close()
	barriers := NewBarrierLog() // shared by both coordinators, as recovery does
	c := New(kv, Config{BarrierInterval: 50 * time.Millisecond, Parallelism: 2, Barriers: barriers})
	c.AddTable(tbl.ID, tbl.ColumnTypes())
	c.Start()
	// A job added while running attaches with a barrier and sees later DML only.
	if err := insert(ctx, c, [2]int64{1, 10}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddJob(ctx, mv.ID, copyJob(), JobOptions{Parallelism: 2, BackfillRate: -1}); err != nil {
		t.Fatal(err)
	}
	if err := insert(ctx, c, [2]int64{2, 20}, [2]int64{3, 30}); err != nil {
		t.Fatal(err)
	}
	if got := mvRows(t, c); len(got) != 2 || got[2] != 20 || got[3] != 30 {
		t.Fatalf("after DML: %v", got)
	}
	// A duplicate key fails the statement and leaves nothing behind.
	if err := insert(ctx, c, [2]int64{4, 40}, [2]int64{2, 99}); !errors.Is(err, types.ErrUniqueViolation) {
		t.Fatalf("duplicate insert: %v", err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mvRows(t, c); len(got) != 2 {
		t.Fatalf("a failed statement leaked rows: %v", got)
	}
	c.Stop()
	before := len(c.BarrierHistory())
	checkBarrierHistory(t, c.BarrierHistory(), kv.CommittedEpoch())

	// Recovery: a new coordinator over the same store resumes the job.
	c2 := New(kv, Config{BarrierInterval: 50 * time.Millisecond, Parallelism: 2, Barriers: barriers})
	c2.AddTable(tbl.ID, tbl.ColumnTypes())
	if err := c2.AddJob(ctx, mv.ID, copyJob(), JobOptions{Parallelism: 2, BackfillRate: -1}); err != nil {
		t.Fatal(err)
	}
	c2.Start()
	defer c2.Stop()
	if err := insert(ctx, c2, [2]int64{5, 50}); err != nil {
		t.Fatal(err)
	}
	if got := mvRows(t, c2); len(got) != 3 || got[5] != 50 {
		t.Fatalf("after restart: %v", got)
	}
	if err := c2.DropJob(ctx, mv.ID); err != nil {
		t.Fatal(err)
	}
	if err := insert(ctx, c2, [2]int64{6, 60}); err != nil {
		t.Fatal(err)
	}
	if got := mvRows(t, c2); len(got) != 3 {
		t.Fatalf("a dropped job still runs: %v", got)
	}
	h := c2.BarrierHistory()
	if len(h) <= before {
		t.Fatalf("the second coordinator's barriers were not added to the shared history: %d, then %d", before, len(h))
	}
	checkBarrierHistory(t, h, c2.CommittedEpoch())
}

// checkBarrierHistory checks that h is in epoch order, holds the committed
// epoch, and that every latency is its commit time minus its injection time.
func checkBarrierHistory(t *testing.T, h []BarrierStat, committed uint64) {
	t.Helper()
	if len(h) == 0 {
		t.Fatal("no barrier history")
	}
	found := false
	for i, s := range h {
		if i > 0 && s.Epoch <= h[i-1].Epoch {
			t.Fatalf("history not in epoch order at %d: %d after %d", i, s.Epoch, h[i-1].Epoch)
		}
		if s.Latency < 0 || s.Latency != s.Committed.Sub(s.Injected) {
			t.Fatalf("stat %+v: latency is not commit - inject", s)
		}
		found = found || s.Epoch == committed
	}
	if !found {
		t.Fatalf("committed epoch %d is not in the history (last %+v)", committed, h[len(h)-1])
	}
}

// TestBarrierLogRing checks the log keeps only the newest barrierHistoryLen
// stats, oldest first, and hands out copies.
func TestBarrierLogRing(t *testing.T) {
	l := NewBarrierLog()
	if got := l.Stats(); len(got) != 0 {
		t.Fatalf("empty log: %v", got)
	}
	const n = barrierHistoryLen + 100
	var watched uint64 // Watch sees every record, past the ring's wrap
	l.Watch(func(s BarrierStat) { watched += s.Epoch })
	for e := uint64(1); e <= n; e++ {
		l.record(BarrierStat{Epoch: e, Latency: time.Duration(e)})
	}
	if watched != n*(n+1)/2 {
		t.Fatalf("Watch saw epochs summing to %d, want %d", watched, uint64(n*(n+1)/2))
	}
	got := l.Stats()
	if len(got) != barrierHistoryLen || got[0].Epoch != n-barrierHistoryLen+1 || got[len(got)-1].Epoch != n {
		t.Fatalf("ring after %d records: %d stats, epochs %d..%d", n, len(got), got[0].Epoch, got[len(got)-1].Epoch)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Epoch != got[i-1].Epoch+1 {
			t.Fatalf("out of order at %d: %d after %d", i, got[i].Epoch, got[i-1].Epoch)
		}
	}
	got[0].Epoch = 0
	if l.Stats()[0].Epoch == 0 {
		t.Fatal("Stats returned the ring itself, not a copy")
	}
}

// TestAdaptiveBackfillRate checks the rate control: above the target barrier
// latency the rate halves, below it the rate grows; finished jobs are left alone.
func TestAdaptiveBackfillRate(t *testing.T) {
	kv := memkv.New()
	defer kv.Close()
	c := New(kv, Config{})
	j := &job{id: 7, adaptive: true, target: 100 * time.Millisecond, rate: 40_000,
		backfills: map[stream.ActorID]*backfill{3: {}}}
	c.mu.jobs[7] = j
	lastRate := func() int64 {
		m := c.mu.pending[len(c.mu.pending)-1].(*stream.SetRateLimit)
		if !m.Actors[3] {
			t.Fatalf("mutation does not reach the backfill actor: %+v", m)
		}
		return m.RowsPerSecond
	}
	c.mu.Lock()
	c.steerBackfillsLocked(300 * time.Millisecond)
	if r := lastRate(); r != 20_000 {
		t.Fatalf("over target: rate %d, want 20000", r)
	}
	c.steerBackfillsLocked(10 * time.Millisecond)
	if r := lastRate(); r != 20_000+5_000+5_000 {
		t.Fatalf("under target: rate %d, want 30000", r)
	}
	j.backfills[3].last.Done = true
	n := len(c.mu.pending)
	c.steerBackfillsLocked(time.Second)
	if len(c.mu.pending) != n {
		t.Fatalf("a finished backfill was steered")
	}
	c.mu.Unlock()
}

// The planner names a CDC table's siblings by catalog.OptSiblings, which
// the connector reads as connector.OptSiblings.
func TestSiblingsOptionAgrees(t *testing.T) {
	if catalog.OptSiblings != connector.OptSiblings {
		t.Fatalf("catalog.OptSiblings %q != connector.OptSiblings %q", catalog.OptSiblings, connector.OptSiblings)
	}
}

// A sink's log reader starts writing into its table when the job is built,
// which during recovery is before Start. Those writes must wait for Start:
// sent earlier they filled the table's channel with c.mu held, and the next
// AddJob of the recovery waited forever (TestCrashLoop hung in CI so).
func TestSinkWritesBeforeStartWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := memkv.New()
	defer kv.Close()
	c := New(kv, Config{BarrierInterval: 20 * time.Millisecond, Parallelism: 2})
	c.AddTable(tbl.ID, tbl.ColumnTypes())
	write := func(ctx context.Context, i int) error {
		rows := types.NewChunk(tbl.ColumnTypes(), 1)
		rows.AppendRow([]types.Datum{types.DInt(int64(i)), types.DInt(int64(10 * i))})
		_, err := c.WriteSinkRows(ctx, tbl, rows, new(storage.Batch))
		return err
	}
	// Before Start a write waits (here until its context ends) and holds nothing.
	early, cancelEarly := context.WithTimeout(ctx, 50*time.Millisecond)
	err := write(early, 0)
	cancelEarly()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a sink write before Start returned %v, want it to wait", err)
	}
	const writes = 3 * stream.ChannelCapacity
	done := make(chan error, 1)
	go func() {
		for i := range writes {
			if err := write(ctx, i); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := c.AddJob(ctx, mv.ID, copyJob(), JobOptions{Parallelism: 2, BackfillRate: -1}); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer c.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mvRows(t, c); len(got) != writes || got[writes-1] != 10*(writes-1) {
		t.Fatalf("the view has %d rows, want %d: %v", len(got), writes, got)
	}
}

// TestWriterDrivesItsEpoch: a lone statement commits its epoch on its own
// goroutine (no barrier loop hand-off); canceled while an actor still holds
// the barrier, it returns at once and the round goes on without it: the
// epoch commits with its row when the actor reports, and Stop waits for it.
func TestWriterDrivesItsEpoch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := memkv.New()
	defer kv.Close()
	barriers := NewBarrierLog()
	c := New(kv, Config{BarrierInterval: time.Hour, Parallelism: 1, Barriers: barriers})
	c.AddTable(tbl.ID, tbl.ColumnTypes())
	// A stand-in actor that holds each barrier until told to report it.
	got := make(chan *stream.Barrier)
	release := make(chan struct{})
	c.mu.Lock()
	slow := c.newActorIDLocked()
	c.mu.actors[slow] = &running{}
	c.mu.roots[slow] = &root{barriers: got}
	c.mu.Unlock()
	held := make(chan *stream.Barrier, 1)
	var hold atomic.Bool
	go func() {
		for b := range got {
			if hold.CompareAndSwap(true, false) {
				held <- b
				<-release
			}
			c.report(stream.Collected{Actor: slow, Barrier: b})
		}
	}()
	c.Start()
	defer func() {
		c.Stop()
		close(got)
	}()

	if err := insert(ctx, c, [2]int64{1, 10}); err != nil {
		t.Fatal(err)
	}
	stats := barriers.Stats()
	if len(stats) == 0 || !stats[len(stats)-1].ByWriter {
		t.Fatalf("the lone INSERT's epoch was not committed by its statement: %+v", stats)
	}

	hold.Store(true)
	sctx, scancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- insert(sctx, c, [2]int64{2, 20}) }()
	var b *stream.Barrier
	select {
	case b = <-held:
	case <-ctx.Done():
		t.Fatal("the second INSERT's barrier never reached the actor")
	}
	scancel()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "canceling statement") {
			t.Fatalf("canceled INSERT: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("a canceled INSERT waited for its epoch's actors")
	}
	if c.CommittedEpoch() >= b.Epoch.Prev {
		t.Fatalf("epoch %d committed before its actor reported", b.Epoch.Prev)
	}
	close(release)
	if err := c.WaitCommitted(ctx, b.Epoch.Prev); err != nil {
		t.Fatal(err)
	}
	if got := relRows(t, c, tbl); len(got) != 2 || got[2] != 20 {
		t.Fatalf("rows after the canceled INSERT's epoch committed: %v", got)
	}
}

// TestIdleTableSourceSkipsBarriers: a table's DML source that feeds no job
// gets neither the table's change chunks nor the barriers of epochs without
// a mutation, so a lone writer's commit waits for no actor; once a job reads
// the table (AddOutputs) it gets every chunk and barrier, and after the job
// is gone (RemoveOutputs) none again.
func TestIdleTableSourceSkipsBarriers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := memkv.New()
	defer kv.Close()
	c := New(kv, Config{BarrierInterval: time.Hour, Parallelism: 1})
	// A stand-in for t's DML source that counts the chunks and barriers it gets.
	ch := make(chan stream.Message, stream.ChannelCapacity)
	var barriers, chunks atomic.Int64
	c.mu.Lock()
	src := c.newActorIDLocked()
	c.mu.actors[src] = &running{}
	c.mu.roots[src] = &root{msgs: ch, table: true}
	c.mu.sources[tbl.ID] = src
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ch {
			if m.Chunk != nil {
				chunks.Add(1)
			}
			if m.Barrier != nil {
				barriers.Add(1)
				c.report(stream.Collected{Actor: src, Barrier: m.Barrier})
			}
		}
	}()
	c.Start()
	defer func() {
		c.Stop()
		close(ch)
		<-done
	}()
	step := func(name string, wantBarriers, wantChunks int64, before func()) {
		t.Helper()
		b, n := barriers.Load(), chunks.Load()
		if before != nil {
			before()
		}
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := barriers.Load() - b; got != wantBarriers {
			t.Fatalf("%s: the source got %d barriers, want %d", name, got, wantBarriers)
		}
		if got := chunks.Load() - n; got != wantChunks {
			t.Fatalf("%s: the source got %d chunks, want %d", name, got, wantChunks)
		}
	}
	mutate := func(m stream.Mutation) func() {
		return func() {
			c.mu.Lock()
			c.mu.pending = append(c.mu.pending, m)
			c.mu.Unlock()
		}
	}
	write := func(k int64) func() {
		return func() {
			if err := insert(ctx, c, [2]int64{k, 10}); err != nil {
				t.Fatal(err)
			}
		}
	}
	step("nothing written", 0, 0, nil)
	step("an INSERT with no job reading the table", 0, 0, write(1))
	out := stream.NewOutput(1)
	step("a job attaches", 1, 0, mutate(&stream.AddOutputs{Outputs: map[stream.ActorID][]*stream.Output{src: {out}}}))
	step("a job reads the table", 1, 0, nil)
	step("an INSERT while a job reads the table (its epoch, then the flush)", 2, 1, write(2))
	step("the job detaches", 1, 0, mutate(&stream.RemoveOutputs{Outputs: map[stream.ActorID][]stream.OutputID{src: {out.ID}}}))
	step("no job again", 0, 0, nil)
	step("an INSERT after the job is gone", 0, 0, write(3))
}
