package stream

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"sync/atomic"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// lateRows counts the rows every watermark filter dropped as late.
var lateRows atomic.Int64

// LateRows returns how many rows watermark filters have dropped as late
// since the process started.
func LateRows() int64 { return lateRows.Load() }

// watermarkFilterExec generates the watermarks of a WATERMARK FOR clause
// (plan.StreamWatermarkFilter), per source split: it tracks the greatest
// value of its column in each split's rows, and at each barrier raises
// each split's watermark to that less the delay and the actor's watermark
// to the least of its splits' (a split that has sent no row yet does not
// count), records them in its state rows and sends the actor's watermark
// (when it rose) before the barrier. An inserted row below its own split's
// watermark is dropped as late. No watermark ever falls, across restarts
// too. While the backfill below it runs, the watermarks are held: no row is
// late and none is sent (a backfill's rows are not in time order).
type watermarkFilterExec struct {
	watermarkFilterConfig
	watermarkFilterVars
}

// WatermarkEnv is what a watermark filter is told about the executors below it.
type WatermarkEnv struct {
	// SplitCol is the input column naming each row's split (a shared
	// source's hidden split column), or -1: then a chunk's split is its
	// message's Split ("" for a table's or a view's rows, one split).
	SplitCol int
	// Backfill is the backfill below the filter (nil: none); the
	// watermarks are held until it is done.
	Backfill Backfiller
	// Cap, when not nil, is the state table of the watermark filter of the
	// job writing the view the filter reads: the watermark never rises above
	// the one that job has committed as sent on (the view's rows of a split
	// behind the others are below the greatest seen less the delay, never
	// below that).
	Cap *plan.StateTable
}

// SplitColumn returns the column of schema (the columns of a scan of rel)
// that names each row's source split, or -1.
func SplitColumn(rel *catalog.Relation, schema []plan.Field) int {
	for i, f := range schema {
		if !f.Hidden {
			continue
		}
		if j := rel.ColumnIndex(f.Name); j >= 0 && rel.Columns[j].Meta == connector.MetaSplit {
			return i
		}
	}
	return -1
}

// watermarkFilterConfig is the fixed configuration.
type watermarkFilterConfig struct {
	actx  *ActorContext
	in    Executor
	ts    []types.T
	col   int
	minus expr.Expr // $0 - delay
	table *state.Table
	env   WatermarkEnv
	cap   *state.Table // env.Cap opened (nil: none)
}

// The state rows' keys: a split's is negative (splitKey), the actor's
// watermark's is actorKey; a key at or above zero is an actor's row of the
// layout before watermarks were per split (its watermark is a floor of the
// actor's, and the row is deleted once the actor's is recorded).
const actorKey = math.MinInt64

// splitKey is split's state row key: a hash of its name in [-2^62, -1].
func splitKey(split string) int64 {
	h := fnv.New64a()
	h.Write([]byte(split))
	return -int64(h.Sum64()>>2) - 1
}

// wmSplit is one split's watermark and the greatest value seen in it.
type wmSplit struct {
	wm, max, stored          types.Datum
	hasWM, hasMax, hasStored bool
}

// watermarkFilterVars is the per-run state.
type watermarkFilterVars struct {
	loaded bool
	splits map[int64]*wmSplit
	// last caches the split of the latest row.
	lastName     string
	last         *wmSplit
	out          types.Datum // the actor's watermark (when hasOut)
	hasOut       bool
	sent         bool // out was sent downstream
	outStored    types.Datum
	hasOutStored bool
	legacy       []int64 // old-layout rows to delete
	late         int64
	outQ         []Message
	done         bool
	ectx         expr.Ctx
	wmRow        [2]types.Datum
	candBuf      [1]types.Datum
}

// NewWatermarkFilter returns the executor of a StreamWatermarkFilter; its
// state table is the node's first.
func NewWatermarkFilter(actx *ActorContext, n *plan.StreamWatermarkFilter, in Executor, env WatermarkEnv) (Executor, error) {
	ts := in.Schema()
	if n.Col < 0 || n.Col >= len(ts) {
		return nil, fmt.Errorf("watermark filter: column %d out of %d", n.Col, len(ts))
	}
	if id := ts[n.Col].ID; id != types.Timestamp && id != types.Timestamptz {
		return nil, fmt.Errorf("watermark filter: column has type %s, want a timestamp", ts[n.Col])
	}
	if env.SplitCol >= len(ts) || env.SplitCol >= 0 && ts[env.SplitCol].ID != types.Varchar {
		return nil, fmt.Errorf("watermark filter: split column %d is not a varchar of %d columns", env.SplitCol, len(ts))
	}
	minus, err := expr.Call("-", []expr.Expr{expr.Column(0, ts[n.Col]), expr.Literal(types.DInterval(n.Delay), types.TInterval)})
	if err != nil {
		return nil, fmt.Errorf("watermark filter: column - delay: %w", err)
	}
	if len(n.State()) == 0 {
		return nil, fmt.Errorf("watermark filter: no state table assigned")
	}
	st := n.State()[0]
	if len(st.Types) != 2 || st.Types[1] != ts[n.Col] {
		return nil, fmt.Errorf("watermark filter: state table has types %v, want (int8, %s)", st.Types, ts[n.Col])
	}
	t, err := actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist})
	if err != nil {
		return nil, fmt.Errorf("watermark filter: %w", err)
	}
	var ct *state.Table
	if c := env.Cap; c != nil {
		if len(c.Types) != 2 || c.Types[1] != ts[n.Col] {
			return nil, fmt.Errorf("watermark filter: the view's watermark table has types %v, want (int8, %s)", c.Types, ts[n.Col])
		}
		// Another job's: read as committed, never written.
		if ct, err = state.New(actx.Store, state.Schema{TableID: c.ID, Types: c.Types, PK: c.PK, PKDesc: c.PKDesc, DistKey: c.Dist}); err != nil {
			return nil, fmt.Errorf("watermark filter: %w", err)
		}
	}
	return &watermarkFilterExec{
		watermarkFilterConfig: watermarkFilterConfig{actx: actx, in: in, ts: ts, col: n.Col, minus: minus, table: t, env: env, cap: ct},
		watermarkFilterVars:   watermarkFilterVars{splits: map[int64]*wmSplit{}},
	}, nil
}

func (e *watermarkFilterExec) Schema() []types.T { return e.ts }

// Late returns how many rows this executor dropped as late.
func (e *watermarkFilterExec) Late() int64 { return e.late }

func (e *watermarkFilterExec) Next(ctx context.Context) (Message, error) {
	for {
		if m, ok := popQueued(&e.outQ); ok {
			return m, nil
		}
		if e.done {
			return Message{}, io.EOF
		}
		m, err := e.in.Next(ctx)
		if err != nil {
			return m, err
		}
		if !e.loaded {
			if err := e.load(ctx); err != nil {
				return Message{}, fmt.Errorf("watermark filter: %w", err)
			}
			e.loaded = true
		}
		switch {
		case m.Chunk != nil:
			if c := e.filter(m.Chunk, m.Split); c != nil {
				return Message{Chunk: c, Split: m.Split}, nil
			}
		case m.Barrier != nil:
			if err := e.barrier(ctx); err != nil {
				return Message{}, fmt.Errorf("watermark filter: %w", err)
			}
			e.outQ = append(e.outQ, m)
			e.done = m.Barrier.Stops(e.actx.ID)
		case m.Watermark != nil:
			// A watermark of the input on another column still holds.
			if m.Watermark.Col != e.col {
				return m, nil
			}
		}
	}
}

// holding reports whether the backfill below still runs.
func (e *watermarkFilterExec) holding() bool {
	return e.env.Backfill != nil && !e.env.Backfill.BackfillDone()
}

// split returns the state of the split named name.
func (e *watermarkFilterExec) split(name string) *wmSplit {
	if e.last != nil && name == e.lastName {
		return e.last
	}
	k := splitKey(name)
	s := e.splits[k]
	if s == nil {
		s = &wmSplit{}
		e.splits[k] = s
	}
	e.lastName, e.last = name, s
	return s
}

// filter drops the inserts of c below their split's watermark and notes
// the greatest value each split has shown; nil when nothing is left. A
// chunk without a split column is all of split msgSplit.
func (e *watermarkFilterExec) filter(c *types.Chunk, msgSplit string) *types.Chunk {
	v := &c.Cols[e.col]
	t := e.ts[e.col]
	var names *types.Vector
	if e.env.SplitCol >= 0 {
		names = &c.Cols[e.env.SplitCol]
	}
	var s *wmSplit
	if names == nil {
		s = e.split(msgSplit)
	}
	n := c.Len()
	var vis []bool
	kept := 0
	for i := 0; i < n; i++ {
		if !c.Visible(i) {
			continue
		}
		if v.Nulls[i] {
			kept++
			continue
		}
		if names != nil {
			name := ""
			if !names.Nulls[i] {
				name = names.Str[i]
			}
			s = e.split(name)
		}
		d := types.Datum{I: v.I64[i]}
		if c.Op(i).IsInsert() && s.hasWM && types.Compare(t, &d, &s.wm) < 0 {
			if vis == nil {
				vis = e.visibility(c)
			}
			vis[i] = false
			e.late++
			lateRows.Add(1)
			continue
		}
		kept++
		if !s.hasMax || types.Compare(t, &d, &s.max) > 0 {
			s.max, s.hasMax = d, true
		}
	}
	if kept == 0 {
		return nil
	}
	if vis == nil {
		return c
	}
	out := *c
	out.Vis = vis
	return &out
}

// visibility returns a copy of c's visibility (all true when it has none).
func (e *watermarkFilterExec) visibility(c *types.Chunk) []bool {
	vis := make([]bool, c.Len())
	for i := range vis {
		vis[i] = c.Visible(i)
	}
	return vis
}

// barrier raises each split's watermark to the greatest value it showed
// less the delay and the actor's to the least of the splits', records
// those that rose and queues the actor's watermark when it rose; nothing
// while the backfill below runs.
func (e *watermarkFilterExec) barrier(ctx context.Context) error {
	if e.holding() {
		return nil
	}
	t := e.ts[e.col]
	limit, limited, err := e.readCap(ctx)
	if err != nil {
		return err
	}
	var least *types.Datum
	for k, s := range e.splits {
		if s.hasMax && (e.cap == nil || limited) {
			e.candBuf[0] = s.max
			// max - delay out of the timestamp range (at its very start)
			// leaves the watermark where it is.
			d, err := e.minus.EvalRow(&e.ectx, e.candBuf[:])
			if err == nil && !d.Null && limited && types.Compare(t, &d, &limit) > 0 {
				d = limit
			}
			if err == nil && !d.Null && (!s.hasWM || types.Compare(t, &d, &s.wm) > 0) {
				s.wm, s.hasWM = d, true
			}
		}
		if !s.hasWM {
			continue
		}
		if !s.hasStored || types.Compare(t, &s.wm, &s.stored) > 0 {
			if err := e.record(k, s.wm); err != nil {
				return err
			}
			s.stored, s.hasStored = s.wm, true
		}
		if least == nil || types.Compare(t, &s.wm, least) < 0 {
			least = &s.wm
		}
	}
	if least != nil && (!e.hasOut || types.Compare(t, least, &e.out) > 0) {
		e.out, e.hasOut, e.sent = *least, true, false
	}
	if e.hasOut && (!e.hasOutStored || types.Compare(t, &e.out, &e.outStored) > 0) {
		if err := e.record(actorKey, e.out); err != nil {
			return err
		}
		e.outStored, e.hasOutStored = e.out, true
		for _, k := range e.legacy {
			e.wmRow[0], e.wmRow[1] = types.DInt(k), types.NullDatum
			if err := e.table.Delete(e.wmRow[:]); err != nil {
				return fmt.Errorf("delete old watermark row: %w", err)
			}
		}
		e.legacy = nil
	}
	if e.hasOut && !e.sent {
		e.sent = true
		e.outQ = append(e.outQ, WatermarkMsg(&Watermark{Col: e.col, Val: e.out.Copy()}))
	}
	return nil
}

// readCap reads the watermark the view's job has committed as sent on
// (the greatest of its old-layout rows, from before watermarks were per
// split); false when there is no cap table or no watermark yet.
func (e *watermarkFilterExec) readCap(ctx context.Context) (wm types.Datum, ok bool, err error) {
	if e.cap == nil {
		return wm, false, nil
	}
	t := e.ts[e.col]
	var legacy types.Datum
	hasLegacy := false
	err = eachRow(ctx, e.cap, func(row []types.Datum) {
		switch k := row[0].I; {
		case row[1].Null, k < 0 && k != actorKey:
		case k == actorKey:
			wm, ok = row[1].Copy(), true
		case !hasLegacy || types.Compare(t, &row[1], &legacy) > 0:
			legacy, hasLegacy = row[1].Copy(), true
		}
	})
	if err != nil {
		return wm, false, fmt.Errorf("read the view's watermark: %w", err)
	}
	if !ok && hasLegacy {
		return legacy, true, nil
	}
	return wm, ok, nil
}

// record writes the state row of key.
func (e *watermarkFilterExec) record(key int64, wm types.Datum) error {
	e.wmRow[0], e.wmRow[1] = types.DInt(key), wm
	if err := e.table.Insert(e.wmRow[:]); err != nil {
		return fmt.Errorf("record watermark: %w", err)
	}
	return nil
}

// load reads the committed watermarks: each split's and the actor's (the
// greatest of the old layout's rows counts as the actor's). The actor's is
// sent again at the first barrier.
func (e *watermarkFilterExec) load(ctx context.Context) (err error) {
	it, err := e.table.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
	if err != nil {
		return fmt.Errorf("read watermarks: %w", err)
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	t := e.ts[e.col]
	for {
		err := it.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read watermarks: %w", err)
		}
		row := it.Row()
		if row[1].Null {
			continue
		}
		wm := row[1].Copy()
		switch k := row[0].I; {
		case k == actorKey:
			e.outStored, e.hasOutStored = wm, true
		case k >= 0:
			e.legacy = append(e.legacy, k)
		default:
			e.splits[k] = &wmSplit{wm: wm, hasWM: true, stored: wm, hasStored: true}
			continue
		}
		if !e.hasOut || types.Compare(t, &wm, &e.out) > 0 {
			e.out, e.hasOut = wm, true
		}
	}
}
