package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memory"
	"github.com/tributary/tributary/storage/state"
)

// Config holds the coordinator's system parameters.
type Config struct {
	// BarrierInterval is how often a barrier is injected (barrier_interval_ms); default 1s.
	BarrierInterval time.Duration
	// Parallelism is the number of actors of a hash-distributed fragment; default 2.
	Parallelism int
	// CacheRows bounds each stateful executor's in-memory rows (0: the executor default).
	CacheRows int
	// Memory is the byte budget the stateful executors' caches share (nil:
	// bounded by CacheRows only).
	Memory *memory.Pool
	// SpillRows is how many rows a DML statement writes before they are
	// staged into the store rather than held in memory (0: DefaultSpillRows).
	SpillRows int
	Logger    *slog.Logger
	// OnFailure is called (once, on its own goroutine) when an epoch fails: the
	// owner then stops this coordinator and recovers with a new one.
	OnFailure func(c *Coordinator, err error)
	// Barriers records every committed epoch's barrier latency (nil: a new
	// log); pass the failed coordinator's log to its replacement to keep it.
	Barriers *BarrierLog
	// Sinks collects decoupled sinks' log store states and failures (nil: a
	// new one); pass the failed coordinator's to its replacement.
	Sinks *SinkLog
	// NoStats turns off the per-actor and per-operator counters (rows,
	// busy time, cache hits) that /metrics, the dashboard and EXPLAIN
	// ANALYZE read; they then show none.
	NoStats bool
}

// ErrStopped is returned once the coordinator has stopped.
var ErrStopped = errors.New("coordinator stopped")

// ErrRecovering is returned, before doing anything, by a coordinator whose
// epoch failed: its owner is replacing it; retry on the new one.
var ErrRecovering = errors.New("the streaming engine is recovering from a failure")

// Coordinator drives barriers and commits epochs.
type Coordinator struct {
	kv  storage.KV
	cfg Config
	// firstEpoch is the first epoch this coordinator opens: its commit drops
	// whatever a failed predecessor staged and never committed (KV.Stage).
	firstEpoch uint64

	wake     chan struct{} // a barrier is wanted now
	interval atomic.Int64  // barrier interval in ns, changed by SetBarrierInterval
	// foreground is when (unix ns) DML or a connector source last wrote rows:
	// backfills hold back harder while someone waits for commits.
	foreground atomic.Int64
	// flushWaits counts the FLUSHes waiting for sinks into tables to write
	// their entries: paced ones hurry meanwhile.
	flushWaits atomic.Int32
	recent     []uint64 // recently committed epochs, oldest first (barrierMu's holder only)
	// barrierMu is held by whoever runs barrier(): the barrier loop, or a
	// statement that commits its own epoch (driveEpoch). Barriers never
	// overlap.
	barrierMu sync.Mutex
	failedCh  chan struct{} // closed when an actor fails (until recovery)
	failOnce  *sync.Once
	stop      chan struct{}
	done      chan struct{}
	// startedCh is closed by Start: writers from outside the barrier loop
	// (a sink's log reader) wait for it, since the actors they feed run only
	// from then on.
	startedCh chan struct{}
	runCtx    context.Context
	cancel    context.CancelFunc
	actors    sync.WaitGroup

	reports struct {
		sync.Mutex
		list   []stream.Collected
		signal chan struct{}
	}

	mu struct {
		sync.Mutex
		epoch uint64        // the open epoch: DML and DDL writes belong to it
		batch storage.Batch // DML/DDL writes of the open epoch
		spare storage.Batch // an empty batch with memory, the next epoch's (inject)
		// stagedRows counts the writes DML staged into the store at the
		// open epoch (stageLocked); reset when the epoch closes.
		stagedRows int
		tables     *batch.TableSet
		roots      map[stream.ActorID]*root  // barrier entry points (DML and values sources)
		sources    map[uint32]stream.ActorID // table id -> its DML source actor
		// fresh lists connector tables created by this coordinator that no
		// DML has written since: their generated keys cannot exist yet, so
		// the source writes them without a lookup.
		fresh     map[uint32]bool
		outputs   map[uint32][]stream.ActorID // relation id -> actors whose output is its change stream
		actors    map[stream.ActorID]*running
		jobs      map[uint32]*job
		pending   []stream.Mutation
		starting  []*running // actors to start with the next barrier
		nextActor stream.ActorID
		nextOut   stream.OutputID
		failed    error // set when an actor failed; cleared by recovery
		started   bool
		stopped   bool
	}
	progress struct {
		sync.Mutex
		cond *sync.Cond
	}
	committed struct {
		sync.Mutex
		epoch uint64
		cond  *sync.Cond
		err   error // the last epoch's failure, for waiters of it
		errAt uint64
	}
}

// running is one live actor.
type running struct {
	actor *stream.Actor
	job   uint32 // 0 for table sources
}

// New returns a coordinator over kv; Start begins injecting barriers.
func New(kv storage.KV, cfg Config) *Coordinator {
	if cfg.BarrierInterval <= 0 {
		cfg.BarrierInterval = time.Second
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Barriers == nil {
		cfg.Barriers = NewBarrierLog()
	}
	if cfg.Sinks == nil {
		cfg.Sinks = NewSinkLog()
	}
	c := &Coordinator{kv: kv, cfg: cfg, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), startedCh: make(chan struct{}),
		failedCh: make(chan struct{}), failOnce: new(sync.Once)}
	c.runCtx, c.cancel = context.WithCancel(context.Background())
	c.reports.signal = make(chan struct{}, 1)
	c.mu.epoch = storage.NextEpoch(kv.MaxVersion())
	c.firstEpoch = c.mu.epoch
	c.mu.tables = batch.NewTableSet(kv)
	// Only rows that some job reads are copied into change chunks: a table
	// without a job would drop them (root.sendChunk). The set is used with
	// c.mu held, which the function needs.
	c.mu.tables.CaptureChangesFor(func(id uint32) bool {
		src, ok := c.mu.sources[id]
		return ok && c.mu.roots[src] != nil && c.mu.roots[src].reads()
	})
	c.mu.roots = map[stream.ActorID]*root{}
	c.mu.sources = map[uint32]stream.ActorID{}
	c.mu.fresh = map[uint32]bool{}
	c.mu.outputs = map[uint32][]stream.ActorID{}
	c.mu.actors = map[stream.ActorID]*running{}
	c.mu.jobs = map[uint32]*job{}
	c.committed.cond = sync.NewCond(&c.committed.Mutex)
	c.progress.cond = sync.NewCond(&c.progress.Mutex)
	c.committed.epoch = kv.CommittedEpoch()
	return c
}

// CommittedEpoch is the snapshot readers use.
func (c *Coordinator) CommittedEpoch() uint64 { return c.kv.CommittedEpoch() }

// Start launches the actors registered so far and the barrier loop.
func (c *Coordinator) Start() {
	c.mu.Lock()
	for _, r := range c.mu.starting {
		c.launchLocked(r)
	}
	c.mu.starting = nil
	c.mu.started = true
	c.mu.Unlock()
	close(c.startedCh)
	go c.loop()
}

// Stop ends the barrier loop and every actor. Uncommitted work is dropped.
func (c *Coordinator) Stop() {
	c.mu.Lock()
	if c.mu.stopped {
		c.mu.Unlock()
		return
	}
	c.mu.stopped = true
	started := c.mu.started
	c.mu.Unlock()
	close(c.stop)
	if started {
		<-c.done // the loop runs only once started
	}
	// A statement driving its own epoch finishes it (or gives up on c.stop)
	// before the owner may close the store; none starts after (stopped).
	c.barrierMu.Lock()
	c.barrierMu.Unlock() //nolint:staticcheck // an empty critical section: waits for the holder
	c.cancel()
	c.actors.Wait()
	// Actors added but never launched return their caches' memory.
	c.mu.Lock()
	for _, r := range c.mu.starting {
		r.actor.Ctx.Release()
	}
	c.mu.starting = nil
	c.mu.Unlock()
	c.committed.Lock()
	c.committed.err = ErrStopped
	c.committed.errAt = ^uint64(0)
	c.committed.cond.Broadcast()
	c.committed.Unlock()
	c.progress.cond.Broadcast()
}

func (c *Coordinator) launchLocked(r *running) {
	c.actors.Add(1)
	go func() {
		defer c.actors.Done()
		// CPU profiles attribute the actor's samples to its job
		// (go tool pprof -tagfocus job=<id>).
		pprof.SetGoroutineLabels(pprof.WithLabels(c.runCtx, pprof.Labels("job", strconv.FormatUint(uint64(r.job), 10))))
		err := r.actor.Run(c.runCtx)
		if err != nil && c.runCtx.Err() == nil {
			c.cfg.Logger.Error("actor failed", "actor", r.actor.Ctx.ID, "job", r.job, "err", err)
			return
		}
		c.cfg.Logger.Debug("actor ended", "actor", r.actor.Ctx.ID, "job", r.job)
	}()
}

// report is every actor's Report: it never blocks.
func (c *Coordinator) report(col stream.Collected) {
	if col.Err != nil {
		c.failOnce.Do(func() { close(c.failedCh) })
	}
	c.reports.Lock()
	c.reports.list = append(c.reports.list, col)
	c.reports.Unlock()
	select {
	case c.reports.signal <- struct{}{}:
	default:
	}
}

// SetBarrierInterval changes the barrier interval online (ALTER SYSTEM SET barrier_interval_ms).
func (c *Coordinator) SetBarrierInterval(d time.Duration) {
	c.interval.Store(int64(d))
	c.RequestBarrier()
}

// RequestBarrier asks for a barrier as soon as possible (DML, FLUSH, DDL).
func (c *Coordinator) RequestBarrier() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Coordinator) loop() {
	defer close(c.done)
	ticker := time.NewTicker(c.cfg.BarrierInterval)
	defer ticker.Stop()
	interval := c.cfg.BarrierInterval
	for {
		select {
		case <-c.stop:
			return
		case <-ticker.C:
		case <-c.wake:
		}
		if d := time.Duration(c.interval.Load()); d > 0 && d != interval {
			interval = d
			ticker.Reset(d)
		}
		c.mu.Lock()
		failed := c.mu.failed != nil
		c.mu.Unlock()
		if failed {
			continue // the owner recovers with a new coordinator
		}
		c.barrierMu.Lock()
		err := c.barrier()
		c.barrierMu.Unlock()
		if err != nil {
			if errors.Is(err, ErrStopped) {
				return
			}
			c.cfg.Logger.Error("epoch failed", "err", err)
		}
	}
}

// commitEpoch commits the open epoch, which the caller wrote into, and waits
// for it: on the caller's goroutine when no barrier is in flight
// (driveEpoch), else through the barrier loop.
func (c *Coordinator) commitEpoch(ctx context.Context, epoch uint64) error {
	if !c.driveEpoch(ctx, epoch) {
		c.RequestBarrier()
	}
	return c.WaitCommitted(ctx, epoch)
}

// driveEpoch commits epoch on the caller's goroutine when no barrier is in
// flight, so that a lone writer's commit does not wait for the barrier loop
// to wake, nor the writer for the loop to wake it: each such hand-off between
// goroutines costs a commit tens of microseconds. It reports false when
// another barrier is in flight (or the engine failed or stopped): the
// caller then asks the loop (RequestBarrier), which commits everything
// written meanwhile together (group commit). Errors are the loop's: the
// epoch's waiters see them in WaitCommitted. When ctx ends first the round
// goes on in a goroutine of its own and driveEpoch returns.
func (c *Coordinator) driveEpoch(ctx context.Context, epoch uint64) bool {
	if !c.barrierMu.TryLock() {
		return false
	}
	handOff := false
	defer func() {
		if !handOff {
			c.barrierMu.Unlock()
		}
	}()
	c.committed.Lock()
	done := c.committed.epoch >= epoch
	c.committed.Unlock()
	if done {
		return true
	}
	c.mu.Lock()
	ok := c.mu.started && !c.mu.stopped && c.mu.failed == nil
	c.mu.Unlock()
	if !ok {
		return false
	}
	r, err := c.inject()
	if err == nil {
		r.byWriter = true
		err = c.finish(r, ctx.Done())
	}
	if errors.Is(err, errAbandoned) {
		// The statement was canceled while its epoch's actors still work:
		// the round goes on without it (its writes commit or fail with the
		// epoch), and holds barrierMu until it ends.
		handOff = true
		go func() {
			defer c.barrierMu.Unlock()
			if err := c.finish(r, nil); err != nil && !errors.Is(err, ErrStopped) {
				c.cfg.Logger.Error("epoch failed", "err", err)
			}
		}()
		return true
	}
	if err != nil && !errors.Is(err, ErrStopped) {
		c.cfg.Logger.Error("epoch failed", "err", err)
	}
	return true
}

// barrier injects one barrier, waits for every actor's report and commits.
func (c *Coordinator) barrier() error {
	r, err := c.inject()
	if err != nil {
		return err
	}
	return c.finish(r, nil)
}

// round is one barrier between its injection and its commit.
type round struct {
	b          *stream.Barrier
	prev       uint64
	injected   time.Time
	expect     map[stream.ActorID]bool // actors yet to report
	writes     *storage.Batch          // the epoch's writes so far
	seal       []*state.SealJob        // fresh rows of the epoch, written into writes before the commit
	stagedRows int
	byWriter   bool // driven by the statement that wrote the epoch (driveEpoch)
}

// errAbandoned is finish's answer when its caller stopped waiting: the round
// is not finished (finish it again).
var errAbandoned = errors.New("barrier round abandoned by its driver")

// inject opens the next epoch and sends its barrier to every root.
// A panic in it (the tables' fresh rows, an actor's launch) releases c.mu
// and fails the coordinator (recovery rebuilds from the committed epoch):
// left locked, every statement and barrier after it would wait forever.
func (c *Coordinator) inject() (_ *round, err error) {
	c.mu.Lock()
	locked := true
	defer func() {
		if p := recover(); p != nil {
			if locked {
				c.mu.Unlock()
			}
			err = c.roundPanicked("injecting a barrier", c.epochNow(), p)
		}
	}()
	if c.mu.stopped {
		c.mu.Unlock()
		locked = false
		return nil, ErrStopped
	}
	injected := time.Now()
	prev := c.mu.epoch
	curr := storage.NextEpoch(max(prev, c.kv.MaxVersion()))
	c.mu.epoch = curr
	b := &stream.Barrier{Epoch: stream.Epoch{Curr: curr, Prev: prev}, Checkpoint: true}
	if len(c.mu.pending) == 1 {
		b.Mutation = c.mu.pending[0]
	} else if len(c.mu.pending) > 1 {
		b.Mutation = stream.Mutations(c.mu.pending)
	}
	c.mu.pending = nil
	// The epoch takes the open batch's memory (no copy of its writes); the
	// next epoch's writes go into the batch an earlier epoch committed.
	writes := new(storage.Batch)
	*writes, c.mu.batch = c.mu.batch, c.mu.spare
	c.mu.spare = storage.Batch{}
	stagedRows := c.mu.stagedRows
	c.mu.stagedRows = 0
	expect := map[stream.ActorID]bool{}
	for id := range c.mu.actors {
		expect[id] = true
	}
	for _, r := range c.mu.starting {
		c.cfg.Logger.Debug("starting actor", "actor", r.actor.Ctx.ID, "job", r.job)
		c.launchLocked(r)
	}
	c.mu.starting = nil
	// Stopped actors report this barrier and end.
	var stopping []stream.ActorID
	b.ForEachMutation(func(m stream.Mutation) {
		if s, ok := m.(*stream.StopActors); ok {
			for id := range s.Actors {
				stopping = append(stopping, id)
			}
		}
	})
	// Send the barrier to every root while holding the lock: DML appends its
	// chunks under it, so each root sees the epoch's DML chunks, then the barrier.
	countOutputs(c.mu.roots, b)
	for id, r := range c.mu.roots {
		if r.idle(b) {
			delete(expect, id)
			continue
		}
		if err := r.sendBarrier(b, c.stop, c.failedCh); err != nil {
			c.mu.Unlock()
			locked = false
			err = fmt.Errorf("barrier %v to actor %d: %w", b, id, err)
			c.fail(prev, c.firstActorError(err))
			return nil, err
		}
	}
	for _, id := range stopping {
		delete(c.mu.roots, id)
		delete(c.mu.actors, id)
	}
	// The tables' fresh rows of the epoch (a large INSERT's, a connector's):
	// finish writes them (as blocks) into the epoch's batch, off c.mu. Taken
	// after the barrier went out, so that the actors flush the epoch while
	// they are gathered; still under c.mu, so that no later write joins them.
	seal := c.mu.tables.TakeFresh(prev)
	c.mu.Unlock()
	locked = false
	return &round{b: b, prev: prev, injected: injected, expect: expect, writes: writes, seal: seal, stagedRows: stagedRows}, nil
}

// roundPanicked fails the coordinator from epoch on for a panic p while it
// injected or finished an epoch (what), logging its stack, and returns the
// error. c.mu must not be held.
func (c *Coordinator) roundPanicked(what string, epoch uint64, p any) error {
	c.cfg.Logger.Error("a barrier round panicked", "while", what, "panic", p, "stack", string(debug.Stack()))
	err := fmt.Errorf("internal error while %s: %v", what, p)
	c.fail(epoch, err)
	return err
}

// epochNow is the open epoch.
func (c *Coordinator) epochNow() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.epoch
}

// finish collects r's reports and commits its epoch. When abandon fires
// before every actor reported it returns errAbandoned, r unfinished.
func (c *Coordinator) finish(r *round, abandon <-chan struct{}) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = c.roundPanicked(fmt.Sprintf("committing epoch %d", r.prev), r.prev, p)
		}
	}()
	prev := r.prev
	// The epoch's fresh rows are sealed while its actors work on the barrier
	// (the tables' writes and the actors' are apart in the batch).
	for _, j := range r.seal {
		j.Write(r.writes)
	}
	r.seal = nil
	if err := c.collect(r.b, r.expect, r.writes, abandon); err != nil {
		if errors.Is(err, errAbandoned) {
			return err
		}
		c.fail(prev, err)
		return err
	}
	if err := c.kv.Commit(c.runCtx, prev, r.writes); err != nil {
		err = fmt.Errorf("commit epoch %d: %w", prev, err)
		c.fail(prev, err)
		return err
	}
	c.committed.Lock()
	c.committed.epoch = prev
	c.committed.cond.Broadcast()
	c.committed.Unlock()
	if r.writes.Cap() <= maxSpareBatch {
		// The store keeps nothing of a committed batch (storage.KV.Commit).
		r.writes.Reset()
		c.mu.Lock()
		c.mu.spare = *r.writes
		c.mu.Unlock()
	}
	if r.stagedRows > 0 {
		// A big statement's garbage (its rows went through memory chunk by
		// chunk): give it back to the operating system now, not minutes later.
		debug.FreeOSMemory()
	}
	done := time.Now()
	c.cfg.Barriers.record(BarrierStat{Epoch: prev, Injected: r.injected, Committed: done, Latency: done.Sub(r.injected), ByWriter: r.byWriter})
	c.collectGarbage(prev)
	c.steerBackfills(done.Sub(r.injected))
	return nil
}

// steerBackfills is steerBackfillsLocked under c.mu (released by a panic too).
func (c *Coordinator) steerBackfills(latency time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steerBackfillsLocked(latency)
}

// maxSpareBatch is the most memory (bytes of keys and values) of a
// committed epoch's batch kept for a later epoch's writes.
const maxSpareBatch = 32 << 20

// versionLag is how many committed epochs of old versions stay readable
// beyond pinned snapshots (readers pin the epoch they read at).
const versionLag = 16

// collectGarbage lets storage discard versions older than the epoch
// committed versionLag barriers ago (pins of running readers hold it back).
func (c *Coordinator) collectGarbage(committed uint64) {
	c.recent = append(c.recent, committed)
	if len(c.recent) <= versionLag {
		return
	}
	oldest := c.recent[0]
	c.recent = c.recent[1:]
	if err := c.kv.SetDiscardEpoch(oldest); err != nil {
		c.cfg.Logger.Warn("set discard epoch", "epoch", oldest, "err", err)
	}
}

// collect waits until every expected actor reported barrier b, merging their
// writes (it deletes reported actors from expect): errAbandoned when abandon
// fires first.
func (c *Coordinator) collect(b *stream.Barrier, expect map[stream.ActorID]bool, writes *storage.Batch, abandon <-chan struct{}) error {
	stall := time.NewTicker(barrierStallWarning)
	defer stall.Stop()
	for len(expect) > 0 {
		select {
		case <-c.reports.signal:
		case <-stall.C:
			c.warnStall(b, expect)
			continue
		case <-c.stop:
			return ErrStopped
		case <-abandon:
			return errAbandoned
		}
		c.reports.Lock()
		list := c.reports.list
		c.reports.list = nil
		c.reports.Unlock()
		for _, r := range list {
			if r.Err != nil {
				return fmt.Errorf("actor %d: %w", r.Actor, r.Err)
			}
			if r.Barrier.Epoch != b.Epoch {
				return fmt.Errorf("actor %d reported %v while collecting %v", r.Actor, r.Barrier, b)
			}
			delete(expect, r.Actor)
			switch {
			case r.Writes == nil:
			case writes.Len() == 0 && r.Writes.Size() > writes.Cap()-writes.Size():
				// The report's batch is the actor's no more: taken without a copy when
				// the epoch's (empty) batch has no room for it; else copied, so the
				// epoch keeps the memory of the batch an earlier epoch committed
				// (a copy's seal writes megabytes into it every epoch).
				*writes = *r.Writes
			default:
				writes.Append(r.Writes)
			}
		}
	}
	return nil
}

// barrierStallWarning is how long a barrier may wait for its actors before
// the coordinator logs which ones it still waits for (and again as often).
const barrierStallWarning = 30 * time.Second

// warnStall logs the actors barrier b still waits for, with their jobs.
func (c *Coordinator) warnStall(b *stream.Barrier, expect map[stream.ActorID]bool) {
	c.mu.Lock()
	var waiting []string
	for id := range expect {
		job := uint32(0)
		if r := c.mu.actors[id]; r != nil {
			job = r.job
		}
		waiting = append(waiting, fmt.Sprintf("%d (job %d)", id, job))
	}
	c.mu.Unlock()
	sort.Strings(waiting)
	c.cfg.Logger.Warn("a barrier waits for actors", "epoch", b.Epoch.Curr, "actors", strings.Join(waiting, ", "))
}

// fail records an epoch failure for its waiters. The streaming graph is then
// in an unknown state: Recover rebuilds it (the session layer's job).
// firstActorError returns the error an actor reported, if any, else err.
func (c *Coordinator) firstActorError(err error) error {
	c.reports.Lock()
	defer c.reports.Unlock()
	for _, r := range c.reports.list {
		if r.Err != nil {
			return fmt.Errorf("actor %d: %w", r.Actor, r.Err)
		}
	}
	return err
}

func (c *Coordinator) fail(epoch uint64, err error) {
	c.progress.cond.Broadcast()
	c.mu.Lock()
	first := c.mu.failed == nil
	c.mu.failed = err
	stopped := c.mu.stopped
	c.mu.Unlock()
	if first && !stopped && c.cfg.OnFailure != nil {
		go c.cfg.OnFailure(c, err)
	}
	c.committed.Lock()
	// No epoch commits on a failed coordinator (its owner replaces it):
	// every wait from epoch on fails.
	c.committed.err = err
	c.committed.errAt = ^uint64(0)
	c.committed.cond.Broadcast()
	c.committed.Unlock()
}

// WaitCommitted blocks until epoch is committed (or failed, or ctx ends).
func (c *Coordinator) WaitCommitted(ctx context.Context, epoch uint64) error {
	stopWatch := context.AfterFunc(ctx, func() {
		c.committed.Lock()
		c.committed.cond.Broadcast()
		c.committed.Unlock()
	})
	defer stopWatch()
	c.committed.Lock()
	defer c.committed.Unlock()
	for c.committed.epoch < epoch {
		if c.committed.err != nil && c.committed.errAt >= epoch {
			return fmt.Errorf("epoch %d: %w", epoch, c.committed.err)
		}
		if ctx.Err() != nil {
			return types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		}
		c.committed.cond.Wait()
	}
	return nil
}

// Flush waits until everything written before the call is committed.
//
// Rows a sink writes into a table are writes too: while sinks into tables
// hold entries of the epochs committed so far, Flush waits until each has
// written them into its table and commits again (those rows, and what views
// over the target table and sinks from them do with them), up to one round
// per sink into a table.
func (c *Coordinator) Flush(ctx context.Context) error {
	epoch, err := c.flushOnce(ctx)
	if err != nil || c.cfg.Sinks == nil {
		return err
	}
	into := 0
	for _, st := range c.cfg.Sinks.Stores() {
		if st.Into {
			into++
		}
	}
	for round := 0; round < into; round++ {
		before := c.intoDelivered()
		if err := c.waitSinksInto(ctx, epoch); err != nil {
			return err
		}
		if round > 0 && maps.Equal(before, c.intoDelivered()) {
			return nil // nothing more was written into a table
		}
		if epoch, err = c.flushOnce(ctx); err != nil {
			return err
		}
	}
	return nil
}

// flushOnce commits the open epoch and returns it.
func (c *Coordinator) flushOnce(ctx context.Context) (uint64, error) {
	c.mu.Lock()
	epoch := c.mu.epoch
	c.mu.Unlock()
	return epoch, c.commitEpoch(ctx, epoch)
}

// intoDelivered is the last epoch each sink into a table's reader delivered.
func (c *Coordinator) intoDelivered() map[string]uint64 {
	out := map[string]uint64{}
	for _, st := range c.cfg.Sinks.Stores() {
		if st.Into {
			out[fmt.Sprintf("%s/%d", st.Sink, st.Actor)] = st.DeliveredEpoch
		}
	}
	return out
}

// waitSinksInto waits until every sink into a table has written its entries
// of epochs through epoch into its table, asking for barriers meanwhile (a
// paced one writes one batch per epoch).
func (c *Coordinator) waitSinksInto(ctx context.Context, epoch uint64) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	c.flushWaits.Add(1)
	defer c.flushWaits.Add(-1)
	for {
		behind := false
		for _, st := range c.cfg.Sinks.Stores() {
			if st.Into && st.WrittenThrough < epoch {
				behind = true
				break
			}
		}
		if !behind {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.stop:
			return ErrStopped
		case <-c.failedCh:
			return ErrRecovering
		case <-tick.C:
			c.RequestBarrier()
		}
	}
}

// flushing reports whether a FLUSH waits for sinks into tables.
func (c *Coordinator) flushing() bool { return c.flushWaits.Load() > 0 }

// OpenEpoch returns the epoch that DML and other writes go into now.
func (c *Coordinator) OpenEpoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.epoch
}

// Failed returns the error that failed the coordinator (nil while it runs,
// or when it was only stopped).
func (c *Coordinator) Failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.failed
}

// SinkLog returns what decoupled sinks reported.
func (c *Coordinator) SinkLog() *SinkLog { return c.cfg.Sinks }

// Barriers returns the log of committed epochs' barrier latencies (kept
// across rebuilds by Streaming).
func (c *Coordinator) Barriers() *BarrierLog { return c.cfg.Barriers }

// Foreground reports whether rows were written by DML or a connector source
// within the last second: running pipelines are busy, and a backfill should
// keep its epochs light.
func (c *Coordinator) Foreground() bool {
	return time.Since(time.Unix(0, c.foreground.Load())) < time.Second
}
