package stream

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// The aggregates whose state is a table of their input (layouts in
// plan.StreamAgg.StateLayouts): min and max keep (group, value, stream key)
// and find the extreme as the first row of the group's range; string_agg
// keeps (group, stream key, value, separator) and concatenates the group's
// range; DISTINCT aggregates count rows per (group, arguments) and feed their
// accumulator only when a tuple appears or disappears; string_agg with an
// ORDER BY, first_value and last_value keep (group, order key, stream key,
// arguments) and read the group's range in that order, as do array_agg,
// percentile_cont, percentile_disc and mode.

// inputRow builds, in the run's scratch row, the group values of g followed
// by the columns cols of row i of c.
func (e *aggExec) inputRow(g *aggGroup, c *types.Chunk, i int, cols ...[]int) []types.Datum {
	row := e.run.inRow[:0]
	row = append(row, g.keyRow...)
	for _, cs := range cols {
		for _, col := range cs {
			row = append(row, types.Datum{})
			c.Cols[col].GetInto(i, &row[len(row)-1])
		}
	}
	return row
}

func (e *aggExec) applyMinMax(f *aggFn, g *aggGroup, acc *aggAcc, c *types.Chunk, i int, sign int64) error {
	col := f.call.Args[0]
	if c.Cols[col].Nulls[i] {
		return nil
	}
	row := e.inputRow(g, c, i, f.call.Args[:1], e.streamKey)
	t := e.run.tables[f.table]
	v := &row[len(g.keyRow)]
	if sign < 0 {
		if !acc.stale && !acc.res.Null && types.CompareNonNull(f.in, v, &acc.res) == 0 {
			acc.stale = true // the extreme may be gone: read the new one at the barrier
		}
		return t.Delete(row)
	}
	if !acc.stale && (acc.res.Null || f.better(v, &acc.res)) {
		acc.res = v.Copy()
	}
	return t.Insert(row)
}

func (e *aggExec) applyStringAgg(f *aggFn, g *aggGroup, acc *aggAcc, c *types.Chunk, i int, sign int64) error {
	if c.Cols[f.call.Args[0]].Nulls[i] {
		return nil
	}
	row := e.inputRow(g, c, i, e.streamKey, f.call.Args)
	if sep := &row[len(row)-1]; sep.Null {
		*sep = types.Datum{} // a NULL separator is an empty one
	}
	acc.stale = true
	t := e.run.tables[f.table]
	if sign < 0 {
		return t.Delete(row)
	}
	return t.Insert(row)
}

// applyOrdered records an input row of an AggInputOrdered aggregate: the
// group, each order key (after its NULL flag when the key encoding's NULL
// placement is not the one wanted), the stream key, then the arguments.
func (e *aggExec) applyOrdered(f *aggFn, g *aggGroup, acc *aggAcc, c *types.Chunk, i int, sign int64) error {
	if f.kind == expr.AggStringAgg && c.Cols[f.call.Args[0]].Nulls[i] {
		return nil // string_agg skips NULLs; first_value and last_value keep them
	}
	row := append(e.run.inRow[:0], g.keyRow...)
	for _, k := range f.order {
		null := c.Cols[k.Col].Nulls[i]
		if k.NullsFirst != k.Desc {
			row = append(row, types.DBool(null != k.NullsFirst))
		}
		row = append(row, types.Datum{})
		c.Cols[k.Col].GetInto(i, &row[len(row)-1])
	}
	for _, cols := range [][]int{e.streamKey, f.call.Args} {
		for _, col := range cols {
			row = append(row, types.Datum{})
			c.Cols[col].GetInto(i, &row[len(row)-1])
		}
	}
	if f.kind == expr.AggStringAgg {
		if sep := &row[len(row)-1]; sep.Null {
			*sep = types.Datum{} // a NULL separator is an empty one
		}
	}
	acc.stale = true
	t := e.run.tables[f.table]
	if sign < 0 {
		return t.Delete(row)
	}
	return t.Insert(row)
}

func (e *aggExec) applyDistinct(ctx context.Context, f *aggFn, g *aggGroup, acc *aggAcc, c *types.Chunk, i int, sign int64) error {
	if c.Cols[f.call.Args[0]].Nulls[i] && f.kind != expr.AggArrayAgg {
		return nil // every aggregate here but array_agg ignores a NULL (first) argument
	}
	r := &e.run
	// An integer argument over an input that only inserts: the group's
	// recent values answer for those seen lately.
	var v int64
	recent := false
	if col := &c.Cols[f.call.Args[0]]; e.appendOnly && sign > 0 && len(f.call.Args) == 1 && col.Type.Physical() == types.PhysI64 && !col.Nulls[i] {
		v, recent = col.I64[i], true
		if acc.recent != nil && acc.recent.has(v) {
			return nil
		}
	}
	t := r.tables[f.table]
	row := e.inputRow(g, c, i, f.call.Args)
	key := row
	got, found, err := t.Get(ctx, key, r.getRow)
	r.getRow = got
	if err != nil {
		return err
	}
	if e.appendOnly {
		// Nothing is retracted, so a count past 1 is never needed: a value
		// seen before changes nothing and writes nothing.
		if sign < 0 {
			return fmt.Errorf("%s over an append-only input received a retraction", f.call.Agg.Name)
		}
		if recent {
			if acc.recent == nil {
				acc.recent = new(recentValues)
			}
			acc.recent.add(v) // stored, or about to be
		}
		if found {
			return nil
		}
	}
	var n int64
	if found {
		n = got[len(key)].I
	}
	n += sign
	switch {
	case n < 0:
		return fmt.Errorf("distinct count of group (%s) below zero: the input deleted a row it never inserted", e.describeGroup(g))
	case n == 0:
		err = t.Delete(append(row, types.Datum{}))
	default:
		err = t.Insert(append(row, types.Datum{I: n}))
	}
	if err != nil {
		return err
	}
	if (sign > 0 && n == 1) || (sign < 0 && n == 0) {
		if f.kind == expr.AggStringAgg || f.kind == expr.AggArrayAgg {
			acc.stale = true
			return nil
		}
		return f.apply(acc, &row[len(g.keyRow)], sign)
	}
	return nil
}

// distinctShare is a distinct table that DISTINCT aggregates over the same
// arguments share (plan.StreamAgg.ShareDistinct): rows (group, args...,
// one count per aggregate).
type distinctShare struct {
	fns    []int   // the aggregates, by index in aggExec.fns, in count order
	pass   []int   // scratch: those whose FILTER passes the row at hand
	counts []int64 // scratch: the row's counts
}

// passes reports whether row i of c passes a FILTER, the boolean column col.
func passes(c *types.Chunk, col, i int) bool {
	fc := &c.Cols[col]
	return !fc.Nulls[i] && fc.I64[i] != 0
}

// applySharedDistinct records row i of c in a distinct table s shares, with
// one read for all its aggregates: each whose FILTER passes counts the
// argument tuple, and feeds its accumulator when the tuple appears or
// disappears for it (as applyDistinct does for a table of its own).
func (e *aggExec) applySharedDistinct(ctx context.Context, s *distinctShare, g *aggGroup, c *types.Chunk, i int, sign int64) error {
	first := e.fns[s.fns[0]]
	arg := &c.Cols[first.call.Args[0]]
	if arg.Nulls[i] {
		return nil // none of them is array_agg, the one that keeps NULLs
	}
	s.pass = s.pass[:0]
	for _, a := range s.fns {
		if f := e.fns[a]; f.call.Filter < 0 || passes(c, f.call.Filter, i) {
			s.pass = append(s.pass, a)
		}
	}
	if len(s.pass) == 0 {
		return nil
	}
	// An integer argument over an input that only inserts: the group's
	// recent values answer for those seen lately.
	var v int64
	recent := e.appendOnly && sign > 0 && len(first.call.Args) == 1 && arg.Type.Physical() == types.PhysI64
	if recent {
		v = arg.I64[i]
		seen := true
		for _, a := range s.pass {
			if rv := g.accs[a].recent; rv == nil || !rv.has(v) {
				seen = false
				break
			}
		}
		if seen {
			return nil
		}
	}
	r := &e.run
	t := r.tables[first.table]
	row := e.inputRow(g, c, i, first.call.Args)
	nk := len(row)
	got, found, err := t.Get(ctx, row, r.getRow)
	r.getRow = got
	if err != nil {
		return fmt.Errorf("%s: %w", first.call.Name, err)
	}
	s.counts = s.counts[:0]
	for k := range s.fns {
		n := int64(0)
		if found {
			n = got[nk+k].I
		}
		s.counts = append(s.counts, n)
	}
	changed := false
	for _, a := range s.pass {
		f, acc := e.fns[a], &g.accs[a]
		n := &s.counts[f.count]
		if recent {
			if acc.recent == nil {
				acc.recent = new(recentValues)
			}
			acc.recent.add(v) // stored, or about to be
		}
		if e.appendOnly {
			// Nothing is retracted, so a count past 1 is never needed.
			if sign < 0 {
				return fmt.Errorf("%s over an append-only input received a retraction", f.call.Agg.Name)
			}
			if *n > 0 {
				continue
			}
		}
		*n += sign
		if *n < 0 {
			return fmt.Errorf("%s: distinct count of group (%s) below zero: the input deleted a row it never inserted", f.call.Name, e.describeGroup(g))
		}
		changed = true
		if (sign > 0 && *n == 1) || (sign < 0 && *n == 0) {
			if err := f.apply(acc, &row[len(g.keyRow)], sign); err != nil {
				return fmt.Errorf("%s: %w", f.call.Name, err)
			}
		}
	}
	if !changed {
		return nil
	}
	live := false
	for _, n := range s.counts {
		row = append(row, types.Datum{I: n})
		live = live || n != 0
	}
	if !live {
		err = t.Delete(row)
	} else {
		err = t.Insert(row)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", first.call.Name, err)
	}
	return nil
}

// recomputeArrayAgg reads array_agg's result from its input table: the
// value is the last column of the ordered input, the one after the group in
// the distinct table.
func (e *aggExec) recomputeArrayAgg(f *aggFn, it state.RowIterator, acc *aggAcc, nk int) error {
	var vals []types.Datum
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		row := it.Row()
		v := row[len(row)-1]
		if f.input == plan.AggInputDistinct {
			v = row[nk]
		}
		vals = append(vals, v)
	}
	acc.res = f.call.Agg.ArrayAggResult(vals)
	return nil
}

// recomputeOrdSet feeds the group's ordered input (the arguments are the
// last columns of each row) to a fresh percentile_cont, percentile_disc or
// mode state and takes its result.
func recomputeOrdSet(f *aggFn, it state.RowIterator, acc *aggAcc) error {
	s := f.call.Agg.NewState()
	nargs := len(f.call.Args)
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		row := it.Row()
		if err := s.Add(row[len(row)-nargs:]); err != nil {
			return err
		}
	}
	acc.res = s.Result().Copy()
	return nil
}

// better reports whether v beats the current extreme cur of a min or max.
func (f *aggFn) better(v, cur *types.Datum) bool {
	cmp := types.CompareNonNull(f.in, v, cur)
	if f.kind == expr.AggMax {
		return cmp > 0
	}
	return cmp < 0
}

// recompute reads g's result of a min, max, string_agg, first_value or
// last_value from its input table.
func (e *aggExec) recompute(ctx context.Context, f *aggFn, g *aggGroup, acc *aggAcc) (err error) {
	t := e.run.tables[f.table]
	vnode, start := e.groupPrefix(t, g)
	it, err := t.Iter(ctx, state.IterOptions{Vnode: vnode, Range: state.KeyRange{Start: start, End: codec.PrefixEnd(start)}})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	nk := len(g.keyRow)
	acc.stale = false
	acc.res = types.NullDatum
	if f.input == plan.AggInputMinMax || f.kind == expr.AggFirstValue || f.kind == expr.AggLastValue {
		switch err := it.Next(); err {
		case nil:
			row := it.Row()
			if f.input == plan.AggInputMinMax {
				acc.res = row[nk].Copy()
			} else {
				acc.res = row[len(row)-1].Copy() // the value, the last column
			}
		case io.EOF:
		default:
			return err
		}
		return nil
	}
	if f.kind == expr.AggArrayAgg {
		return e.recomputeArrayAgg(f, it, acc, nk)
	}
	if f.kind == expr.AggPercentileCont || f.kind == expr.AggPercentileDisc || f.kind == expr.AggMode {
		return recomputeOrdSet(f, it, acc)
	}
	// string_agg: the value and separator are the last two columns of the
	// materialized input, the two after the group of the distinct table.
	var b strings.Builder
	first := true
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		row := it.Row()
		v, sep := &row[len(row)-2], &row[len(row)-1]
		if f.input == plan.AggInputDistinct {
			v, sep = &row[nk], &row[nk+1]
		}
		if !first && !sep.Null {
			b.WriteString(sep.S)
		}
		b.WriteString(v.S)
		first = false
	}
	if !first {
		acc.res = types.DString(b.String())
	}
	return nil
}
