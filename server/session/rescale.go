package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// maxParallelism bounds ALTER ... SET PARALLELISM (vnodes are 256).
const maxParallelism = 256

// alterParallelism is ALTER MATERIALIZED VIEW | SINK | TABLE | SOURCE name
// SET PARALLELISM {= | TO} {n | DEFAULT}: the job's new parallelism is
// recorded with it, then every job is rebuilt at once over the epoch just
// committed (coordinator.Streaming.Rebuild): actors resume from their state in storage,
// which is keyed by vnode, so nothing is copied.
func (s *Session) alterParallelism(ctx context.Context, n *parser.Alter) (pgwire.Result, error) {
	n2 := 0
	if !n.Default && !strings.EqualFold(n.Value, "default") {
		v, err := strconv.Atoi(strings.TrimSpace(n.Value))
		if err != nil || v < 1 || v > maxParallelism {
			return nil, types.Errorf(types.ErrInvalidParameter, "parallelism must be an integer between 1 and %d, or DEFAULT", maxParallelism)
		}
		n2 = v
	}
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	rel, err := s.lookup(n.Name.Schema, n.Name.Name)
	if err != nil {
		return nil, err
	}
	if want := dropKinds[n.Kind]; rel.Kind != want {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a %s", rel.Name, want)
	}
	splitTable := isConnectorTable(rel) && rel.Connector.Splits
	switch {
	case rel.Kind == catalog.KindTable && isConnectorTable(rel) && rel.Connector.ReadOnly && !splitTable:
		return nil, types.Errorf(types.ErrUnsupported, "CDC table %s is read by one actor: its parallelism cannot be changed (a CDC table created with backfill.parallelism > 1 has key ranges as splits, which its actors share out; or ALTER the materialized views and sinks on it)", rel.Name)
	case rel.Kind == catalog.KindTable && isConnectorTable(rel) && !splitTable:
		return nil, types.Errorf(types.ErrUnsupported, "the source job of table %s reads its splits in one actor (a generator's table, or a Kafka table created before Tributary could rescale one): its parallelism cannot be changed", rel.Name)
	case rel.Kind == catalog.KindTable && !splitTable:
		return nil, types.Errorf(types.ErrUnsupported, "table %s has no streaming job of its own (its writes are applied by each statement): ALTER the materialized views and sinks on it", rel.Name)
	case rel.Kind == catalog.KindSource && !isSharedSource(rel):
		return nil, types.Errorf(types.ErrUnsupported, "source %s has no reader job of its own (each job on it reads it): ALTER the materialized views and sinks on it", rel.Name)
	case rel.Job == nil && !isSharedSource(rel) && !splitTable:
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a streaming job", rel.Name)
	}
	updated := *rel
	js := catalog.JobSettings{} // never set: the default
	if rel.Job != nil {
		js = *rel.Job
	}
	js.Parallelism = n2
	updated.Job = &js
	if err := s.replaceRelation(ctx, &updated); err != nil {
		return nil, err
	}
	if err := s.eng.rescheduleLocked(ctx); err != nil {
		return nil, fmt.Errorf("alter %s %s: %w", rel.Kind, rel.Name, err)
	}
	return tagOnly("ALTER_" + strings.ToUpper(strings.ReplaceAll(rel.Kind.String(), " ", "_"))), nil
}

// rescheduleLocked rebuilds every streaming job from the catalog with the
// parallelism it records (coordinator.Streaming.Rebuild; the caller holds
// ddl).
func (e *Engine) rescheduleLocked(ctx context.Context) error { return e.streaming.Rebuild(ctx) }

// fragmentRows answers rw_catalog.rw_fragments.
func (e *Engine) fragmentRows() [][]types.Datum {
	// A connector table's source job runs under its state table's id: show
	// the table's.
	owner := map[uint32]uint32{}
	for _, r := range e.Catalog.Relations() {
		if isConnectorTable(r) {
			owner[r.StateTables[0]] = r.ID
		}
	}
	var rows [][]types.Datum
	for _, f := range e.coord().Fragments() {
		if id, ok := owner[f.Job]; ok {
			f.Job = id
		}
		ids := make([]string, len(f.Actors))
		for i, a := range f.Actors {
			ids[i] = strconv.FormatUint(uint64(a), 10)
		}
		counts := make([]string, len(f.Vnodes))
		for i, n := range f.Vnodes {
			counts[i] = strconv.Itoa(n)
		}
		rows = append(rows, []types.Datum{types.DInt(int64(f.Job)), types.DInt(int64(f.ID)), types.DString(f.Kind),
			types.DInt(int64(len(f.Actors))), types.DString(strings.Join(ids, ",")), types.DString(strings.Join(counts, ","))})
	}
	return rows
}
