package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tributary/tributary/storage/codec"
)

// keyTops bounds the keys a table holds, vnode by vnode, so that a primary-key check of a key
// above every key of its vnode needs no store read (an ascending id, a timestamp, a sequence:
// the common inserts). For each vnode it keeps the largest key this table wrote (every write of
// a table's rows goes through its one state.Table in the coordinator's TableSet, or a
// transaction's own) and, once asked, the largest key the store held at the epoch it was read
// at. A key above both is in neither: the bound can only be too high (deletes do not lower
// it), which costs a read, never a wrong answer.
type keyTops struct {
	written [codec.VnodeCount][]byte // largest key written through this table, per vnode
	stored  [codec.VnodeCount][]byte // largest stored key at loadedAt, per vnode (nil: none)
	loaded  [codec.VnodeCount]bool
	// loadedAt is the newest epoch a vnode's stored top was read at: a read below it cannot
	// use the tops (a key deleted since may be there).
	loadedAt uint64
}

// vnodeOfKey returns the vnode of a row key of this table (table prefix, vnode, pk).
func vnodeOfKey(key []byte) (uint16, bool) {
	if len(key) < 6 {
		return 0, false
	}
	return uint16(key[4])<<8 | uint16(key[5]), true
}

// noteWritten raises key's vnode's written top to key.
func (t *Table) noteWritten(key []byte) {
	if t.tops == nil {
		t.tops = new(keyTops)
	}
	k := t.tops
	v, ok := vnodeOfKey(key)
	if !ok || v >= codec.VnodeCount {
		return
	}
	if w := k.written[v]; w == nil || bytes.Compare(key, w) > 0 {
		k.written[v] = append(w[:0], key...)
	}
}

// keyAbove reports whether key is above every key of its vnode that the store holds at epoch
// at (read once per vnode) and that this table wrote.
func (t *Table) keyAbove(ctx context.Context, at uint64, key []byte) (bool, error) {
	if t.tops == nil {
		t.tops = new(keyTops) // nothing written through this table yet
	}
	k := t.tops
	if at < k.loadedAt {
		return false, nil
	}
	v, ok := vnodeOfKey(key)
	if !ok || v >= codec.VnodeCount {
		return false, nil
	}
	if !k.loaded[v] {
		top, err := t.storedTop(ctx, v, at)
		if err != nil {
			return false, err
		}
		k.stored[v], k.loaded[v], k.loadedAt = top, true, at
	}
	if s := k.stored[v]; s != nil && bytes.Compare(key, s) <= 0 {
		return false, nil
	}
	if w := k.written[v]; w != nil && bytes.Compare(key, w) <= 0 {
		return false, nil
	}
	return true, nil
}

// storedTop reads the largest key of vnode v in the store at epoch at (nil when it has none).
func (t *Table) storedTop(ctx context.Context, v uint16, at uint64) ([]byte, error) {
	lower, upper := codec.VnodeSpan(t.schema.TableID, v)
	it, err := t.kv.ReverseScan(ctx, lower, upper, at)
	if err != nil {
		return nil, fmt.Errorf("state table %d: largest key of vnode %d: %w", t.schema.TableID, v, err)
	}
	defer it.Close()
	switch err := it.Next(); {
	case errors.Is(err, io.EOF):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("state table %d: largest key of vnode %d: %w", t.schema.TableID, v, err)
	}
	return bytes.Clone(it.Key()), nil
}
