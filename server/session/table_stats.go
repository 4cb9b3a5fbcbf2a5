package session

import (
	"context"
	"fmt"
	"io"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
)

// tableStatsRows answers rw_catalog.rw_table_stats: for every stored table
// (the rows of a table, materialized view or index, and each state table of
// a streaming job) its key count and key and value bytes, counted exactly
// by scanning its keys at the committed epoch. The scan costs about a
// second per million keys, so sample it every few seconds, not per row.
func (e *Engine) tableStatsRows() ([][]types.Datum, error) {
	// The system-row hook has no context; a scan of committed data neither
	// blocks on other work nor outlives the query by much.
	ctx := context.Background()
	epoch := e.Store.CommittedEpoch()
	release, err := e.Store.Pin(epoch)
	if err != nil {
		return nil, fmt.Errorf("rw_table_stats: pin epoch %d: %w", epoch, err)
	}
	defer release()
	var rows [][]types.Datum
	count := func(id, job uint32) error {
		n, keyBytes, valueBytes, err := e.tableStats(ctx, id, epoch)
		if err != nil {
			return err
		}
		rows = append(rows, []types.Datum{types.DInt(int64(id)), types.DInt(n), types.DInt(keyBytes),
			types.DInt(valueBytes), types.DInt(int64(job))})
		return nil
	}
	for _, rel := range e.Catalog.Relations() {
		switch rel.Kind {
		case catalog.KindTable, catalog.KindMaterializedView, catalog.KindIndex:
			if err := count(rel.ID, rel.ID); err != nil {
				return nil, err
			}
		}
		for _, id := range rel.StateTables {
			if err := count(id, rel.ID); err != nil {
				return nil, err
			}
		}
	}
	return rows, nil
}

// tableStats counts table id's keys and their bytes at epoch.
func (e *Engine) tableStats(ctx context.Context, id uint32, epoch uint64) (keys, keyBytes, valueBytes int64, err error) {
	lo, hi := codec.TableSpan(id)
	it, err := e.Store.Scan(ctx, lo, hi, epoch)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("rw_table_stats: scan table %d: %w", id, err)
	}
	for {
		if err = it.Next(); err != nil {
			break
		}
		keys++
		keyBytes += int64(len(it.Key()))
		valueBytes += int64(len(it.Value()))
	}
	cerr := it.Close()
	if err != io.EOF {
		return 0, 0, 0, fmt.Errorf("rw_table_stats: scan table %d: %w", id, err)
	}
	if cerr != nil {
		return 0, 0, 0, fmt.Errorf("rw_table_stats: scan table %d: %w", id, cerr)
	}
	return keys, keyBytes, valueBytes, nil
}
