package session

import (
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memory"
)

// memoryLimit is the memory_limit parameter as SHOW PARAMETERS shows it
// ("" without a budget).
func (e *Engine) memoryLimit() string {
	if e.cfg.Memory == nil {
		return ""
	}
	return memory.FormatBytes(e.cfg.Memory.Limit)
}

// memoryRows answers rw_catalog.rw_memory: consumer, job_id, actor_id,
// budget_bytes, used_bytes (NULL: none of its own, or unknown).
func (e *Engine) memoryRows() [][]types.Datum {
	if e.cfg.Memory == nil {
		return nil
	}
	var rows [][]types.Datum
	for _, u := range e.cfg.Memory.Usage() {
		row := []types.Datum{types.DString(u.Name), types.NullDatum, types.NullDatum, types.NullDatum, types.NullDatum}
		if u.Job != 0 {
			row[1] = types.DInt(int64(u.Job))
		}
		if u.Actor != 0 {
			row[2] = types.DInt(int64(u.Actor))
		}
		if u.Budget >= 0 {
			row[3] = types.DInt(u.Budget)
		}
		if u.Used >= 0 {
			row[4] = types.DInt(u.Used)
		}
		rows = append(rows, row)
	}
	return rows
}
