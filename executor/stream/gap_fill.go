package stream

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/tributary/tributary/executor/window"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// gapFillExec maintains GAP_FILL (plan.StreamGapFill) on one actor. It keeps
// every input row with a time in a state table and, in memory, each
// partition's rows in time order (loaded from the table at start). The
// filled rows between two neighbours depend only on those two rows, so a
// change retracts the filled rows of the gap it touches by computing them
// again: an insert splits a gap (its filled rows go, the two new gaps' come),
// a delete joins two. Rows with a NULL time pass through without filling.
//
// On window close (eowc) the input only inserts; nothing is emitted until a
// watermark on the time column passes a row: then each partition's rows
// below it are emitted in time order, each after the filled rows between it
// and the partition's last emitted row (kept in the emitted table, the only
// emitted row still stored). Rows at or before that row's time are late and
// dropped.
type gapFillExec struct {
	gapFillConfig
	gapFillVars
}

// gapFillConfig is the fixed configuration.
type gapFillConfig struct {
	in     Executor
	ts     []types.T
	fill   *plan.GapFill
	step   int64
	table  *state.Table
	keyCol []int // the input stream key, to tell rows of the same time apart
	partTs []types.T

	eowc    bool
	emitted *state.Table // eowc: each partition's last emitted row
}

// gapFillVars is the per-run state.
type gapFillVars struct {
	loaded bool
	parts  map[string][][]types.Datum // partition key -> rows in time order
	last   map[string][]types.Datum   // eowc: partition key -> last emitted row
	queued []Message
	out    *types.Chunk
	gap    [][]types.Datum // scratch
	pbuf   []byte
}

// NewGapFill returns the executor of a StreamGapFill; its state table is
// the node's first.
func NewGapFill(actx *ActorContext, n *plan.StreamGapFill, in Executor) (Executor, error) {
	if len(n.State()) == 0 {
		return nil, fmt.Errorf("gap fill: no state table assigned")
	}
	st := n.State()[0]
	ts := in.Schema()
	if len(st.Types) != len(ts) || len(n.Fill.Fills) != len(ts) {
		return nil, fmt.Errorf("gap fill: state table has %d columns, fills %d, input %d", len(st.Types), len(n.Fill.Fills), len(ts))
	}
	t, err := actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist})
	if err != nil {
		return nil, fmt.Errorf("gap fill: %w", err)
	}
	e := &gapFillExec{gapFillConfig: gapFillConfig{in: in, ts: ts, fill: n.Fill, step: plan.WindowMicros(n.Fill.Step),
		table: t, keyCol: n.Input.StreamKey()}}
	for _, p := range n.Fill.PartitionBy {
		e.partTs = append(e.partTs, ts[p])
	}
	if n.EmitOnWindowClose {
		if len(n.State()) < 2 {
			return nil, fmt.Errorf("gap fill: no emitted-rows table assigned")
		}
		st := n.State()[1]
		if e.emitted, err = actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist}); err != nil {
			return nil, fmt.Errorf("gap fill: %w", err)
		}
		e.eowc = true
	}
	return e, nil
}

func (e *gapFillExec) Schema() []types.T { return e.ts }

func (e *gapFillExec) Next(ctx context.Context) (Message, error) {
	for {
		if m, ok := popQueued(&e.queued); ok {
			return m, nil
		}
		m, err := e.in.Next(ctx)
		if err != nil || m.Barrier != nil {
			return m, err
		}
		if !e.loaded {
			if err := e.load(ctx); err != nil {
				return Message{}, fmt.Errorf("gap fill: load state: %w", err)
			}
		}
		if m.Watermark != nil {
			if !e.eowc || m.Watermark.Col != e.fill.TimeCol {
				if e.eowc {
					continue // other columns' watermarks do not hold for the filled rows
				}
				return m, nil
			}
			out, err := e.close(m.Watermark.Val)
			if err != nil {
				return Message{}, fmt.Errorf("gap fill: %w", err)
			}
			if out == nil {
				return m, nil
			}
			e.queued = append(e.queued, m)
			return ChunkMsg(out), nil
		}
		if m.Chunk == nil {
			return m, nil
		}
		if e.eowc {
			if err := e.buffer(m.Chunk); err != nil {
				return Message{}, fmt.Errorf("gap fill: %w", err)
			}
			continue
		}
		out, err := e.process(m.Chunk)
		if err != nil {
			return Message{}, fmt.Errorf("gap fill: %w", err)
		}
		if out != nil {
			return ChunkMsg(out), nil
		}
	}
}

// load reads the stored rows into parts.
func (e *gapFillExec) load(ctx context.Context) error {
	e.parts = map[string][][]types.Datum{}
	it, err := e.table.Iter(ctx, state.IterOptions{Vnode: int(e.table.VnodeOfPK(nil))})
	if err != nil {
		return err
	}
	for {
		if err = it.Next(); err != nil {
			break
		}
		row := slices.Clone(it.Row())
		k := e.partKey(row)
		e.parts[k] = append(e.parts[k], row)
	}
	if err == io.EOF {
		err = nil
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, rows := range e.parts {
		slices.SortStableFunc(rows, e.compare)
	}
	e.last = map[string][]types.Datum{}
	if e.eowc {
		if err := e.loadEmitted(ctx); err != nil {
			return err
		}
	}
	e.loaded = true
	return nil
}

// loadEmitted reads each partition's last emitted row.
func (e *gapFillExec) loadEmitted(ctx context.Context) error {
	it, err := e.emitted.Iter(ctx, state.IterOptions{Vnode: int(e.emitted.VnodeOfPK(nil))})
	if err != nil {
		return err
	}
	for {
		if err = it.Next(); err != nil {
			break
		}
		row := slices.Clone(it.Row())
		e.last[e.partKey(row)] = row
	}
	if err == io.EOF {
		err = nil
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}

// buffer stores an insert-only chunk's rows until a watermark passes them;
// late rows and rows without a time are dropped.
func (e *gapFillExec) buffer(c *types.Chunk) error {
	tc := e.fill.TimeCol
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) || !c.Op(i).IsInsert() {
			continue
		}
		row := c.Row(i, nil)
		if row[tc].Null {
			continue
		}
		k := e.partKey(row)
		if last := e.last[k]; last != nil && row[tc].I <= last[tc].I {
			continue
		}
		rows := e.parts[k]
		e.parts[k] = slices.Insert(rows, e.position(rows, row), row)
		if err := e.table.Insert(row); err != nil {
			return err
		}
	}
	return nil
}

// close emits, per partition, the rows below watermark w with the filled
// rows before each (nil when there are none).
func (e *gapFillExec) close(w types.Datum) (*types.Chunk, error) {
	if w.Null {
		return nil, nil
	}
	e.out = nil
	keys := make([]string, 0, len(e.parts))
	for k := range e.parts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		rows := e.parts[k]
		n := e.search(rows, w.I)
		if n == 0 {
			continue
		}
		last := e.last[k]
		for _, r := range rows[:n] {
			if last != nil {
				if err := e.emitGap(types.OpInsert, last, r); err != nil {
					return nil, err
				}
			}
			e.emit(types.OpInsert, r)
			if err := e.table.Delete(r); err != nil {
				return nil, err
			}
			last = r
		}
		if old := e.last[k]; old != nil {
			if err := e.emitted.Delete(old); err != nil {
				return nil, err
			}
		}
		if err := e.emitted.Insert(last); err != nil {
			return nil, err
		}
		e.last[k] = last
		if n == len(rows) {
			delete(e.parts, k)
		} else {
			e.parts[k] = rows[n:]
		}
	}
	return e.out, nil
}

func (e *gapFillExec) partKey(row []types.Datum) string {
	e.pbuf = e.pbuf[:0]
	for i, p := range e.fill.PartitionBy {
		e.pbuf = codec.EncodeRow(e.pbuf, e.partTs[i:i+1], row[p:p+1])
	}
	return string(e.pbuf)
}

// process applies one chunk's changes in order and returns their output
// (nil when empty).
func (e *gapFillExec) process(c *types.Chunk) (*types.Chunk, error) {
	e.out = nil
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		row := c.Row(i, nil)
		var err error
		if c.Op(i).IsInsert() {
			err = e.insert(row)
		} else {
			err = e.delete(row)
		}
		if err != nil {
			return nil, err
		}
	}
	return e.out, nil
}

func (e *gapFillExec) emit(op types.Op, row []types.Datum) {
	if e.out == nil {
		e.out = types.NewChunk(e.ts, 64)
	}
	e.out.AppendRowOp(op, row)
}

// emitGap emits the filled rows between a and b with op.
func (e *gapFillExec) emitGap(op types.Op, a, b []types.Datum) error {
	var err error
	if e.gap, err = window.AppendGapRows(e.gap[:0], e.fill, e.ts, a, b, e.step); err != nil {
		return err
	}
	for _, r := range e.gap {
		e.emit(op, r)
	}
	return nil
}

// search returns the index of the first row of rows at or after time t.
func (e *gapFillExec) search(rows [][]types.Datum, t int64) int {
	tc := e.fill.TimeCol
	return sort.Search(len(rows), func(i int) bool { return rows[i][tc].I >= t })
}

func (e *gapFillExec) insert(row []types.Datum) error {
	tc := e.fill.TimeCol
	if row[tc].Null {
		e.emit(types.OpInsert, row)
		return nil
	}
	k := e.partKey(row)
	rows := e.parts[k]
	i := e.position(rows, row)
	var prev, next []types.Datum
	if i > 0 {
		prev = rows[i-1]
	}
	if i < len(rows) {
		next = rows[i]
	}
	if prev != nil && next != nil {
		if err := e.emitGap(types.OpDelete, prev, next); err != nil {
			return err
		}
	}
	if prev != nil {
		if err := e.emitGap(types.OpInsert, prev, row); err != nil {
			return err
		}
	}
	e.emit(types.OpInsert, row)
	if next != nil {
		if err := e.emitGap(types.OpInsert, row, next); err != nil {
			return err
		}
	}
	e.parts[k] = slices.Insert(rows, i, row)
	return e.table.Insert(row)
}

func (e *gapFillExec) delete(row []types.Datum) error {
	tc := e.fill.TimeCol
	if row[tc].Null {
		e.emit(types.OpDelete, row)
		return nil
	}
	k := e.partKey(row)
	rows := e.parts[k]
	i := e.position(rows, row)
	if i >= len(rows) || e.compare(rows[i], row) != 0 {
		return fmt.Errorf("deleted row at time %d is not in the state", row[tc].I)
	}
	var prev, next []types.Datum
	if i > 0 {
		prev = rows[i-1]
	}
	if i+1 < len(rows) {
		next = rows[i+1]
	}
	old := rows[i]
	if prev != nil {
		if err := e.emitGap(types.OpDelete, prev, old); err != nil {
			return err
		}
	}
	e.emit(types.OpDelete, old)
	if next != nil {
		if err := e.emitGap(types.OpDelete, old, next); err != nil {
			return err
		}
	}
	if prev != nil && next != nil {
		if err := e.emitGap(types.OpInsert, prev, next); err != nil {
			return err
		}
	}
	rows = slices.Delete(rows, i, i+1)
	if len(rows) == 0 {
		delete(e.parts, k)
	} else {
		e.parts[k] = rows
	}
	return e.table.Delete(old)
}

// compare orders a partition's rows by time, then input key: the state
// table's order, so the order (and with it each row's neighbours, on which
// the filled rows depend) is the same after a restart.
func (e *gapFillExec) compare(a, b []types.Datum) int {
	tc := e.fill.TimeCol
	if c := types.Compare(e.ts[tc], &a[tc], &b[tc]); c != 0 {
		return c
	}
	for _, k := range e.keyCol {
		if c := types.Compare(e.ts[k], &a[k], &b[k]); c != 0 {
			return c
		}
	}
	return 0
}

// position returns the index of the first row of rows not before row.
func (e *gapFillExec) position(rows [][]types.Datum, row []types.Datum) int {
	return sort.Search(len(rows), func(i int) bool { return e.compare(rows[i], row) >= 0 })
}
