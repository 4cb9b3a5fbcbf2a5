package postgres

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

// span locates one text value in a buffer's arena; n < 0 is NULL.
type span struct {
	off uint32
	n   int32
}

// maxArena bounds an epoch's buffered text (spans hold 32-bit offsets).
const maxArena = math.MaxUint32

// buffer holds one epoch's rows, text-encoded, without a heap object per row:
// values live in one byte arena, and each row is an op and ncols spans. An
// upsert sink also keeps each row's key in a canonical binary form (equal keys
// encode equally), which Commit uses to keep the last change of every key.
type buffer struct {
	ncols int
	ops   []types.Op
	vals  []span // ncols per row
	arena []byte

	// Upsert sinks only.
	keys     []span // one per row, into keyArena
	keyArena []byte
	nullKey  []bool // the row's key has a NULL

	// Commit's scratch, reused across epochs.
	hashes []uint64
	slots  []int32
	win    []bool

	d   types.Datum
	dec apd.Decimal
	tmp []byte
}

func newBuffer(ncols int) *buffer {
	// A non-nil arena keeps empty strings apart from NULLs (nil params).
	return &buffer{ncols: ncols, arena: make([]byte, 0, 4096)}
}

func (b *buffer) len() int { return len(b.ops) }

// retainBytes is the arena capacity reset keeps: a rare huge epoch's
// memory is given back.
const retainBytes = 64 << 20

func (b *buffer) reset() {
	if cap(b.arena) > retainBytes {
		*b = buffer{ncols: b.ncols, arena: make([]byte, 0, 4096)}
		return
	}
	b.ops = b.ops[:0]
	b.vals = b.vals[:0]
	b.arena = b.arena[:0]
	b.keys = b.keys[:0]
	b.keyArena = b.keyArena[:0]
	b.nullKey = b.nullKey[:0]
}

// value returns row i's column j as a query parameter (nil for NULL). It
// aliases the arena.
func (b *buffer) value(i, j int) []byte {
	s := b.vals[i*b.ncols+j]
	if s.n < 0 {
		return nil
	}
	return b.arena[s.off : s.off+uint32(s.n) : s.off+uint32(s.n)]
}

func (b *buffer) key(i int) []byte {
	s := b.keys[i]
	return b.keyArena[s.off : s.off+uint32(s.n)]
}

// add appends row i of c with op. Only the columns in need are encoded (nil
// means all); the others are left NULL. key, when not nil, lists the key
// columns to encode canonically, with tgt's per-column rules.
func (b *buffer) add(c *types.Chunk, i int, op types.Op, need []bool, key []int, tgt []targetCol) error {
	nVals, nArena, nKeyArena := len(b.vals), len(b.arena), len(b.keyArena)
	for j := range c.Cols {
		v := &c.Cols[j]
		if v.Nulls[i] || (need != nil && !need[j]) {
			b.vals = append(b.vals, span{n: -1})
			continue
		}
		v.GetInto(i, &b.d)
		start := len(b.arena)
		b.arena = types.AppendText(b.arena, v.Type, &b.d)
		b.vals = append(b.vals, span{off: uint32(start), n: int32(len(b.arena) - start)})
	}
	if key != nil {
		start := len(b.keyArena)
		null := false
		for _, j := range key {
			v := &c.Cols[j]
			if v.Nulls[i] {
				null = true
				b.keyArena = append(b.keyArena, 0)
				continue
			}
			v.GetInto(i, &b.d)
			b.keyArena = b.appendKey(b.keyArena, v.Type, &b.d, tgt[j].trimKey)
		}
		b.keys = append(b.keys, span{off: uint32(start), n: int32(len(b.keyArena) - start)})
		b.nullKey = append(b.nullKey, null)
	}
	if len(b.arena) > maxArena || len(b.keyArena) > maxArena {
		// Drop the row: its spans may have overflowed.
		b.vals, b.arena, b.keyArena = b.vals[:nVals], b.arena[:nArena], b.keyArena[:nKeyArena]
		if key != nil {
			b.keys, b.nullKey = b.keys[:len(b.keys)-1], b.nullKey[:len(b.nullKey)-1]
		}
		return errEpochTooLarge
	}
	b.ops = append(b.ops, op)
	return nil
}

// appendKey appends a non-NULL key value so that values PostgreSQL's
// equality finds equal encode equally: numerics without trailing zeros, -0
// as 0, intervals by their total length, character(n) without trailing
// spaces.
func (b *buffer) appendKey(buf []byte, t types.T, d *types.Datum, trim bool) []byte {
	buf = append(buf, 1)
	switch t.Physical() {
	case types.PhysI64:
		return binary.LittleEndian.AppendUint64(buf, uint64(d.I))
	case types.PhysF64:
		f := d.F
		switch {
		case f == 0:
			f = 0
		case math.IsNaN(f):
			f = math.NaN()
		}
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(f))
	case types.PhysStr:
		s := d.S
		if trim {
			s = strings.TrimRight(s, " ")
		}
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		return append(buf, s...)
	case types.PhysDec:
		b.tmp = b.tmp[:0]
		switch {
		case d.Dec.Form == apd.Finite && d.Dec.IsZero():
			b.tmp = append(b.tmp, '0')
		case d.Dec.Form == apd.Finite:
			b.dec.Reduce(&d.Dec)
			b.tmp = b.dec.Append(b.tmp, 'e')
		default:
			b.tmp = types.AppendText(b.tmp, t, d) // NaN, ±Infinity
		}
		buf = binary.AppendUvarint(buf, uint64(len(b.tmp)))
		return append(buf, b.tmp...)
	case types.PhysIv:
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(types.IntervalKey(d.Iv)))
	}
	return buf
}

// winners marks the last row of every key: the change Commit applies.
func (b *buffer) winners() []bool {
	n := b.len()
	b.win = grow(b.win, n)
	b.hashes = b.hashes[:0]
	for i := 0; i < n; i++ {
		b.hashes = append(b.hashes, xxhash.Sum64(b.key(i)))
	}
	size := 1 << bits.Len(uint(2*n))
	b.slots = grow(b.slots, size)
	clear(b.slots)
	mask := uint64(size - 1)
	for i := n - 1; i >= 0; i-- {
		h := b.hashes[i]
		for pos := h & mask; ; pos = (pos + 1) & mask {
			s := b.slots[pos]
			if s == 0 {
				b.slots[pos] = int32(i + 1)
				b.win[i] = true
				break
			}
			if j := int(s - 1); b.hashes[j] == h && bytes.Equal(b.key(j), b.key(i)) {
				b.win[i] = false
				break
			}
		}
	}
	return b.win
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
