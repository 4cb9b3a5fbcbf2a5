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
	"github.com/tributary/tributary/planner/job"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memory"
)

// Engine is the state shared by all sessions of one server.
type Engine struct {
	Catalog *catalog.Catalog
	Store   storage.KV
	// indexes holds, per index, the first committed epoch seen after it was
	// built: lookups at snapshots from then on may read it (indexReady).
	indexes struct {
		sync.Mutex
		readyAt map[uint32]uint64
	}
	// roles are the users (roles.go).
	roles roles
	// Backends is the wire server's view of its connections
	// (pg_stat_activity, pg_cancel_backend, pg_terminate_backend); nil
	// without one.
	Backends Backends
	// streaming runs the streaming jobs: it builds them on a coordinator
	// and replaces that coordinator to recover or rescale.
	streaming *coordinator.Streaming
	Logger    *slog.Logger

	cfg    Config
	params map[string]string // persisted system parameters (ALTER SYSTEM SET)
	// ddl serialises catalog changes so descriptors persist in the order
	// they publish; a rebuild of the streaming jobs holds it too.
	ddl     sync.Mutex
	nextPID atomic.Int32
	// seqs hands out serial and identity values (sequence.go).
	seqs *sequences
	// attached records which database each session uses (database.go).
	attached attached
}

// Config holds the engine's system parameters.
type Config struct {
	// BarrierInterval is barrier_interval_ms; default 1s.
	BarrierInterval time.Duration
	// CacheRows bounds each stateful stream operator's in-memory rows (0: default).
	CacheRows int
	// Memory is the server's memory budget (--memory-limit), listed by
	// rw_catalog.rw_memory and SHOW PARAMETERS (nil: none); CachePool is the
	// stream operators' caches' share of it (nil: CacheRows bounds them alone).
	Memory    *memory.Budget
	CachePool *memory.Pool
	// SpillRows is how many rows a DML statement writes before they are staged
	// into the store instead of held in memory (0: coordinator.DefaultSpillRows).
	SpillRows int
	// Parallelism is the default streaming_parallelism; default the number of cores.
	Parallelism int
	Logger      *slog.Logger
	// RootPassword, when set, becomes root's password at this start
	// (TRIBUTARY_ROOT_PASSWORD).
	RootPassword string
	// NoStreamStats turns off the streaming jobs' per-actor and per-operator
	// counters (coordinator.Config.NoStats).
	NoStreamStats bool
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
	rels, nextID, clearSecrets, err := persist.LoadReport(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	cat.Load(rels, nextID)
	schemas, err := persist.LoadSchemas(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	cat.SetSchemas(schemas)
	dbs, err := persist.LoadDatabases(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	cat.SetDatabases(dbs)
	funcs, err := persist.LoadFunctions(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	cat.SetFunctions(funcs)
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
	e := &Engine{Catalog: cat, Store: store, Logger: logger, cfg: cfg, params: params, seqs: newSequences(store)}
	planner := &job.Planner{Catalog: cat}
	e.streaming, err = coordinator.Open(ctx, store, cat, planner, &e.ddl, coordinator.Config{BarrierInterval: cfg.BarrierInterval,
		Parallelism: cfg.Parallelism, CacheRows: cfg.CacheRows, Memory: cfg.CachePool, SpillRows: cfg.SpillRows, Logger: logger, NoStats: cfg.NoStreamStats})
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	if err := e.loadRoles(ctx, cfg.RootPassword); err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	if len(clearSecrets) > 0 && persist.Sealing() {
		// Relations saved before secrets were encrypted: seal them now.
		if _, err := e.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
			for _, id := range clearSecrets {
				if rel, ok := cat.ByID(id); ok {
					if err := persist.Save(b, rel, cat.PeekNextID()); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("open engine: encrypt the secrets stored in clear: %w", err)
		}
		logger.Info("encrypted the connector secrets of relations stored in clear", "relations", len(clearSecrets))
	}
	logger.Info("catalog loaded", "relations", len(rels), "committed_epoch", store.CommittedEpoch())
	return e, nil
}

// isClosed reports whether the engine shut down.
func (e *Engine) isClosed() bool { return e.streaming.Closed() }

// coord returns the current coordinator.
func (e *Engine) coord() *coordinator.Coordinator { return e.streaming.Current() }

// Close stops the streaming engine (uncommitted work is dropped; every
// acknowledged statement is committed already).
func (e *Engine) Close() { e.streaming.Close() }

// Jobs returns the running backfills' progress (SHOW JOBS), by job id.
func (e *Engine) Jobs() []coordinator.JobInfo { return e.coord().Jobs() }

// Fragments lists the running jobs' fragments (rw_fragments, /metrics).
func (e *Engine) Fragments() []coordinator.FragmentInfo { return e.coord().Fragments() }

// JobName returns a relation's qualified name ("" when it is gone).
func (e *Engine) JobName(id uint32) string {
	if r, ok := e.jobRelation(id); ok {
		return r.QualifiedName()
	}
	return ""
}

// jobRelation returns the relation of job id: the relation of that id, or
// the connector table whose job is numbered by its first state table.
func (e *Engine) jobRelation(id uint32) (*catalog.Relation, bool) {
	if r, ok := e.Catalog.ByID(id); ok {
		return r, true
	}
	for _, r := range e.Catalog.Relations() {
		if job.IsConnectorTable(r) && r.StateTables[0] == id {
			return r, true
		}
	}
	return nil, false
}

// JobKind names the kind of a job's relation ("materialized view",
// "sink", "table", ...; "" when it is gone).
func (e *Engine) JobKind(id uint32) string {
	if r, ok := e.jobRelation(id); ok {
		return r.Kind.String()
	}
	return ""
}

// Barriers returns the log of committed epochs' barrier latencies, kept
// across recoveries.
func (e *Engine) Barriers() *coordinator.BarrierLog { return e.coord().Barriers() }

// SinkLog returns what decoupled sinks and sources report (log stores,
// source splits, CDC progress), kept across recoveries.
func (e *Engine) SinkLog() *coordinator.SinkLog { return e.coord().SinkLog() }

// NewSession is the pgwire.Factory.
func (e *Engine) NewSession(params map[string]string, n pgwire.Notifier) (pgwire.Session, error) {
	db := params["database"]
	if db == "" {
		db = params["user"]
	}
	if _, ok := e.Catalog.DatabaseByName(db); !ok {
		return nil, catalog.ErrNoDatabase(db)
	}
	pid := e.nextPID.Add(1)
	if p, err := strconv.ParseInt(params[pgwire.ParamBackendPID], 10, 32); err == nil {
		pid = int32(p) // the wire's process id, as BackendKeyData told the client
	}
	s := &Session{eng: e, notifier: n, user: params["user"], pid: pid}
	s.vars = newVars()
	s.database = db
	e.attached.set(pid, db, true)
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

// withCoordinator runs fn on the current coordinator, and again on the
// next one when that failed before committing fn's work
// (coordinator.Streaming.Do).
func (e *Engine) withCoordinator(ctx context.Context, fn func(c *coordinator.Coordinator) error) error {
	err := e.streaming.Do(ctx, fn)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
	}
	return err
}

// withoutDDLLock runs fn with the DDL lock, which the caller holds, released, and takes it
// again before returning, a panic in fn included: the caller's deferred unlock would
// otherwise unlock an unlocked mutex, a fatal error no recover catches.
func (e *Engine) withoutDDLLock(fn func() error) error {
	e.ddl.Unlock()
	defer e.ddl.Lock()
	return fn()
}
