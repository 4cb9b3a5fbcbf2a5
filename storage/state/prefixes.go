package state

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/keyfilter"
)

// Prefixes of a table that is its vnodes' only writer (see Key bounds). A
// top-N reads a group as the range of keys starting with the group's
// columns, and most groups it reads may hold nothing yet (Nexmark q18: a
// bidder's first bid on an auction); such a range read is a seek in every
// level of the store, where a point read would have asked each level's Bloom
// filter first. A table tracking prefixes keeps, per vnode, a filter of the
// prefixes (the first n primary-key columns) of every key the store may hold
// for it: those it wrote, and those the store held when the vnode was first
// read by prefix (one scan of the vnode). A read of a prefix the filter never
// saw then reads nothing from the store. Deletes leave the filter as it is
// (a deleted prefix costs a read, as before). The prefixes of the epoch's
// writes and deletes are kept too (exactly, by hash), so such a read does not
// search the epoch's unsorted writes either.

// prefixFirst is the capacity of a vnode filter's first part (about 1.3 KiB).
const prefixFirst = 1024

var prefixSeed = maphash.MakeSeed()

// prefixLearnMax is the most keys a vnode's learning reads: a vnode holding more (a recovered
// job's big state) keeps no filter and reads the store for every prefix, as an untracked table.
const prefixLearnMax = 1 << 16

// vnodePrefixes is a vnode's filter; learned says it holds the store's keys too, unknown that
// the vnode held too many to learn (the filter is then unused).
type vnodePrefixes struct {
	filter  keyfilter.Filter
	learned bool
	unknown bool
}

// add adds a prefix's hash, unless the filter may hold it already (so the filter grows with the
// prefixes, not with the rows).
func (p *vnodePrefixes) add(h uint64) {
	if !p.unknown && !p.filter.MayContain(h) {
		p.filter.Add(h)
	}
}

// TrackPrefixes declares t the only writer of the vnodes it reads for (as TrackKeys) and lets
// reads give IterOptions.Prefix, the encoding of the first n primary-key columns shared by every
// key of their range (EncodePK of those columns). Call it before the first write or read. A table
// with blocks cannot track prefixes.
func (t *Table) TrackPrefixes(n int) error {
	if t.schema.Blocks || n <= 0 || n > len(t.schema.PK) {
		return fmt.Errorf("state table %d: cannot track prefixes of %d of %d key columns", t.schema.TableID, n, len(t.schema.PK))
	}
	t.TrackKeys()
	t.prefixCols = n
	t.prefixes = make([]*vnodePrefixes, codec.VnodeCount)
	return nil
}

// PrefixBytes returns the memory the prefix filters take.
func (t *Table) PrefixBytes() int {
	n := 0
	for _, p := range t.prefixes {
		if p != nil {
			n += p.filter.Bytes()
		}
	}
	return n
}

// vnodePrefixSet returns vnode v's filter, made on first use.
func (t *Table) vnodePrefixSet(v int) *vnodePrefixes {
	p := t.prefixes[v]
	if p == nil {
		p = &vnodePrefixes{filter: keyfilter.Filter{First: prefixFirst}}
		t.prefixes[v] = p
	}
	return p
}

// wrotePrefix adds the prefix of row, which the table wrote to vnode v, to v's filter and to the
// prefixes of the epoch's writes.
func (t *Table) wrotePrefix(v int, row []types.Datum) {
	if t.prefixCols == 0 {
		return
	}
	t.vnodePrefixSet(v).add(t.pendingPrefix(row))
}

// pendingPrefix records the prefix of row, which the table writes or deletes, among the prefixes
// of the epoch's writes, and returns its hash.
func (t *Table) pendingPrefix(row []types.Datum) uint64 {
	t.pfxBuf = codec.AppendKey(t.pfxBuf[:0], t.schema.Types, row, t.schema.PK[:t.prefixCols], t.pkDescPrefix())
	h := maphash.Bytes(prefixSeed, t.pfxBuf)
	if t.cur.prefixes == nil {
		t.cur.prefixes = make(map[uint64]struct{})
	}
	t.cur.prefixes[h] = struct{}{}
	return h
}

// deletedRow records the prefix of row, which the table deletes, among the epoch's writes.
func (t *Table) deletedRow(row []types.Datum) {
	if t.prefixCols > 0 {
		t.pendingPrefix(row)
	}
}

// prefixHash returns the hash of opts.Prefix and whether the read may use it (see
// IterOptions.Prefix).
func (t *Table) prefixHash(opts IterOptions) (uint64, bool) {
	if t.prefixCols == 0 || opts.Prefix == nil {
		return 0, false
	}
	return maphash.Bytes(prefixSeed, opts.Prefix), true
}

func (t *Table) pkDescPrefix() []bool {
	if t.schema.PKDesc == nil {
		return nil
	}
	return t.schema.PKDesc[:t.prefixCols]
}

// prefixAbsent reports whether the store at epoch holds no key of vnode v starting with the
// prefix of hash h (of the encoding of the first prefixCols key columns), learning the vnode's stored prefixes first
// if it has not.
func (t *Table) prefixAbsent(ctx context.Context, v int, h uint64, epoch uint64) (bool, error) {
	p := t.vnodePrefixSet(v)
	if !p.learned {
		if err := t.learnPrefixes(ctx, v, p, epoch); err != nil {
			return false, fmt.Errorf("state table %d: learn prefixes of vnode %d: %w", t.schema.TableID, v, err)
		}
	}
	return !p.unknown && !p.filter.MayContain(h), nil
}

// learnPrefixes adds the prefixes of every key the store holds for vnode v at epoch to p (or
// gives up past prefixLearnMax keys). Keys stored later are the table's own writes, which
// wrotePrefix adds.
func (t *Table) learnPrefixes(ctx context.Context, v int, p *vnodePrefixes, epoch uint64) error {
	lower := codec.AppendTablePrefix(nil, t.schema.TableID, uint16(v))
	it, err := t.kv.Scan(ctx, lower, codec.PrefixEnd(lower), epoch)
	if err != nil {
		return err
	}
	defer it.Close()
	var row []types.Datum
	for n := 0; ; n++ {
		if n == prefixLearnMax {
			p.unknown, p.filter = true, keyfilter.Filter{}
			break
		}
		err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if row, err = codec.DecodeRowMissing(t.schema.Types, it.Value(), row, t.schema.Missing); err != nil {
			return fmt.Errorf("decode row %x: %w", it.Key(), err)
		}
		t.pfxBuf = codec.AppendKey(t.pfxBuf[:0], t.schema.Types, row, t.schema.PK[:t.prefixCols], t.pkDescPrefix())
		p.add(maphash.Bytes(prefixSeed, t.pfxBuf))
	}
	p.learned = true
	return it.Close()
}

// holdsPrefix reports whether b may hold a write or delete of a key with the prefix of hash h (a
// table tracking prefixes records every one).
func (b *buffer) holdsPrefix(h uint64) bool {
	_, ok := b.prefixes[h]
	return ok
}
