package state

import (
	"context"
	"errors"
	"io"
	"slices"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
)

// Key bounds of a table that is its vnodes' only writer. An operator's
// state table (a join side, a top-N, an aggregation) is written by the actor
// owning its vnodes and by nothing else while that actor lives; a rescale or a
// recovery builds new actors and new Tables. Such a table learns, per vnode,
// the greatest key the store holds (one reverse seek, the first time the vnode
// is read) and raises that bound over every key it writes. A read of a key or
// a key range at or above the bound then needs no store read at all: the
// state of keys that only grow (auction ids, windows, serial numbers) is
// probed mostly for keys that are new. Deletes leave the bound where it is (it
// stays an upper bound).

// TrackKeys declares t the only writer of the vnodes it reads for as long as
// it lives, so it may answer reads above the keys it knows stored without the
// store (see Key bounds). Call it before the first write or read. A table
// with blocks keeps bounds of its own and ignores it.
func (t *Table) TrackKeys() {
	if !t.schema.Blocks {
		t.tracked = true
	}
}

// wroteRow raises the bounds of key's vnode over key, a row the table wrote
// (row), and adds its prefix to the vnode's filter (TrackPrefixes).
func (t *Table) wroteRow(key []byte, row []types.Datum) {
	if !t.tracked || len(key) < codec.TablePrefixLen {
		return
	}
	v := int(key[4])<<8 | int(key[5]) // vnodeOf, without converting key
	t.wrotePrefix(v, row)
	if string(key) > t.rowTop[v] {
		t.rowTop[v] = string(key)
	}
	if b := t.rowFrom[v]; b != "" && string(key) >= b {
		t.rowFrom[v] = string(key) + "\x00"
	}
}

// storeHasNone reports whether a tracked table knows the store holds no key
// of opts' vnode at or after lower, for a read of the latest committed epoch
// (the store at epoch).
func (t *Table) storeHasNone(ctx context.Context, opts IterOptions, lower []byte, epoch uint64) (bool, error) {
	if !t.tracked || opts.Vnode == AllVnodes || opts.Epoch != 0 {
		return false, nil
	}
	if h, ok := t.prefixHash(opts); ok {
		if absent, err := t.prefixAbsent(ctx, opts.Vnode, h, epoch); err != nil || absent {
			return absent, err
		}
	}
	return t.noKeyFrom(ctx, opts.Vnode, lower, epoch)
}

// noKeyFrom reports whether the store at epoch holds no key of vnode v at or
// after key, learning the vnode's bound first if it has none.
func (t *Table) noKeyFrom(ctx context.Context, v int, key []byte, epoch uint64) (bool, error) {
	if t.rowFrom[v] == "" {
		if err := t.learnTop(ctx, v, epoch); err != nil {
			return false, err
		}
	}
	// Keys deleted before the bound was learned may be stored at older epochs.
	return epoch >= t.rowAt[v] && string(key) >= t.rowFrom[v], nil
}

// learnTop sets vnode v's bound above the greatest key the store holds at
// epoch and every key the table wrote.
//
// A reverse seek finds the greatest key, but Badger's reverse iterator
// ignores its bounds while it gathers its first two keys: it skips deleted
// keys and newer versions below the range one by one (a dropped job's
// tombstones: seconds per vnode). So a forward scan, which stops at the
// vnode's end, looks for two keys first; only a vnode holding both is read
// in reverse, where the seek stops at them.
func (t *Table) learnTop(ctx context.Context, v int, epoch uint64) error {
	prefix := codec.AppendTablePrefix(nil, t.schema.TableID, uint16(v))
	end := codec.PrefixEnd(prefix)
	keys, err := firstKeys(ctx, t.kv.Scan, prefix, end, epoch, 2)
	if err != nil {
		return err
	}
	if len(keys) == 2 {
		if keys, err = firstKeys(ctx, t.kv.ReverseScan, prefix, end, epoch, 1); err != nil {
			return err
		}
	}
	from := prefix
	if len(keys) > 0 {
		from = append(keys[len(keys)-1], 0)
	}
	t.learn(v, false, from)
	t.rowAt[v] = epoch
	return nil
}

// firstKeys returns up to n keys of [lower, upper) at epoch, in scan's order.
func firstKeys(ctx context.Context, scan func(context.Context, []byte, []byte, uint64) (storage.Iterator, error),
	lower, upper []byte, epoch uint64, n int) ([][]byte, error) {
	it, err := scan(ctx, lower, upper, epoch)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for len(keys) < n {
		err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			it.Close()
			return nil, err
		}
		keys = append(keys, slices.Clone(it.Key()))
	}
	return keys, it.Close()
}

// noKeys is a store iterator over nothing (Iter's, where the bounds say the
// store holds no key of its range).
type noKeys struct{}

func (noKeys) Next() error   { return io.EOF }
func (noKeys) Key() []byte   { return nil }
func (noKeys) Value() []byte { return nil }
func (noKeys) Close() error  { return nil }
