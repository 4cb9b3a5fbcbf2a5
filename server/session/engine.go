package session

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

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

	// ddl serialises catalog changes so descriptors persist in the order they publish.
	ddl     sync.Mutex
	nextPID atomic.Int32
}

// Open loads the persisted catalog from store and returns the engine.
func Open(ctx context.Context, store storage.KV, logger *slog.Logger) (*Engine, error) {
	if logger == nil {
		logger = slog.Default()
	}
	cat := catalog.New(catalog.SystemRelations())
	rels, nextID, err := persist.Load(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("open engine: %w", err)
	}
	cat.Load(rels, nextID)
	logger.Info("catalog loaded", "relations", len(rels), "committed_epoch", store.CommittedEpoch())
	return &Engine{Catalog: cat, Store: store, Coord: coordinator.New(store), Logger: logger}, nil
}

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
