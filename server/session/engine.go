package session

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
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
	Coord   *coordinator.Coordinator
	Logger  *slog.Logger

	cfg Config
	// ddl serialises catalog changes so descriptors persist in the order they publish.
	ddl     sync.Mutex
	nextPID atomic.Int32
}

// Config holds the engine's system parameters.
type Config struct {
	// BarrierInterval is barrier_interval_ms; default 1s.
	BarrierInterval time.Duration
	// Parallelism is the default streaming_parallelism; default the number of cores.
	Parallelism int
	Logger      *slog.Logger
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
	coord := coordinator.New(store, coordinator.Config{BarrierInterval: cfg.BarrierInterval, Parallelism: cfg.Parallelism, Logger: logger})
	e := &Engine{Catalog: cat, Store: store, Coord: coord, Logger: logger, cfg: cfg}
	if err := e.recoverJobs(ctx); err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	coord.Start()
	logger.Info("catalog loaded", "relations", len(rels), "committed_epoch", store.CommittedEpoch())
	return e, nil
}

// Close stops the streaming engine (uncommitted work is dropped; every
// acknowledged statement is committed already).
func (e *Engine) Close() { e.Coord.Stop() }

// NewSession is the pgwire.Factory.
func (e *Engine) NewSession(params map[string]string, n pgwire.Notifier) (pgwire.Session, error) {
	db := params["database"]
	if db == "" {
		db = params["user"]
	}
	if db != catalog.Database {
		return nil, types.Errorf(types.ErrInvalidCatalogName, "database \"%s\" does not exist", db)
	}
	s := &Session{eng: e, notifier: n, user: params["user"], pid: e.nextPID.Add(1)}
	s.vars = newVars()
	if app, ok := params["application_name"]; ok {
		s.vars.values["application_name"] = app
	}
	return s, nil
}
