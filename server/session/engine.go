package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// Engine is the state shared by all sessions of one server.
type Engine struct {
	Catalog *catalog.Catalog
	Store   storage.KV
	// roles are the users (roles.go).
	roles roles
	// Backends is the wire server's view of its connections
	// (pg_stat_activity, pg_cancel_backend, pg_terminate_backend); nil
	// without one.
	Backends Backends
	// mu guards the coordinator, which recovery replaces.
	mu struct {
		sync.RWMutex
		coord *coordinator.Coordinator
	}
	Logger *slog.Logger

	cfg      Config
	params   map[string]string       // persisted system parameters (ALTER SYSTEM SET)
	barriers *coordinator.BarrierLog // every coordinator's, so recovery keeps the history
	sinks    *coordinator.SinkLog    // the same for decoupled sinks' states and failures
	closed   bool
	// ddl serialises catalog changes so descriptors persist in the order they publish.
	ddl sync.Mutex
	// pendingDrops are jobs whose CREATE failed with the streaming engine:
	// gone from the catalog, their stored descriptors and state are deleted
	// by the recovery (guarded by ddl).
	pendingDrops []*catalog.Relation
	// carried is the backfill progress of the jobs of a coordinator being
	// replaced, by job id, which their rebuilt jobs start from (guarded by
	// ddl).
	carried map[uint32]coordinator.JobInfo
	nextPID atomic.Int32
}

// Config holds the engine's system parameters.
type Config struct {
	// BarrierInterval is barrier_interval_ms; default 1s.
	BarrierInterval time.Duration
	// CacheRows bounds each stateful stream operator's in-memory rows (0: default).
	CacheRows int
	// SpillRows is how many rows a DML statement writes before they are staged
	// into the store instead of held in memory (0: coordinator.DefaultSpillRows).
	SpillRows int
	// Parallelism is the default streaming_parallelism; default the number of cores.
	Parallelism int
	Logger      *slog.Logger
	// RootPassword, when set, becomes root's password at this start
	// (TRIBUTARY_ROOT_PASSWORD).
	RootPassword string
}

// Open loads the persisted catalog from store, rebuilds every streaming job
// from it (recovery: jobs resume from the last committed epoch, whose state
// is in storage) and starts the coordinator.
func Open(ctx context.Context, store storage.KV, cfg Config) (*Engine, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = runtime.NumCPU()
	}
	cat := catalog.New(catalog.SystemRelations())
	rels, nextID, err := persist.Load(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	cat.Load(rels, nextID)
	params, err := persist.LoadParams(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	if v, err := strconv.Atoi(params["barrier_interval_ms"]); err == nil && v > 0 {
		cfg.BarrierInterval = time.Duration(v) * time.Millisecond
	}
	if cfg.BarrierInterval <= 0 {
		cfg.BarrierInterval = time.Second
	}
	e := &Engine{Catalog: cat, Store: store, Logger: logger, cfg: cfg, params: params,
		barriers: coordinator.NewBarrierLog(), sinks: coordinator.NewSinkLog()}
	coord, err := e.startCoordinator(ctx)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	e.mu.coord = coord
	if err := e.loadRoles(ctx, cfg.RootPassword); err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	logger.Info("catalog loaded", "relations", len(rels), "committed_epoch", store.CommittedEpoch())
	return e, nil
}

// startCoordinator builds a coordinator, rebuilds every streaming job from
// the catalog and starts it.
func (e *Engine) startCoordinator(ctx context.Context) (*coordinator.Coordinator, error) {
	c := coordinator.New(e.Store, coordinator.Config{BarrierInterval: e.cfg.BarrierInterval,
		Parallelism: e.cfg.Parallelism, CacheRows: e.cfg.CacheRows, SpillRows: e.cfg.SpillRows, Logger: e.Logger, OnFailure: e.recover,
		Barriers: e.barriers, Sinks: e.sinks})
	if err := e.recoverJobs(ctx, c); err != nil {
		c.Stop()
		return nil, err
	}
	c.Start()
	return c, nil
}

// isClosed reports whether the engine shut down.
func (e *Engine) isClosed() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.closed
}

// coord returns the current coordinator.
func (e *Engine) coord() *coordinator.Coordinator {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.mu.coord
}

// recover replaces a coordinator whose epoch failed: every actor is stopped
// and every job rebuilt from the catalog over the last committed epoch (in
// flight statements fail; nothing acknowledged is lost).
func (e *Engine) recover(failed *coordinator.Coordinator, cause error) {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.coord != failed || e.closed {
		return
	}
	e.Logger.Error("streaming engine failed; recovering from the last committed epoch", "err", cause)
	e.replaceCoordinatorLocked(failed)
	e.Logger.Info("streaming engine recovered", "committed_epoch", e.Store.CommittedEpoch())
}

// replaceCoordinatorLocked stops old and installs a new coordinator whose
// jobs are rebuilt from the catalog over the last committed epoch (a
// recovery, a rescale), retrying until one starts. The rebuilt jobs keep
// old's progress, old versions are held until they pinned theirs, and the
// state of failed CREATEs is deleted. The caller holds ddl and mu.
func (e *Engine) replaceCoordinatorLocked(old *coordinator.Coordinator) {
	release := e.holdVersions()
	e.carryProgressLocked(old)
	old.Stop()
	for attempt := 1; ; attempt++ {
		c, err := e.startCoordinator(context.Background())
		if err == nil {
			e.mu.coord = c
			e.finishDropsLocked(c)
			release(c)
			return
		}
		e.Logger.Error("rebuilding the streaming jobs failed", "attempt", attempt, "err", err)
		time.Sleep(time.Duration(min(attempt, 10)) * time.Second)
	}
}

// Close stops the streaming engine (uncommitted work is dropped; every
// acknowledged statement is committed already).
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	c := e.mu.coord
	e.mu.Unlock()
	c.Stop()
}

// Jobs returns the running backfills' progress (SHOW JOBS), by job id.
func (e *Engine) Jobs() []coordinator.JobInfo { return e.coord().Jobs() }

// Fragments lists the running jobs' fragments (rw_fragments, /metrics).
func (e *Engine) Fragments() []coordinator.FragmentInfo { return e.coord().Fragments() }

// JobName returns a relation's qualified name ("" when it is gone).
func (e *Engine) JobName(id uint32) string {
	if r, ok := e.Catalog.ByID(id); ok {
		return r.QualifiedName()
	}
	return ""
}

// Barriers returns the log of committed epochs' barrier latencies, kept
// across recoveries.
func (e *Engine) Barriers() *coordinator.BarrierLog { return e.barriers }

// SinkLog returns what decoupled sinks and sources report (log stores,
// source splits, CDC progress), kept across recoveries.
func (e *Engine) SinkLog() *coordinator.SinkLog { return e.sinks }

// NewSession is the pgwire.Factory.
func (e *Engine) NewSession(params map[string]string, n pgwire.Notifier) (pgwire.Session, error) {
	db := params["database"]
	if db == "" {
		db = params["user"]
	}
	if db != catalog.Database {
		return nil, types.Errorf(types.ErrInvalidCatalogName, "database \"%s\" does not exist", db)
	}
	pid := e.nextPID.Add(1)
	if p, err := strconv.ParseInt(params[pgwire.ParamBackendPID], 10, 32); err == nil {
		pid = int32(p) // the wire's process id, as BackendKeyData told the client
	}
	s := &Session{eng: e, notifier: n, user: params["user"], pid: pid}
	s.vars = newVars()
	if app, ok := params["application_name"]; ok {
		s.vars.values["application_name"] = app
	}
	return s, nil
}

// Backends is what the wire server tells about its connections.
type Backends interface {
	Activity() []pgwire.Activity
	Signal(pid int32, terminate bool) bool
}

// withCoordinator runs fn on the current coordinator; when that coordinator
// failed before committing fn's work (ErrRecovering, or ErrStopped by
// recovery), it waits for the recovered one and runs fn again: the statement
// had not been acknowledged and nothing of it was committed.
func (e *Engine) withCoordinator(ctx context.Context, fn func(c *coordinator.Coordinator) error) error {
	for attempt := 0; ; attempt++ {
		c := e.coord()
		err := fn(c)
		if attempt >= 5 || !(errors.Is(err, coordinator.ErrRecovering) || errors.Is(err, coordinator.ErrStopped)) {
			return err
		}
		// Wait for recovery to install a new coordinator.
		for e.coord() == c {
			e.mu.RLock()
			closed := e.closed
			e.mu.RUnlock()
			if closed {
				return err
			}
			select {
			case <-ctx.Done():
				return types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// carryProgressLocked keeps c's running jobs' progress for their rebuilt
// jobs (the caller holds ddl).
func (e *Engine) carryProgressLocked(c *coordinator.Coordinator) {
	e.carried = map[uint32]coordinator.JobInfo{}
	for _, j := range c.Jobs() {
		e.carried[j.ID] = j
	}
}

// finishDropsLocked deletes the stored descriptors and state of the jobs
// whose CREATE failed with the streaming engine (the caller holds ddl).
func (e *Engine) finishDropsLocked(c *coordinator.Coordinator) {
	if len(e.pendingDrops) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Write(ctx, func(snapshot, _ uint64, b *storage.Batch) error {
		return e.deleteState(ctx, snapshot, e.pendingDrops, b)
	}); err != nil {
		e.Logger.Error("delete the state of failed jobs", "err", err)
		return
	}
	e.pendingDrops = nil
}
