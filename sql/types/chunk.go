package types

import (
	"github.com/cockroachdb/apd/v3"
)

// DefaultChunkSize is the row count executors aim for per chunk.
const DefaultChunkSize = 1024

// Vector is one column of a chunk: values of a single type in the slice its
// Physical layout names, and a NULL flag per row. Only that slice is used.
type Vector struct {
	Type  T
	Nulls []bool
	I64   []int64
	F64   []float64
	Str   []string
	Dec   []apd.Decimal
	Iv    []IntervalValue
}

// NewVector returns an empty vector of type t with room for capacity rows.
func NewVector(t T, capacity int) *Vector {
	v := &Vector{}
	v.Init(t, capacity)
	return v
}

// Init (re)initialises v as an empty vector of type t.
func (v *Vector) Init(t T, capacity int) {
	*v = Vector{Type: t, Nulls: make([]bool, 0, capacity)}
	switch t.Physical() {
	case PhysI64:
		v.I64 = make([]int64, 0, capacity)
	case PhysF64:
		v.F64 = make([]float64, 0, capacity)
	case PhysStr:
		v.Str = make([]string, 0, capacity)
	case PhysDec:
		v.Dec = make([]apd.Decimal, 0, capacity)
	case PhysIv:
		v.Iv = make([]IntervalValue, 0, capacity)
	}
}

// Len returns the number of rows.
func (v *Vector) Len() int { return len(v.Nulls) }

// Reset empties v, keeping its capacity.
func (v *Vector) Reset() {
	v.Nulls = v.Nulls[:0]
	v.I64 = v.I64[:0]
	v.F64 = v.F64[:0]
	clear(v.Str)
	v.Str = v.Str[:0]
	v.Dec = v.Dec[:0]
	v.Iv = v.Iv[:0]
}

// IsNull reports whether row i is NULL.
func (v *Vector) IsNull(i int) bool { return v.Nulls[i] }

// Append adds d (of v's type) as the last row.
func (v *Vector) Append(d *Datum) {
	v.Nulls = append(v.Nulls, d.Null)
	switch v.Type.Physical() {
	case PhysI64:
		v.I64 = append(v.I64, d.I)
	case PhysF64:
		v.F64 = append(v.F64, d.F)
	case PhysStr:
		v.Str = append(v.Str, d.S)
	case PhysDec:
		v.Dec = append(v.Dec, apd.Decimal{})
		v.Dec[len(v.Dec)-1].Set(&d.Dec)
	case PhysIv:
		v.Iv = append(v.Iv, d.Iv)
	}
}

// AppendNull adds a NULL row.
func (v *Vector) AppendNull() {
	v.Nulls = append(v.Nulls, true)
	switch v.Type.Physical() {
	case PhysI64:
		v.I64 = append(v.I64, 0)
	case PhysF64:
		v.F64 = append(v.F64, 0)
	case PhysStr:
		v.Str = append(v.Str, "")
	case PhysDec:
		v.Dec = append(v.Dec, apd.Decimal{})
	case PhysIv:
		v.Iv = append(v.Iv, IntervalValue{})
	}
}

// AppendFrom copies row i of src (same physical layout) to the end of v.
func (v *Vector) AppendFrom(src *Vector, i int) {
	v.Nulls = append(v.Nulls, src.Nulls[i])
	switch v.Type.Physical() {
	case PhysI64:
		v.I64 = append(v.I64, src.I64[i])
	case PhysF64:
		v.F64 = append(v.F64, src.F64[i])
	case PhysStr:
		v.Str = append(v.Str, src.Str[i])
	case PhysDec:
		v.Dec = append(v.Dec, apd.Decimal{})
		v.Dec[len(v.Dec)-1].Set(&src.Dec[i])
	case PhysIv:
		v.Iv = append(v.Iv, src.Iv[i])
	}
}

// AppendRange copies rows [from, to) of src (same physical layout) to the end of v: as
// AppendFrom of each, a slice at a time where the layout allows.
func (v *Vector) AppendRange(src *Vector, from, to int) {
	switch v.Type.Physical() {
	case PhysI64:
		v.I64 = append(v.I64, src.I64[from:to]...)
	case PhysF64:
		v.F64 = append(v.F64, src.F64[from:to]...)
	case PhysStr:
		v.Str = append(v.Str, src.Str[from:to]...)
	case PhysIv:
		v.Iv = append(v.Iv, src.Iv[from:to]...)
	default:
		for i := from; i < to; i++ {
			v.AppendFrom(src, i) // a numeric's coefficient is copied, not shared
		}
		return
	}
	v.Nulls = append(v.Nulls, src.Nulls[from:to]...)
}

// Get returns row i as a datum. A numeric datum shares its coefficient with the
// vector: copy it (Datum.Copy) before mutating or keeping it past a Reset.
func (v *Vector) Get(i int) Datum {
	var d Datum
	v.GetInto(i, &d)
	return d
}

// GetInto stores row i into d without allocating.
func (v *Vector) GetInto(i int, d *Datum) {
	d.Null = v.Nulls[i]
	switch v.Type.Physical() {
	case PhysI64:
		d.I = v.I64[i]
	case PhysF64:
		d.F = v.F64[i]
	case PhysStr:
		d.S = v.Str[i]
	case PhysDec:
		d.Dec = v.Dec[i]
	case PhysIv:
		d.Iv = v.Iv[i]
	}
}

// Set overwrites row i with d.
func (v *Vector) Set(i int, d *Datum) {
	v.Nulls[i] = d.Null
	switch v.Type.Physical() {
	case PhysI64:
		v.I64[i] = d.I
	case PhysF64:
		v.F64[i] = d.F
	case PhysStr:
		v.Str[i] = d.S
	case PhysDec:
		v.Dec[i].Set(&d.Dec)
	case PhysIv:
		v.Iv[i] = d.Iv
	}
}

// Op is a row's change kind in a stream chunk.
type Op uint8

// Row ops. Batch chunks use Insert for every row.
const (
	OpInsert Op = iota
	OpDelete
	OpUpdateDelete
	OpUpdateInsert
)

func (o Op) String() string {
	switch o {
	case OpInsert:
		return "+"
	case OpDelete:
		return "-"
	case OpUpdateDelete:
		return "U-"
	case OpUpdateInsert:
		return "U+"
	}
	return "?"
}

// IsInsert reports whether the op adds a row (Insert or UpdateInsert).
func (o Op) IsInsert() bool { return o == OpInsert || o == OpUpdateInsert }

// Chunk is a batch of rows stored column by column. Ops is nil when every row
// is an Insert (batch execution); Vis is nil when every row is visible. A chunk
// may have rows but no columns (e.g. the input of count(*)), so the row count is
// kept apart.
type Chunk struct {
	Cols []Vector
	Ops  []Op
	Vis  []bool
	n    int
}

// NewChunk returns an empty chunk with columns of the given types.
func NewChunk(ts []T, capacity int) *Chunk {
	c := &Chunk{Cols: make([]Vector, len(ts))}
	for i, t := range ts {
		c.Cols[i].Init(t, capacity)
	}
	return c
}

// Len returns the number of rows, visible or not.
func (c *Chunk) Len() int { return c.n }

// SetLen sets the row count; used by operators that fill vectors directly.
func (c *Chunk) SetLen(n int) { c.n = n }

// Types returns the column types.
func (c *Chunk) Types() []T {
	ts := make([]T, len(c.Cols))
	for i := range c.Cols {
		ts[i] = c.Cols[i].Type
	}
	return ts
}

// Visible reports whether row i is visible.
func (c *Chunk) Visible(i int) bool { return c.Vis == nil || c.Vis[i] }

// Op returns row i's op.
func (c *Chunk) Op(i int) Op {
	if c.Ops == nil {
		return OpInsert
	}
	return c.Ops[i]
}

// NumVisible counts visible rows.
func (c *Chunk) NumVisible() int {
	if c.Vis == nil {
		return c.n
	}
	k := 0
	for _, v := range c.Vis[:c.n] {
		if v {
			k++
		}
	}
	return k
}

// Reset empties the chunk, keeping capacity.
func (c *Chunk) Reset() {
	for i := range c.Cols {
		c.Cols[i].Reset()
	}
	c.Ops = nil
	c.Vis = nil
	c.n = 0
}

// AppendRow appends an Insert row.
func (c *Chunk) AppendRow(row []Datum) {
	for i := range c.Cols {
		c.Cols[i].Append(&row[i])
	}
	c.RowAppended()
}

// RowAppended counts a row, an insert, whose values the caller appended to
// every column's vector itself.
func (c *Chunk) RowAppended() {
	if c.Ops != nil {
		c.Ops = append(c.Ops, OpInsert)
	}
	if c.Vis != nil {
		c.Vis = append(c.Vis, true)
	}
	c.n++
}

// AppendRange appends rows [from, to) of src as inserts: each column of c takes
// the rows of src's column at the same place (src may have more columns), a
// slice at a time where the layout allows (Vector.AppendRange).
func (c *Chunk) AppendRange(src *Chunk, from, to int) {
	if from >= to {
		return
	}
	for j := range c.Cols {
		c.Cols[j].AppendRange(&src.Cols[j], from, to)
	}
	for range to - from {
		c.RowAppended()
	}
}

// AppendRowOp appends a row with the given op.
func (c *Chunk) AppendRowOp(op Op, row []Datum) {
	if c.Ops == nil && op != OpInsert {
		c.Ops = make([]Op, c.n, c.n+DefaultChunkSize)
	}
	c.AppendRow(row)
	if c.Ops != nil {
		c.Ops[c.n-1] = op
	}
}

// AppendFrom copies row i of src (same column types) to the end of c, with its op.
func (c *Chunk) AppendFrom(src *Chunk, i int) {
	for j := range c.Cols {
		c.Cols[j].AppendFrom(&src.Cols[j], i)
	}
	op := src.Op(i)
	if c.Ops == nil && op != OpInsert {
		c.Ops = make([]Op, c.n, c.n+DefaultChunkSize)
	}
	if c.Ops != nil {
		c.Ops = append(c.Ops, op)
	}
	if c.Vis != nil {
		c.Vis = append(c.Vis, true)
	}
	c.n++
}

// Row copies row i into dst (grown as needed) and returns it.
func (c *Chunk) Row(i int, dst []Datum) []Datum {
	if cap(dst) < len(c.Cols) {
		dst = make([]Datum, len(c.Cols))
	}
	dst = dst[:len(c.Cols)]
	for j := range c.Cols {
		c.Cols[j].GetInto(i, &dst[j])
	}
	return dst
}

// Compact returns a chunk holding only the visible rows (c itself when all are).
func (c *Chunk) Compact() *Chunk {
	if c.Vis == nil {
		return c
	}
	out := NewChunk(c.Types(), c.NumVisible())
	for i := 0; i < c.n; i++ {
		if c.Vis[i] {
			out.AppendFrom(c, i)
		}
	}
	return out
}
