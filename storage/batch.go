package storage

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
)

// ReservedPrefix starts the key range reserved for the stores' own metadata (table id 0xFFFFFFFF in the
// state key layout). Commit rejects keys in it and scans with an unbounded upper end stop before it.
var ReservedPrefix = []byte{0xff, 0xff, 0xff, 0xff}

// MaxKeySize is the largest key Commit accepts, in bytes.
const MaxKeySize = 32 << 10

// Batch is an ordered list of puts and deletes applied atomically by KV.Commit. Keys and values are
// copied into the batch, so callers may reuse their buffers. When a key is written twice the later
// write wins. A Batch is not safe for concurrent use; the zero value is an empty batch.
type Batch struct {
	buf     []byte
	entries []batchEntry
	sorted  bool
}

type batchEntry struct {
	keyOff, keyLen uint32
	valOff, valLen uint32
	del            bool
}

// Put records that key is set to value (an empty value is a value, distinct from a missing key).
func (b *Batch) Put(key, value []byte) {
	e := batchEntry{keyOff: uint32(len(b.buf)), keyLen: uint32(len(key))}
	b.buf = append(b.buf, key...)
	e.valOff = uint32(len(b.buf))
	e.valLen = uint32(len(value))
	b.buf = append(b.buf, value...)
	b.entries = append(b.entries, e)
	b.sorted = false
}

// Delete records that key is removed.
func (b *Batch) Delete(key []byte) {
	e := batchEntry{keyOff: uint32(len(b.buf)), keyLen: uint32(len(key)), del: true}
	b.buf = append(b.buf, key...)
	e.valOff = uint32(len(b.buf))
	b.entries = append(b.entries, e)
	b.sorted = false
}

// Len returns the number of entries (before Normalize, duplicates count).
func (b *Batch) Len() int { return len(b.entries) }

// Size returns the bytes held by keys and values.
func (b *Batch) Size() int { return len(b.buf) }

// Cap returns the bytes of keys and values the batch holds memory for.
func (b *Batch) Cap() int { return cap(b.buf) }

// Grow makes room for n more bytes of keys and values and entries more entries, so that many
// Puts then append without copying what the batch holds.
func (b *Batch) Grow(n, entries int) {
	b.buf = slices.Grow(b.buf, n)
	b.entries = slices.Grow(b.entries, entries)
}

// CopyFrom makes b a copy of src (two copies of memory, not one per entry), keeping b's memory
// for reuse.
func (b *Batch) CopyFrom(src *Batch) {
	b.buf = append(b.buf[:0], src.buf...)
	b.entries = append(b.entries[:0], src.entries...)
	b.sorted = src.sorted
}

// Reset empties the batch, keeping its memory for reuse.
func (b *Batch) Reset() {
	b.buf = b.buf[:0]
	b.entries = b.entries[:0]
	b.sorted = false
}

// Entry returns entry i: its key, its value (nil for a delete) and whether it is a delete. The slices
// point into the batch and stay valid until the next Put, Delete or Reset.
func (b *Batch) Entry(i int) (key, value []byte, del bool) {
	e := &b.entries[i]
	key = b.Key(i)
	if e.del {
		return key, nil, true
	}
	return key, b.buf[e.valOff : e.valOff+e.valLen : e.valOff+e.valLen], false
}

// Append adds src's writes to b, in src's order.
func (b *Batch) Append(src *Batch) {
	b.Grow(len(src.buf), len(src.entries))
	for i := range src.entries {
		k, v, del := src.Entry(i)
		if del {
			b.Delete(k)
		} else {
			b.Put(k, v)
		}
	}
}

// Key returns entry i's key (Entry's first result).
func (b *Batch) Key(i int) []byte {
	e := &b.entries[i]
	return b.buf[e.keyOff : e.keyOff+e.keyLen : e.keyOff+e.keyLen]
}

// Normalize sorts the entries by key and drops all but the last write of each key. KV implementations
// call it in Commit; callers need not. A batch written as a few runs of ascending keys (each state
// table's writes in key order, one table after another) is merged rather than sorted.
func (b *Batch) Normalize() {
	if b.sorted {
		return
	}
	b.sorted = true
	if starts := b.ascendingRuns(maxMergeRuns); starts != nil {
		if len(starts) > 1 {
			b.entries = b.mergeRuns(starts)
		}
		return
	}
	// Writes of one key stay in insertion order, so the last of each run wins:
	// keys go into buf in insertion order, so keyOff breaks ties (an unstable
	// sort with that tiebreak is much cheaper than a stable sort).
	slices.SortFunc(b.entries, func(x, y batchEntry) int {
		if c := bytes.Compare(b.key(x), b.key(y)); c != 0 {
			return c
		}
		return cmp.Compare(x.keyOff, y.keyOff)
	})
	out := b.entries[:0]
	for i, e := range b.entries {
		if i+1 < len(b.entries) && bytes.Equal(b.key(e), b.key(b.entries[i+1])) {
			continue
		}
		out = append(out, e)
	}
	b.entries = out
}

// maxMergeRuns is the most runs of ascending keys Normalize merges instead of sorting.
const maxMergeRuns = 64

func (b *Batch) key(e batchEntry) []byte { return b.buf[e.keyOff : e.keyOff+e.keyLen] }

// ascendingRuns returns where each maximal run of strictly ascending keys starts, or nil when
// there are more than max runs.
func (b *Batch) ascendingRuns(max int) []int {
	if len(b.entries) == 0 {
		return []int{0}
	}
	starts := []int{0}
	for i := 1; i < len(b.entries); i++ {
		if bytes.Compare(b.key(b.entries[i-1]), b.key(b.entries[i])) >= 0 {
			if len(starts) == max {
				return nil
			}
			starts = append(starts, i)
		}
	}
	return starts
}

// mergeRuns merges the runs of ascending keys starting at starts, pairwise in passes. A run's
// entries were all written after those of the runs before it, so on equal keys the right
// run's entry is the later write and wins.
func (b *Batch) mergeRuns(starts []int) []batchEntry {
	bounds := append(slices.Clone(starts), len(b.entries))
	src, dst := b.entries, make([]batchEntry, 0, len(b.entries))
	for len(bounds) > 2 {
		dst = dst[:0]
		next := []int{0}
		for i := 0; i+1 < len(bounds); i += 2 {
			left := src[bounds[i]:bounds[i+1]]
			if i+2 >= len(bounds) { // an odd run out
				dst = append(dst, left...)
			} else {
				right := src[bounds[i+1]:bounds[i+2]]
				for len(left) > 0 && len(right) > 0 {
					switch c := bytes.Compare(b.key(left[0]), b.key(right[0])); {
					case c < 0:
						dst = append(dst, left[0])
						left = left[1:]
					case c > 0:
						dst = append(dst, right[0])
						right = right[1:]
					default: // the same key: the later write wins
						dst = append(dst, right[0])
						left, right = left[1:], right[1:]
					}
				}
				dst = append(append(dst, left...), right...)
			}
			next = append(next, len(dst))
		}
		bounds = next
		src, dst = dst, src
	}
	return src
}

// Validate checks every key of the batch: non-empty, at most MaxKeySize, outside ReservedPrefix.
// Errors wrap ErrInvalidKey.
func (b *Batch) Validate() error {
	for i := range b.entries {
		key, _, _ := b.Entry(i)
		if err := CheckKey(key); err != nil {
			return err
		}
	}
	return nil
}

// CheckKey reports whether key may be written by a Commit; the error wraps ErrInvalidKey.
func CheckKey(key []byte) error {
	switch {
	case len(key) == 0:
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(key) > MaxKeySize:
		return fmt.Errorf("%w: key of %d bytes exceeds %d", ErrInvalidKey, len(key), MaxKeySize)
	case bytes.HasPrefix(key, ReservedPrefix):
		return fmt.Errorf("%w: key %x is in the reserved range", ErrInvalidKey, key)
	}
	return nil
}

// ClampUpper returns the effective exclusive upper bound of a user scan: upper itself, or
// ReservedPrefix when upper is nil or above it.
func ClampUpper(upper []byte) []byte {
	if upper == nil || bytes.Compare(upper, ReservedPrefix) > 0 {
		return ReservedPrefix
	}
	return upper
}
