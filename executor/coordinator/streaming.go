package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
)

// JobPlanner plans a catalog relation's streaming job (planner/job): the
// id the job runs under and its plan with the state tables it recorded,
// or ok false when the relation runs no job.
type JobPlanner interface {
	Job(rel *catalog.Relation) (id uint32, root plan.StreamNode, ok bool, err error)
}

// Streaming is the streaming engine over its whole life: it builds every
// job of the catalog on a Coordinator and, when an epoch fails or jobs are
// rescaled, replaces that coordinator by a new one whose jobs are rebuilt
// from the catalog over the last committed epoch (Rebuild). State is keyed
// by vnode in storage, so a rebuild reads and copies none: actors resume
// from it with their new vnodes and splits.
type Streaming struct {
	store   storage.KV
	catalog *catalog.Catalog
	planner JobPlanner
	cfg     Config
	// catalogLock serialises catalog changes (the sessions' DDL lock): a
	// rebuild holds it to read one catalog.
	catalogLock sync.Locker

	mu struct {
		sync.RWMutex
		coord  *Coordinator
		closed bool
	}
	// carried is the progress of the jobs of a coordinator being replaced,
	// by job id, which their rebuilt jobs start from; pendingDrops are jobs
	// whose CREATE failed with the streaming engine: gone from the catalog,
	// their stored descriptors and state are deleted by the next rebuild
	// (both guarded by catalogLock).
	carried      map[uint32]JobInfo
	pendingDrops []*catalog.Relation
}

// Open builds every job of cat on a new coordinator and starts it
// (recovery after a restart: jobs resume from the last committed epoch).
// catalogLock is the lock under which cat changes.
func Open(ctx context.Context, store storage.KV, cat *catalog.Catalog, planner JobPlanner, catalogLock sync.Locker, cfg Config) (*Streaming, error) {
	if cfg.Barriers == nil {
		cfg.Barriers = NewBarrierLog() // kept across rebuilds
	}
	if cfg.Sinks == nil {
		cfg.Sinks = NewSinkLog()
	}
	s := &Streaming{store: store, catalog: cat, planner: planner, cfg: cfg, catalogLock: catalogLock}
	c, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.coord = c
	return s, nil
}

// Current returns the running coordinator.
func (s *Streaming) Current() *Coordinator {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.coord
}

// Closed reports whether Close ran.
func (s *Streaming) Closed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.closed
}

// Close stops the streaming engine (uncommitted work is dropped; every
// acknowledged statement is committed already).
func (s *Streaming) Close() {
	s.mu.Lock()
	s.mu.closed = true
	c := s.mu.coord
	s.mu.Unlock()
	c.Stop()
}

// SetBarrierInterval changes the barrier interval of the running
// coordinator and of those that replace it.
func (s *Streaming) SetBarrierInterval(d time.Duration) {
	s.mu.Lock()
	s.cfg.BarrierInterval = d
	c := s.mu.coord
	s.mu.Unlock()
	c.SetBarrierInterval(d)
}

// start builds a coordinator, every job of the catalog on it, and starts it.
func (s *Streaming) start(ctx context.Context) (*Coordinator, error) {
	s.mu.RLock()
	cfg := s.cfg
	s.mu.RUnlock()
	cfg.OnFailure = s.recover
	c := New(s.store, cfg)
	if err := s.buildJobs(ctx, c); err != nil {
		c.Stop()
		return nil, err
	}
	c.Start()
	return c, nil
}

// buildJobs registers every table's DML source and builds every job, in id
// order (upstreams first), before c starts; a job rebuilt in this process
// keeps its progress (carried).
func (s *Streaming) buildJobs(ctx context.Context, c *Coordinator) error {
	for _, rel := range s.catalog.Relations() {
		if rel.Kind == catalog.KindTable {
			c.AddTable(rel.ID, rel.ColumnTypes())
		}
		id, root, ok, err := s.planner.Job(rel)
		if err != nil {
			return fmt.Errorf("rebuild the job of %s %s: %w", rel.Kind, rel.Name, err)
		}
		if !ok {
			continue
		}
		opts := OptionsFor(rel, root)
		if rel.Kind == catalog.KindMaterializedView || rel.Kind == catalog.KindSink || rel.Kind == catalog.KindIndex {
			// A job still backfilling after a restart has lost its client: it is a background job now.
			opts.Statement, opts.Background = "CREATE "+upper(rel.Kind)+" "+rel.Name+" AS "+rel.Definition, true
		}
		if j, ok := s.carried[id]; ok { // rebuilt in this process: its progress goes on
			opts.Statement, opts.Background, opts.Started, opts.PercentFloor, opts.RowsFloor = j.Statement, j.Background, j.Started, j.Percent, j.Rows
		}
		if err := c.AddJob(ctx, id, root, opts); err != nil {
			return fmt.Errorf("rebuild the job of %s %s: %w", rel.Kind, rel.Name, err)
		}
	}
	return nil
}

func upper(k catalog.Kind) string {
	switch k {
	case catalog.KindSink:
		return "SINK"
	case catalog.KindIndex:
		return "INDEX"
	}
	return "MATERIALIZED VIEW"
}

// OptionsFor are the coordinator's options for rel's job (root) from its
// persisted settings (catalog.JobSettings), with SHOW JOBS' description
// of a connector's job.
func OptionsFor(rel *catalog.Relation, root plan.StreamNode) JobOptions {
	opts := JobOptions{BackfillRate: -1}
	js := rel.Job
	if rel.Kind == catalog.KindTable || rel.Kind == catalog.KindSource {
		return connectorOptions(rel)
	}
	opts.BackfillType = backfillType(rel, root)
	if js == nil {
		return opts
	}
	opts.Parallelism = js.Parallelism
	if js.BackfillRate != nil {
		opts.BackfillRate = *js.BackfillRate
	}
	if js.Adaptive {
		opts.Adaptive, opts.BackfillRate, opts.TargetLatency = true, 10_000, time.Duration(max(js.TargetLatencyMs, 10))*time.Millisecond
	}
	return opts
}

// connectorOptions describe a connector table's or shared source's job, with
// a CDC table's backfill rate (its copy's).
func connectorOptions(rel *catalog.Relation) JobOptions {
	what := "CREATE TABLE " + rel.Name + " (source)"
	parallelism := 1
	opts := JobOptions{BackfillRate: -1, Background: true, BackfillType: "Source"}
	if rel.Kind == catalog.KindSource {
		what = "CREATE SOURCE " + rel.Name
		parallelism = 0 // the default: its actors share out the splits
		if rel.Job != nil {
			parallelism = rel.Job.Parallelism
		}
	} else if rel.Connector != nil && rel.Connector.Splits {
		// Its actors share out the splits (Kafka partitions, a CDC table's
		// key ranges).
		parallelism = 0 // the default
		if rel.Job != nil {
			parallelism = rel.Job.Parallelism
		}
	}
	if rel.Kind == catalog.KindTable && rel.Connector != nil && rel.Connector.ReadOnly {
		opts.BackfillType = "CdcBackfill"
		if rel.Job != nil && rel.Job.BackfillRate != nil {
			opts.BackfillRate = *rel.Job.BackfillRate
		}
	}
	opts.Parallelism, opts.Statement = parallelism, what
	return opts
}

// backfillType names how job root of rel backfills, for rw_ddl_progress:
// from a shared source (per split), or from tables and views.
func backfillType(rel *catalog.Relation, root plan.StreamNode) string {
	if readsSharedSource(root) {
		return "SourceBackfill"
	}
	if rel.Job != nil && rel.Job.SnapshotBackfill {
		return "SnapshotBackfill"
	}
	return "ArrangementBackfill"
}

func readsSharedSource(n plan.StreamNode) bool {
	if n == nil {
		return false
	}
	if s, ok := n.(*plan.StreamSource); ok && s.Relation.Kind == catalog.KindSource {
		return true
	}
	for _, in := range n.Inputs() {
		if readsSharedSource(in) {
			return true
		}
	}
	return false
}

// recover replaces a coordinator whose epoch failed: every actor is stopped
// and every job rebuilt from the catalog over the last committed epoch (in
// flight statements fail; nothing acknowledged is lost).
func (s *Streaming) recover(failed *Coordinator, cause error) {
	s.catalogLock.Lock()
	defer s.catalogLock.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.coord != failed || s.mu.closed {
		return
	}
	s.cfg.Logger.Error("streaming engine failed; recovering from the last committed epoch", "err", cause)
	s.replaceLocked(failed)
	s.cfg.Logger.Info("streaming engine recovered", "committed_epoch", s.store.CommittedEpoch())
}

// Rebuild rebuilds every streaming job from the catalog (a rescale, whose
// new parallelism the catalog records; RECOVER): the coordinator commits
// what was written, stops, and a new one starts over the committed epoch,
// as after a failure. Statements in flight whose epoch did not commit are
// run again on the new coordinator (Do), backfills resume from their
// committed progress. The pause grows with the number of jobs, not with
// their state: no state is read to rebuild them. The caller holds the
// catalog lock.
func (s *Streaming) Rebuild(ctx context.Context) error {
	start := time.Now()
	old := s.Current()
	if err := old.Flush(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.coord != old || s.mu.closed {
		return fmt.Errorf("the streaming engine was replaced during the change; run it again")
	}
	s.replaceLocked(old)
	s.cfg.Logger.Info("streaming jobs rescheduled", "pause", time.Since(start), "committed_epoch", s.store.CommittedEpoch())
	return nil
}

// replaceLocked stops old and installs a new coordinator whose jobs are
// rebuilt from the catalog over the last committed epoch, retrying until
// one starts. The rebuilt jobs keep old's progress, old versions are held
// until they pinned theirs, and the state of failed CREATEs is deleted.
// The caller holds the catalog lock and mu.
func (s *Streaming) replaceLocked(old *Coordinator) {
	release := s.holdVersions()
	s.carried = map[uint32]JobInfo{}
	for _, j := range old.Jobs() {
		s.carried[j.ID] = j
	}
	old.Stop()
	for attempt := 1; ; attempt++ {
		// start reads cfg under mu's read lock: mu is held here.
		cfg := s.cfg
		cfg.OnFailure = s.recover
		c := New(s.store, cfg)
		err := s.buildJobs(context.Background(), c)
		if err == nil {
			c.Start()
			s.mu.coord = c
			s.finishDrops(c)
			release(c)
			return
		}
		c.Stop()
		s.cfg.Logger.Error("rebuilding the streaming jobs failed", "attempt", attempt, "err", err)
		time.Sleep(time.Duration(min(attempt, 10)) * time.Second)
	}
}

// holdVersions keeps the store's old versions while the coordinator is
// replaced: the stopping jobs release their pins (a snapshot backfill's
// snapshot epoch, a log store reader's), and the jobs rebuilt pin the same
// epochs again only when their first barrier comes. The returned release
// waits for the new coordinator's first epoch (every actor has passed a
// barrier) in the background, then lets the versions go.
func (s *Streaming) holdVersions() func(c *Coordinator) {
	unpin, err := s.store.Pin(s.store.DiscardEpoch())
	if err != nil {
		s.cfg.Logger.Warn("could not hold old versions during the rebuild", "err", err)
		return func(*Coordinator) {}
	}
	return func(c *Coordinator) {
		go func() {
			defer unpin()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = c.Flush(ctx) // fails only if c stops: then nothing pins anyway
		}()
	}
}

// Do runs fn on the current coordinator; when that coordinator failed
// before committing fn's work (ErrRecovering, or ErrStopped by a rebuild),
// it waits for the new one and runs fn again: the statement had not been
// acknowledged and nothing of it was committed. ctx's end stops the wait
// (with ctx's error).
func (s *Streaming) Do(ctx context.Context, fn func(c *Coordinator) error) error {
	for attempt := 0; ; attempt++ {
		c := s.Current()
		err := fn(c)
		if attempt >= 5 || !(errors.Is(err, ErrRecovering) || errors.Is(err, ErrStopped)) {
			return err
		}
		for s.Current() == c {
			if s.Closed() {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// Abandon stops the job of rel, whose CREATE failed, and deletes its
// stored descriptor and state; when the streaming engine cannot do that
// now, the next rebuild does. The caller holds the catalog lock and has
// removed rel from the catalog.
func (s *Streaming) Abandon(ctx context.Context, rel *catalog.Relation, jobID uint32) {
	c := s.Current()
	_ = c.DropJob(ctx, jobID)
	if rel.Kind == catalog.KindTable {
		_ = c.DropTable(ctx, rel.ID)
	}
	if err := s.DropState(ctx, []*catalog.Relation{rel}); err != nil {
		s.pendingDrops = append(s.pendingDrops, rel)
	}
}

// finishDrops deletes the stored descriptors and state of the jobs whose
// CREATE failed with the streaming engine (the caller holds the catalog
// lock).
func (s *Streaming) finishDrops(c *Coordinator) {
	if len(s.pendingDrops) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Write(ctx, func(snapshot, _ uint64, b *storage.Batch) error {
		return s.deleteState(ctx, snapshot, s.pendingDrops, b)
	}); err != nil {
		s.cfg.Logger.Error("delete the state of failed jobs", "err", err)
		return
	}
	s.pendingDrops = nil
}

// DropState removes dropped relations' stored descriptors, rows and state
// tables in one epoch.
func (s *Streaming) DropState(ctx context.Context, rels []*catalog.Relation) error {
	_, err := s.Current().Write(ctx, func(snapshot, _ uint64, b *storage.Batch) error {
		return s.deleteState(ctx, snapshot, rels, b)
	})
	return err
}

// deleteState adds to b the deletion of rels' stored descriptors, rows and
// state tables as of snapshot.
func (s *Streaming) deleteState(ctx context.Context, snapshot uint64, rels []*catalog.Relation, b *storage.Batch) error {
	for _, r := range rels {
		persist.Delete(b, r.ID)
		for _, c := range r.Columns {
			if c.Seq != nil {
				persist.DeleteSequence(b, r.ID, c.Name)
			}
		}
		ids := append([]uint32{r.ID}, r.StateTables...)
		if r.Kind == catalog.KindView {
			ids = nil
		}
		for _, id := range ids {
			if err := deleteRows(ctx, s.store, snapshot, id, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteRows tombstones every row of a table (Badger has no range delete).
func deleteRows(ctx context.Context, kv storage.KV, epoch uint64, id uint32, b *storage.Batch) error {
	lo, hi := codec.TableSpan(id)
	it, err := kv.Scan(ctx, lo, hi, epoch)
	if err != nil {
		return err
	}
	defer it.Close()
	for {
		if err := it.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return it.Close()
			}
			return err
		}
		b.Delete(it.Key())
	}
}
