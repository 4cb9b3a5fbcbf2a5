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
	key = b.buf[e.keyOff : e.keyOff+e.keyLen : e.keyOff+e.keyLen]
	if e.del {
		return key, nil, true
	}
	return key, b.buf[e.valOff : e.valOff+e.valLen : e.valOff+e.valLen], false
}

// Normalize sorts the entries by key and drops all but the last write of each key. KV implementations
// call it in Commit; callers need not.
func (b *Batch) Normalize() {
	if b.sorted {
		return
	}
	key := func(e batchEntry) []byte { return b.buf[e.keyOff : e.keyOff+e.keyLen] }
	ascending := true
	for i := 1; i < len(b.entries) && ascending; i++ {
		ascending = bytes.Compare(key(b.entries[i-1]), key(b.entries[i])) < 0
	}
	if ascending { // written in key order, each key once (one table's flush)
		b.sorted = true
		return
	}
	// Writes of one key stay in insertion order, so the last of each run wins:
	// keys go into buf in insertion order, so keyOff breaks ties (an unstable
	// sort with that tiebreak is much cheaper than a stable sort).
	slices.SortFunc(b.entries, func(x, y batchEntry) int {
		if c := bytes.Compare(b.buf[x.keyOff:x.keyOff+x.keyLen], b.buf[y.keyOff:y.keyOff+y.keyLen]); c != 0 {
			return c
		}
		return cmp.Compare(x.keyOff, y.keyOff)
	})
	out := b.entries[:0]
	for i, e := range b.entries {
		if i+1 < len(b.entries) {
			n := b.entries[i+1]
			if bytes.Equal(b.buf[e.keyOff:e.keyOff+e.keyLen], b.buf[n.keyOff:n.keyOff+n.keyLen]) {
				continue
			}
		}
		out = append(out, e)
	}
	b.entries = out
	b.sorted = true
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
