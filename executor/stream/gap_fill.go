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
}

// gapFillVars is the per-run state.
type gapFillVars struct {
	loaded bool
	parts  map[string][][]types.Datum // partition key -> rows in time order
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
	return e, nil
}

func (e *gapFillExec) Schema() []types.T { return e.ts }

func (e *gapFillExec) Next(ctx context.Context) (Message, error) {
	for {
		m, err := e.in.Next(ctx)
		if err != nil || m.Chunk == nil {
			return m, err
		}
		if !e.loaded {
			if err := e.load(ctx); err != nil {
				return Message{}, fmt.Errorf("gap fill: load state: %w", err)
			}
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
	tc := e.fill.TimeCol
	for _, rows := range e.parts {
		slices.SortStableFunc(rows, func(a, b []types.Datum) int { return types.Compare(e.ts[tc], &a[tc], &b[tc]) })
	}
	e.loaded = true
	return nil
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
	i := e.search(rows, row[tc].I)
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
	i := e.search(rows, row[tc].I)
	for ; i < len(rows) && rows[i][tc].I == row[tc].I; i++ {
		if e.sameKey(rows[i], row) {
			break
		}
	}
	if i >= len(rows) || rows[i][tc].I != row[tc].I {
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

func (e *gapFillExec) sameKey(a, b []types.Datum) bool {
	for _, c := range e.keyCol {
		if types.Compare(e.ts[c], &a[c], &b[c]) != 0 {
			return false
		}
	}
	return true
}
