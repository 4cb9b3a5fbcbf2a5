package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
)

// Blocks. A table whose Schema sets Blocks may store rows many to a key: rows
// written with InsertFresh (keys the writer vouches are nowhere in the table:
// a bulk copy of new keys) wait in the table's flushed layers until
// TakeFresh takes them for a SealJob (or Stage seals them), which writes
// each vnode's run of them as blocks of up to blockRows rows and blockBytes
// bytes, one key each, into the epoch's batch: Badger then takes a write per
// block instead of one per row, and a scan an iterator step per block.
//
// A block's key is the vnode's prefix, blockMarker and the encoded primary
// key of its last row; no encoded key starts with blockMarker, so a vnode's
// blocks sort after its rows, and a forward seek to prefix|blockMarker|pk
// finds the one block whose range may hold pk (blocks of a vnode never
// overlap: a SealJob writes rows one at a time where a block would). Its value:
//
//	format byte | uvarint epoch | uvarint n | n little-endian uint32 offsets | n entries
//	entry: uvarint pk length | pk | uvarint value length | value
//
// A row key's own entry is newer than a block holding the key, except a
// tombstone older than the block. A delete of a row a stored block holds
// rewrites the block without it (editBlocks); one of a row about to be
// sealed, or one editBlocks cannot place, writes a tombstone
// (tombstoneByte | the epoch, big endian) instead of a plain delete, which
// would let the block's row show through.
// A row's encoding starts with its column count (at least 1), never with
// tombstoneByte. Scan, GetRow and ChangedRows read a blocked table's keys
// as rows; Table's reads do the same.
const (
	blockMarker   byte = 0xFF
	blockFormat   byte = 1
	tombstoneByte byte = 0x00
	tombstoneLen       = 9
	// blockRows is the most rows a block holds; minBlockRows the fewest
	// fresh rows of a vnode a SealJob writes as a block (fewer go as rows).
	blockRows    = 256
	minBlockRows = 2
	// blockBytes bounds a block's encoded rows: Badger copies a value
	// wherever an iterator stops, and a key check passing a vnode's blocks
	// stops at one.
	blockBytes = 16384
)

// ErrBlock is returned for a malformed block.
var ErrBlock = errors.New("state: corrupt block")

// isBlockKey reports whether a state key is a block's.
func isBlockKey(key []byte) bool {
	return len(key) > codec.TablePrefixLen && key[codec.TablePrefixLen] == blockMarker
}

// appendBlockKey appends the key of the block of vnode prefix (table and
// vnode) whose last row's encoded pk is pk.
func appendBlockKey(buf, prefix, pk []byte) []byte {
	buf = append(buf, prefix[:codec.TablePrefixLen]...)
	buf = append(buf, blockMarker)
	return append(buf, pk...)
}

// appendTombstone appends a tombstone written at epoch.
func appendTombstone(buf []byte, epoch uint64) []byte {
	buf = append(buf, tombstoneByte)
	return binary.BigEndian.AppendUint64(buf, epoch)
}

// tombstoneEpoch returns the epoch of a tombstone value; ok is false for a row.
func tombstoneEpoch(v []byte) (epoch uint64, ok bool) {
	if len(v) != tombstoneLen || v[0] != tombstoneByte {
		return 0, false
	}
	return binary.BigEndian.Uint64(v[1:]), true
}

// block is a decoded block value (its slices point into the value).
type block struct {
	epoch uint64
	n     int
	offs  []byte
	data  []byte
}

func decodeBlock(v []byte) (block, error) {
	if len(v) < 1 || v[0] != blockFormat {
		return block{}, fmt.Errorf("%w: format", ErrBlock)
	}
	v = v[1:]
	epoch, k := binary.Uvarint(v)
	if k <= 0 {
		return block{}, fmt.Errorf("%w: epoch", ErrBlock)
	}
	v = v[k:]
	n, k := binary.Uvarint(v)
	if k <= 0 || n == 0 || n > uint64(len(v)) {
		return block{}, fmt.Errorf("%w: row count", ErrBlock)
	}
	v = v[k:]
	if uint64(len(v)) < 4*n {
		return block{}, fmt.Errorf("%w: offsets", ErrBlock)
	}
	return block{epoch: epoch, n: int(n), offs: v[:4*n], data: v[4*n:]}, nil
}

// entry returns row i's encoded pk and value.
func (b *block) entry(i int) (pk, value []byte, err error) {
	off := binary.LittleEndian.Uint32(b.offs[4*i:])
	if uint64(off) >= uint64(len(b.data)) {
		return nil, nil, fmt.Errorf("%w: offset %d", ErrBlock, off)
	}
	p := b.data[off:]
	l, k := binary.Uvarint(p)
	if k <= 0 || l > uint64(len(p)-k) {
		return nil, nil, fmt.Errorf("%w: key of row %d", ErrBlock, i)
	}
	pk, p = p[k:k+int(l)], p[k+int(l):]
	l, k = binary.Uvarint(p)
	if k <= 0 || l > uint64(len(p)-k) {
		return nil, nil, fmt.Errorf("%w: value of row %d", ErrBlock, i)
	}
	return pk, p[k : k+int(l)], nil
}

// search returns the first row whose pk is at or after pk.
func (b *block) search(pk []byte) (int, error) {
	var err error
	i := sort.Search(b.n, func(i int) bool {
		p, _, e := b.entry(i)
		if e != nil {
			err = e
			return true
		}
		return bytes.Compare(p, pk) >= 0
	})
	return i, err
}

// get returns the value of the row with encoded pk pk; ok is false when the
// block has no such row.
func (b *block) get(pk []byte) (value []byte, ok bool, err error) {
	i, err := b.search(pk)
	if err != nil || i == b.n {
		return nil, false, err
	}
	p, value, err := b.entry(i)
	if err != nil || !bytes.Equal(p, pk) {
		return nil, false, err
	}
	return value, true, nil
}

// appendBlock appends a block value of the rows (pks ascending) written at epoch.
func appendBlock[K ~string | ~[]byte](buf []byte, epoch uint64, pks []K, values [][]byte) []byte {
	buf = append(buf, blockFormat)
	buf = binary.AppendUvarint(buf, epoch)
	buf = binary.AppendUvarint(buf, uint64(len(pks)))
	offsAt := len(buf)
	buf = append(buf, make([]byte, 4*len(pks))...)
	dataAt := len(buf)
	for i := range pks {
		binary.LittleEndian.PutUint32(buf[offsAt+4*i:], uint32(len(buf)-dataAt))
		buf = binary.AppendUvarint(buf, uint64(len(pks[i])))
		buf = append(buf, pks[i]...)
		buf = binary.AppendUvarint(buf, uint64(len(values[i])))
		buf = append(buf, values[i]...)
	}
	return buf
}

// findBlock reads the block of key's vnode whose range may hold key's pk, at
// epoch: found is false when no block's range holds it. The returned block
// points into a copy the caller owns.
func findBlock(ctx context.Context, kv storage.KV, key []byte, epoch uint64) (block, bool, error) {
	_, b, ok, err := findBlockKey(ctx, kv, key, epoch)
	return b, ok, err
}

// findBlockKey is findBlock that also returns the block's key (nil when
// there is none).
func findBlockKey(ctx context.Context, kv storage.KV, key []byte, epoch uint64) ([]byte, block, bool, error) {
	if len(key) < codec.TablePrefixLen {
		return nil, block{}, false, nil
	}
	prefix, pk := key[:codec.TablePrefixLen], key[codec.TablePrefixLen:]
	it, err := kv.Scan(ctx, appendBlockKey(nil, prefix, pk), blocksEnd(prefix), epoch)
	if err != nil {
		return nil, block{}, false, err
	}
	defer it.Close()
	switch err := it.Next(); {
	case errors.Is(err, io.EOF):
		return nil, block{}, false, nil
	case err != nil:
		return nil, block{}, false, err
	}
	b, err := decodeBlock(append([]byte(nil), it.Value()...))
	if err != nil {
		return nil, block{}, false, fmt.Errorf("block %x: %w", it.Key(), err)
	}
	first, _, err := b.entry(0)
	if err != nil {
		return nil, block{}, false, err
	}
	return slices.Clone(it.Key()), b, bytes.Compare(first, pk) <= 0, nil
}

// GetRow is storage.KV.Get of a state key of one table that reads a table
// holding blocks as rows: the value the key holds or, failing that (or under
// an older tombstone), a block's. With blocks false it is kv.Get.
func GetRow(ctx context.Context, kv storage.KV, key []byte, epoch uint64, dst []byte, blocks bool) ([]byte, bool, error) {
	if !blocks {
		return kv.Get(ctx, key, epoch, dst)
	}
	return getRow(ctx, kv, key, epoch, dst, func() (block, bool, error) { return findBlock(ctx, kv, key, epoch) })
}

// getRow is GetRow finding the block that may hold key with find.
func getRow(ctx context.Context, kv storage.KV, key []byte, epoch uint64, dst []byte, find func() (block, bool, error)) ([]byte, bool, error) {
	v, found, err := kv.Get(ctx, key, epoch, dst)
	if err != nil {
		return nil, false, err
	}
	tomb, isTomb := uint64(0), false
	if found {
		if tomb, isTomb = tombstoneEpoch(v); !isTomb {
			return v, true, nil
		}
	}
	b, ok, err := find()
	if err != nil || !ok || (isTomb && tomb >= b.epoch) {
		return nil, false, err
	}
	value, ok, err := b.get(key[codec.TablePrefixLen:])
	if err != nil || !ok {
		return nil, false, err
	}
	return append(dst[:0], value...), true, nil
}

// cachedBlock is a block a table read, with its range.
type cachedBlock struct {
	b           block
	first, last []byte
	at          uint64 // the epoch it was read at (the newest committed then)
}

// covers reports whether pk is in the block's range.
func (c *cachedBlock) covers(pk []byte) bool {
	return bytes.Compare(c.first, pk) <= 0 && bytes.Compare(pk, c.last) <= 0
}

// blockCacheWays is how many blocks a table keeps per vnode for its point
// reads: changes applied in key order (an upstream's UPDATE of a key range)
// read each block many times.
const blockCacheWays = 4

// findBlockCached is findBlock through the table's cache of the blocks it
// read last. Blocks never change once written and never overlap, so a
// cached block written at or below epoch whose range holds the key is the
// one the store would find.
func (t *Table) findBlockCached(ctx context.Context, key []byte, epoch uint64) (block, bool, error) {
	if len(key) < codec.TablePrefixLen {
		return block{}, false, nil
	}
	if t.deletesBlocks() {
		return findBlock(ctx, t.kv, key, epoch)
	}
	_, vnode, _ := codec.SplitTablePrefix(key)
	v, pk := int(vnode), key[codec.TablePrefixLen:]
	if epoch < t.kv.CommittedEpoch() {
		// Only blocks found at the newest epoch, while none is being
		// deleted, are cached (a deleted block must not outlive its
		// delete), and every delete empties the cache: a cached block is
		// what any read from the epoch it was read at on finds, so a read
		// at an older epoch (a writer's chunk that began before the last
		// commit) may take one read at or before it, but caches nothing
		// (a block it finds may be gone since).
		for _, c := range t.blockCache[v] {
			if c.at <= epoch && c.covers(pk) {
				return c.b, true, nil
			}
		}
		return findBlock(ctx, t.kv, key, epoch)
	}
	if from := t.blockFrom[v]; from != "" && string(key) >= from {
		return block{}, false, nil // no block of the vnode ends at or after key
	}
	if t.blockFrom[v] == "" && !t.probed[v] {
		// Once per vnode: has it any block? (A table whose rows were
		// never bulk inserted has none, and its deletes then read none.)
		t.probed[v] = true
		bk, _, _, err := findBlockKey(ctx, t.kv, key[:codec.TablePrefixLen], epoch)
		if err != nil {
			return block{}, false, err
		}
		if bk == nil {
			t.learn(v, true, key[:codec.TablePrefixLen])
			if from := t.blockFrom[v]; string(key) >= from {
				return block{}, false, nil
			}
		}
	}
	ways := t.blockCache[v]
	for i, c := range ways {
		if c.b.epoch <= epoch && c.covers(pk) {
			copy(ways[1:i+1], ways[:i]) // most recent first
			ways[0] = c
			return c.b, true, nil
		}
	}
	b, ok, err := findBlock(ctx, t.kv, key, epoch)
	if err != nil || !ok {
		return b, ok, err
	}
	first, _, err1 := b.entry(0)
	last, _, err2 := b.entry(b.n - 1)
	if err1 != nil || err2 != nil {
		return b, ok, nil
	}
	if t.blockCache == nil {
		t.blockCache = map[int][]cachedBlock{}
	}
	if len(ways) < blockCacheWays {
		ways = append(ways, cachedBlock{})
	}
	copy(ways[1:], ways[:len(ways)-1])
	ways[0] = cachedBlock{b: b, first: first, last: last, at: epoch}
	t.blockCache[v] = ways
	return b, ok, nil
}

// Scan is storage.KV.Scan over [lower, upper), a range of one table's state
// keys (within its TableSpan), that reads a table holding blocks as rows
// (keys and values as a table without blocks stores them), tombstones left
// out. With blocks false it is kv.Scan. It reads vnode by vnode, with an
// iterator over the vnode's row keys and one over its blocks.
func Scan(ctx context.Context, kv storage.KV, lower, upper []byte, epoch uint64, blocks bool) (storage.Iterator, error) {
	if !blocks {
		return kv.Scan(ctx, lower, upper, epoch)
	}
	if len(lower) < 4 {
		return nil, fmt.Errorf("state scan of blocks: lower bound %x has no table id", lower)
	}
	m := &blockScan{ctx: ctx, kv: kv, epoch: epoch, table: binary.BigEndian.Uint32(lower), last: codec.VnodeCount - 1}
	if len(lower) >= codec.TablePrefixLen {
		_, v, _ := codec.SplitTablePrefix(lower)
		m.first, m.startPK = int(v), lower[codec.TablePrefixLen:]
	}
	if upper != nil && len(upper) >= 4 && binary.BigEndian.Uint32(upper) == m.table {
		// The last vnode with keys below upper (a PrefixEnd may end in the
		// vnode's first byte), and where in it upper cuts.
		switch _, v, _ := codec.SplitTablePrefix(upper); len(upper) {
		case 4:
			m.last = -1
		case 5:
			m.last = int(upper[4])<<8 - 1
		case codec.TablePrefixLen:
			m.last = int(v) - 1
		default:
			m.last, m.endPK = int(v), upper[codec.TablePrefixLen:]
		}
		m.last = min(m.last, codec.VnodeCount-1)
	}
	m.vnode = m.first
	if m.last >= 0 {
		// The iterators read to the end of the last vnode: its blocks' keys
		// lie past any bound on its row keys.
		m.upper = codec.PrefixEnd(codec.AppendTablePrefix(nil, m.table, uint16(m.last)))
	}
	return m, nil
}

// blocksEnd returns the key after every block key of vnode prefix: no
// encoded key starts with 0xFF (its first byte is a value or NULL marker).
func blocksEnd(prefix []byte) []byte {
	return append(append(append([]byte(nil), prefix[:codec.TablePrefixLen]...), blockMarker), 0xFF)
}

// blockScan merges a table's row keys with its blocks' rows, vnode by vnode.
// It reads through two iterators over its whole range, one at row keys and
// one at block keys, moved with Seek from vnode to vnode (an iterator each
// per vnode when the store's are no Seeker), and skips vnodes with no keys.
type blockScan struct {
	ctx   context.Context
	kv    storage.KV
	epoch uint64
	table uint32

	first, last    int // the vnodes in range
	startPK, endPK []byte
	upper          []byte // the end of the scan's range
	vnode          int    // the vnode being read
	entered        bool   // its iterators are at its keys
	prefix         []byte

	rows     storage.Iterator // at the vnode's row keys in range
	rowValid bool             // rows is at an unconsumed row key of the vnode

	blocks   storage.Iterator // at the vnode's blocks from the first in range
	blk      block
	blkI     int  // next row of blk
	blkValid bool // blk holds rows from blkI on
	blkDone  bool // no more blocks (in range) in this vnode

	seekKey    []byte
	rowVal     []byte
	key, value []byte
	err        error
	closed     bool
}

// position moves it to the first key at or after key: a Seek, or a new
// scan from key when it is no Seeker (or not open yet).
func (m *blockScan) position(it *storage.Iterator, key []byte) error {
	if sk, ok := (*it).(storage.Seeker); ok && *it != nil {
		if err := sk.Seek(key); err != nil {
			return err
		}
	} else {
		if *it != nil {
			err := (*it).Close()
			*it = nil
			if err != nil {
				return err
			}
		}
		var err error
		if *it, err = m.kv.Scan(m.ctx, key, m.upper, m.epoch); err != nil {
			return err
		}
	}
	return nil
}

// step moves it to its next key; nil at the end.
func step(it storage.Iterator) ([]byte, error) {
	err := it.Next()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return it.Key(), nil
}

// enter moves the iterators to the current vnode's keys, or on to the next
// vnode that has keys (past the last: nothing left).
func (m *blockScan) enter() error {
	for m.vnode <= m.last {
		m.prefix = codec.AppendTablePrefix(m.prefix[:0], m.table, uint16(m.vnode))
		m.seekKey = append(m.seekKey[:0], m.prefix...)
		if m.vnode == m.first {
			m.seekKey = append(m.seekKey, m.startPK...)
		}
		if err := m.position(&m.rows, m.seekKey); err != nil {
			return err
		}
		k, err := step(m.rows)
		if err != nil {
			return err
		}
		if k == nil || !bytes.HasPrefix(k, m.prefix) {
			// Nothing in this vnode: on to the vnode of the next key.
			if k == nil || len(k) < codec.TablePrefixLen || binary.BigEndian.Uint32(k) != m.table {
				m.vnode = m.last + 1
				return nil
			}
			_, v, _ := codec.SplitTablePrefix(k)
			m.vnode = max(int(v), m.vnode+1)
			continue
		}
		m.rowValid = m.isRowKey(k)
		m.blkDone, m.blkValid = false, false
		if !isBlockKey(k) || m.vnode == m.first && len(m.startPK) > 0 {
			// Row keys come first: the blocks are further on.
			m.seekKey = appendBlockKey(m.seekKey[:0], m.prefix, nil)
			if m.vnode == m.first {
				m.seekKey = append(m.seekKey, m.startPK...)
			}
			if err := m.position(&m.blocks, m.seekKey); err != nil {
				return err
			}
		} else if err := m.position(&m.blocks, k); err != nil {
			return err
		}
		return m.loadBlock(true)
	}
	return nil
}

// isRowKey reports whether k is a row key of the current vnode in range.
func (m *blockScan) isRowKey(k []byte) bool {
	if k == nil || !bytes.HasPrefix(k, m.prefix) || isBlockKey(k) {
		return false
	}
	return m.vnode != m.last || m.endPK == nil || bytes.Compare(k[codec.TablePrefixLen:], m.endPK) < 0
}

func (m *blockScan) closeIters() {
	if m.rows != nil {
		m.err = errors.Join(m.err, m.rows.Close())
		m.rows = nil
	}
	if m.blocks != nil {
		m.err = errors.Join(m.err, m.blocks.Close())
		m.blocks = nil
	}
}

// nextRowKey moves rows to its next row key.
func (m *blockScan) nextRowKey() error {
	k, err := step(m.rows)
	if err != nil {
		return err
	}
	m.rowValid = m.isRowKey(k)
	return nil
}

// loadBlock reads the vnode's next block (with first, the first one, from
// its first row at or after startPK), setting blkDone when there is none.
func (m *blockScan) loadBlock(first bool) error {
	m.blkValid = false
	k, err := step(m.blocks)
	if err != nil {
		return err
	}
	if k == nil || !bytes.HasPrefix(k, m.prefix) || !isBlockKey(k) {
		m.blkDone = true
		return nil
	}
	// The block's rows point into the iterator's value: it moves again
	// only for the next block.
	if m.blk, err = decodeBlock(m.blocks.Value()); err != nil {
		return fmt.Errorf("block %x: %w", m.blocks.Key(), err)
	}
	m.blkI, m.blkValid = 0, true
	if first && m.vnode == m.first && len(m.startPK) > 0 {
		if m.blkI, err = m.blk.search(m.startPK); err != nil {
			return err
		}
	}
	return nil
}

// blockRow returns the vnode's current block row, loading blocks as needed;
// ok is false when its blocks (in range) are done.
func (m *blockScan) blockRow() (pk, value []byte, ok bool, err error) {
	for !m.blkDone {
		if !m.blkValid || m.blkI == m.blk.n {
			if err := m.loadBlock(false); err != nil {
				return nil, nil, false, err
			}
			continue
		}
		if pk, value, err = m.blk.entry(m.blkI); err != nil {
			return nil, nil, false, err
		}
		if m.vnode == m.last && m.endPK != nil && bytes.Compare(pk, m.endPK) >= 0 {
			m.blkDone = true
			break
		}
		return pk, value, true, nil
	}
	return nil, nil, false, nil
}

func (m *blockScan) Next() error {
	if m.err != nil {
		return m.err
	}
	if err := m.next(); err != nil {
		m.err = err
		if !errors.Is(err, io.EOF) {
			m.err = fmt.Errorf("state scan of blocks: %w", err)
		}
	}
	return m.err
}

func (m *blockScan) next() error {
	for {
		if !m.entered {
			if m.vnode > m.last {
				return io.EOF
			}
			if err := m.enter(); err != nil {
				return err
			}
			if m.vnode > m.last {
				return io.EOF
			}
			m.entered = true
		}
		bpk, bval, haveBlk, err := m.blockRow()
		if err != nil {
			return err
		}
		if !m.rowValid && !haveBlk {
			m.vnode++
			m.entered = false
			continue
		}
		c := 0
		switch {
		case !haveBlk:
			c = -1
		case !m.rowValid:
			c = 1
		default:
			c = bytes.Compare(m.rows.Key()[codec.TablePrefixLen:], bpk)
		}
		if c <= 0 {
			v := m.rows.Value()
			tomb, isTomb := tombstoneEpoch(v)
			useBlock := c == 0 && isTomb && tomb < m.blk.epoch
			if !isTomb {
				m.key = append(m.key[:0], m.rows.Key()...)
				// Into its own buffer: m.value may point into a block.
				m.rowVal = append(m.rowVal[:0], v...)
				m.value = m.rowVal
			} else if useBlock {
				m.key = append(append(m.key[:0], m.prefix...), bpk...)
				m.value = bval
			}
			if c == 0 {
				m.blkI++
			}
			if err := m.nextRowKey(); err != nil {
				return err
			}
			if !isTomb || useBlock {
				return nil
			}
			continue
		}
		m.key = append(append(m.key[:0], m.prefix...), bpk...)
		m.value = bval // valid until the next Next, which may load another block
		m.blkI++
		return nil
	}
}

func (m *blockScan) Key() []byte   { return m.key }
func (m *blockScan) Value() []byte { return m.value }

func (m *blockScan) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	prev := m.err
	m.err = nil
	m.closeIters()
	err := m.err
	if prev != nil && !errors.Is(prev, io.EOF) {
		err = errors.Join(prev, err)
	}
	m.err = fmt.Errorf("state scan of blocks: %w", storage.ErrClosed)
	return err
}

// ChangedRows is storage.KV.ChangedKeys over [lower, upper), a range of one
// table's state keys, for a table that may hold blocks: each row key whose
// row changed in (since, until] once, in key order, with its row as of until
// (Deleted when it has none then). With blocks false it is kv.ChangedKeys.
func ChangedRows(ctx context.Context, kv storage.KV, lower, upper []byte, since, until uint64, blocks bool) (storage.ChangeIterator, error) {
	if !blocks {
		return kv.ChangedKeys(ctx, lower, upper, since, until)
	}
	// The blocks of the vnode upper cuts into sort after upper: read on to
	// the vnode's end and leave out the rows at or above upper.
	wide := upper
	if len(upper) > codec.TablePrefixLen {
		wide = codec.PrefixEnd(upper[:codec.TablePrefixLen])
	}
	it, err := kv.ChangedKeys(ctx, lower, wide, since, until)
	if err != nil {
		return nil, err
	}
	return &changedRows{ctx: ctx, kv: kv, it: it, lower: lower, upper: upper, since: since, until: until}, nil
}

// changedRows gathers one vnode's changed row keys (its own and its new
// blocks' rows) at a time, then reads each row as of until.
type changedRows struct {
	ctx          context.Context
	kv           storage.KV
	it           storage.ChangeIterator
	lower, upper []byte
	since, until uint64

	itDone  bool
	itValid bool
	keys    []changedKey // the vnode's, sorted, deduplicated
	pos     int

	key, value []byte
	deleted    bool
	epoch      uint64
	err        error
	closed     bool
}

type changedKey struct {
	key   string
	epoch uint64
}

func (c *changedRows) inRange(key []byte) bool {
	return bytes.Compare(key, c.lower) >= 0 && (c.upper == nil || bytes.Compare(key, c.upper) < 0)
}

// gather reads the change iterator's next vnode.
func (c *changedRows) gather() error {
	c.keys, c.pos = c.keys[:0], 0
	var prefix []byte
	for {
		if !c.itValid {
			if c.itDone {
				break
			}
			err := c.it.Next()
			if errors.Is(err, io.EOF) {
				c.itDone = true
				break
			}
			if err != nil {
				return err
			}
			c.itValid = true
		}
		k := c.it.Key()
		if len(k) < codec.TablePrefixLen {
			c.itValid = false
			continue
		}
		if prefix == nil {
			prefix = append([]byte(nil), k[:codec.TablePrefixLen]...)
		} else if !bytes.Equal(k[:codec.TablePrefixLen], prefix) {
			break // the next vnode's
		}
		c.itValid = false
		if !isBlockKey(k) {
			if c.inRange(k) {
				c.keys = append(c.keys, changedKey{string(k), c.it.Epoch()})
			}
			continue
		}
		// The rows of the key's block as of until (unless deleted) and as
		// of since (a block's key is its last row's: a deleted block and
		// a later one can share it) may all have changed.
		epoch := c.it.Epoch()
		var now []byte
		if !c.it.Deleted() {
			now = slices.Clone(c.it.Value())
		}
		was, found, err := c.kv.Get(c.ctx, k, c.since, nil)
		if err != nil {
			return err
		}
		if !found {
			was = nil
		}
		for _, v := range [][]byte{now, was} {
			if v == nil {
				continue
			}
			b, err := decodeBlock(v)
			if err != nil {
				return fmt.Errorf("block %x: %w", k, err)
			}
			for i := range b.n {
				pk, _, err := b.entry(i)
				if err != nil {
					return err
				}
				key := string(prefix) + string(pk)
				if c.inRange([]byte(key)) {
					c.keys = append(c.keys, changedKey{key, epoch})
				}
			}
		}
	}
	sort.Slice(c.keys, func(i, j int) bool { return c.keys[i].key < c.keys[j].key })
	out := c.keys[:0]
	for _, k := range c.keys {
		if n := len(out); n > 0 && out[n-1].key == k.key {
			out[n-1].epoch = max(out[n-1].epoch, k.epoch)
			continue
		}
		out = append(out, k)
	}
	c.keys = out
	return nil
}

func (c *changedRows) Next() error {
	if c.err != nil {
		return c.err
	}
	for c.pos == len(c.keys) {
		if c.itDone && !c.itValid {
			c.err = io.EOF
			return c.err
		}
		if err := c.gather(); err != nil {
			c.err = fmt.Errorf("state changed rows: %w", err)
			return c.err
		}
	}
	k := c.keys[c.pos]
	c.pos++
	c.key = append(c.key[:0], k.key...)
	c.epoch = k.epoch
	v, found, err := GetRow(c.ctx, c.kv, c.key, c.until, c.value[:0], true)
	if err != nil {
		c.err = fmt.Errorf("state changed rows: %w", err)
		return c.err
	}
	c.deleted = !found
	if found {
		c.value = v
	} else {
		c.value = c.value[:0]
	}
	return nil
}

func (c *changedRows) Key() []byte   { return c.key }
func (c *changedRows) Epoch() uint64 { return c.epoch }
func (c *changedRows) Deleted() bool { return c.deleted }
func (c *changedRows) Value() []byte { return c.value }

func (c *changedRows) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	err := c.it.Close()
	if c.err != nil && !errors.Is(c.err, io.EOF) {
		err = errors.Join(c.err, err)
	}
	c.err = fmt.Errorf("state changed rows: %w", storage.ErrClosed)
	return err
}

// write adds one pending write to b: a delete in a table with blocks is a
// tombstone when a fresh row about to be sealed holds the key (heldFresh),
// and left to editBlocks when a stored block does (heldStored).
func (t *Table) write(b *storage.Batch, e entry, epoch uint64) {
	switch {
	case !e.del:
		b.Put([]byte(e.key), e.value)
		t.wrote(e.key, false)
	case t.schema.Blocks && isBlockKey([]byte(e.key)):
		b.Delete([]byte(e.key)) // DeleteBlocks
	case t.schema.Blocks && t.heldFresh(e.key):
		t.valBuf = appendTombstone(t.valBuf[:0], epoch)
		b.Put([]byte(e.key), t.valBuf)
		t.wrote(e.key, false)
	case t.schema.Blocks && t.heldStored(e.key):
		t.blockDels = append(t.blockDels, e.key) // editBlocks
	default:
		b.Delete([]byte(e.key))
	}
}

// heldFresh reports whether key is a fresh row of a flushed layer (about
// to be sealed, or sealed and not yet committed).
func (t *Table) heldFresh(key string) bool {
	for _, l := range t.layers {
		if e, ok := l.find(key); ok && e.fresh {
			return true
		}
	}
	return false
}

// heldStored reports whether key is a row of a stored block (at the
// committed epoch) that no pending DeleteBlocks deletes; when the store
// cannot tell, it says yes.
func (t *Table) heldStored(key string) bool {
	k := []byte(key)
	blk, ok, err := t.findBlockCached(context.Background(), k, t.storeEpoch(t.kv.CommittedEpoch()))
	if err == nil && ok {
		_, ok, err = blk.get(k[codec.TablePrefixLen:])
	}
	if err != nil {
		return true
	}
	if !ok {
		return false
	}
	// A block this epoch deletes (DeleteBlocks) takes its rows with it.
	last, _, err := blk.entry(blk.n - 1)
	return err != nil || !t.deletesBlock(string(appendBlockKey(nil, k, last)))
}

// deletesBlocks reports whether the pending writes delete blocks.
func (t *Table) deletesBlocks() bool {
	if t.cur.dropsBlocks || t.pruneEdits() {
		return true
	}
	for _, l := range t.layers {
		if l.dropsBlocks {
			return true
		}
	}
	return false
}

// deletesBlock reports whether the pending writes delete block key bk (only
// DeleteBlocks writes block keys, and only deletes).
func (t *Table) deletesBlock(bk string) bool {
	t.cur.indexAll()
	if _, ok := t.cur.index[bk]; ok {
		return true
	}
	for _, l := range t.layers {
		if _, ok := l.find(bk); ok {
			return true
		}
	}
	return false
}

// DeleteBlocks deletes, in the current epoch, every block of the table as of
// epoch (none when it stores no blocks): the first step of deleting all its
// rows (a TRUNCATE), whose deletes are then plain deletes, not tombstones
// kept for good. The caller deletes every row it reads after (they read as
// before until then).
func (t *Table) DeleteBlocks(ctx context.Context, epoch uint64) error {
	if !t.schema.Blocks {
		return nil
	}
	t.blockCache = nil
	t.gaps.clear()
	t.cur.dropsBlocks = true
	// Blocks that deletes rewrote in epochs not committed yet.
	t.pruneEdits()
	for _, e := range t.edits {
		if e.key != "" {
			t.cur.put([]byte(e.key), nil, true, false)
		}
	}
	for v := range codec.VnodeCount {
		prefix := codec.AppendTablePrefix(nil, t.schema.TableID, uint16(v))
		err := scanEach(ctx, t.kv, appendBlockKey(nil, prefix, nil), blocksEnd(prefix), t.storeEpoch(epoch), func(k, _ []byte) {
			t.cur.put(k, nil, true, false)
		})
		if err != nil {
			return fmt.Errorf("state table %d: delete blocks: %w", t.schema.TableID, err)
		}
	}
	return nil
}

// SealJob is the writing of fresh rows that TakeFresh took from a table: it
// reads only what it holds and the store, so it may run on another
// goroutine than the table's owner, before the epoch commits. The jobs of
// one table are written and committed one at a time, in epoch order.
type SealJob struct {
	kv     storage.KV
	epoch  uint64
	rows   []freshRow
	asRows []freshRow                      // fresh rows written as rows
	before [codec.VnodeCount][]sealedBlock // by vnode: blocks an earlier job may have written and not committed
	// noBlockFrom, by vnode: no stored block of the vnode ends at or after this key ("": unknown).
	noBlockFrom [codec.VnodeCount]string
	// gaps are the table's (overlaps).
	gaps *blockGaps
	// free, by vnode: runs ([lo, hi], full keys) that a key gap of the table held as
	// TakeFresh took them: no stored or sealed block overlaps them. (A job's runs of a
	// vnode, in key order, never overlap one another.)
	free [codec.VnodeCount][]keyGap
	// found tells the table that the store held no block end at or after a key (learn).
	found  func(vnodeBound)
	keyBuf []byte
	valBuf []byte
	pks    []string
	values [][]byte
}

// blockGaps are, per vnode prefix, a key range [lo, hi) (hi "": no end) that no block of the
// vnode holds a key of: one a seal job found in the store (from a block's first key to the
// first row of the next stored block), less the blocks that the table's jobs sealed and had not
// committed then (before) and those they sealed since (took). The jobs of a copy, writing each
// vnode's rows in key order (several ranges of keys at once in a parallel copy), then find
// their blocks inside it without a store read: only the table's own writes add blocks to its
// state table. Seal jobs run one at a time, off the table owner's goroutine.
type blockGaps struct {
	mu sync.Mutex
	m  map[string]keyGap
}

type keyGap struct{ lo, hi string }

// holds reports whether [first, last] (full keys) lies in the vnode's gap.
func (g *blockGaps) holds(first, last string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.m[first[:codec.TablePrefixLen]]
	return ok && r.lo <= first && (r.hi == "" || last < r.hi)
}

// set records the vnode's gap [lo, hi).
func (g *blockGaps) set(lo, hi string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]keyGap{}
	}
	g.m[lo[:codec.TablePrefixLen]] = keyGap{lo, hi}
}

// took narrows the vnode's gap to what lies above a block over [first, last] that
// intersects it.
func (g *blockGaps) took(first, last string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := first[:codec.TablePrefixLen]
	r, ok := g.m[p]
	if !ok || last < r.lo || r.hi != "" && first >= r.hi {
		return
	}
	r.lo = last + "\x00"
	if r.hi != "" && r.lo >= r.hi {
		delete(g.m, p)
		return
	}
	g.m[p] = r
}

// clear forgets every gap.
func (g *blockGaps) clear() {
	g.mu.Lock()
	g.m = nil
	g.mu.Unlock()
}

type freshRow struct {
	key   string
	value []byte
	run   uint32
	vnode uint16 // the key's (read once: comparing keys' bytes costs a cache miss a row)
}

func freshKey(r *freshRow) string    { return r.key }
func freshRun(r *freshRow) uint32    { return r.run }
func compareFresh(a, b freshRow) int { return strings.Compare(a.key, b.key) }

// sameRun reports whether two fresh rows may share a block: the same vnode
// and run.
func sameRun(a, b *freshRow) bool {
	return a.run == b.run && a.vnode == b.vnode
}

// TakeFresh takes the fresh rows of the flushed layers of epochs up to
// epoch (nil when there are none), for a SealJob to write into the batch
// the caller commits at epoch: each vnode's rows of one run (InsertFresh),
// when at least minBlockRows, as blocks of up to blockRows rows, the rest (and any whose block
// would overlap a block of the vnode already stored or sealed) as rows. A
// table with fresh rows must be sealed before the epoch they were flushed
// in commits. The rows stay readable in the layers until then.
func (t *Table) TakeFresh(epoch uint64) *SealJob {
	// What earlier jobs found: the next one of a copy's seals (keys above its rows) then
	// looks for no block.
	t.sealMu.Lock()
	found := t.sealBounds
	t.sealBounds = nil
	t.sealMu.Unlock()
	for _, b := range found {
		t.learn(b.vnode, true, []byte(b.key))
	}
	// No key is fresh in two layers (a later write of a key makes the earlier one not its
	// own): the layers' fresh rows, sorted at once (each layer's are in key order, and a copy's
	// later layers hold each vnode's later keys: the sort is then one pass).
	n := 0
	for _, l := range t.layers {
		if l.unsealed && l.epoch <= epoch {
			n += len(l.entries)
		}
	}
	var rows, asRows []freshRow
	if n > 0 {
		rows = make([]freshRow, 0, n)
	}
	rewritten := t.rewrittenKeys(epoch)
	var taking []int // the layers taken, oldest first
	for li, l := range t.layers {
		if l.unsealed && l.epoch <= epoch {
			taking = append(taking, li)
			l.unsealed = false
		}
	}
	take := func(li, v int, e *entry) {
		if !e.fresh {
			return
		}
		at, rewrote := rewritten[e.key]
		if rewrote && at > li {
			return // a newer write is the key's
		}
		if rewrote || e.asRow || t.layers[li].epoch == t.stagedDelAt {
			// An older write of the key (a delete's tombstone) went
			// into the batch at its flush, or one staged at the same
			// epoch may have, and must not hide this one: as a row,
			// after it in the batch.
			asRows = append(asRows, freshRow{e.key, e.value, e.run, uint16(v)})
			return
		}
		rows = append(rows, freshRow{e.key, e.value, e.run, uint16(v)})
	}
	// Each layer is in key order, so vnode by vnode: the vnode's rows of each layer in turn are
	// the rows in key order when each layer's come after the previous one's (a copy's layers),
	// with no sort.
	sorted := false
	if bounds := vnodeBounds(t.layers, taking); bounds != nil {
		sorted = true
		for v := range codec.VnodeCount {
			start := len(rows)
			for i, li := range taking {
				from := len(rows)
				es := t.layers[li].entries[bounds[i][v]:bounds[i][v+1]]
				for k := range es {
					take(li, v, &es[k])
				}
				if from > start && from < len(rows) && rows[from-1].key >= rows[from].key {
					sorted = false
				}
			}
		}
	} else {
		for _, li := range taking {
			for k := range t.layers[li].entries {
				e := &t.layers[li].entries[k]
				v := 0
				if len(e.key) >= codec.TablePrefixLen {
					v = vnodeOf(e.key)
				}
				take(li, v, e)
			}
		}
	}
	if len(rows) > 0 && !sorted {
		rows = sortByVnode(rows, freshKey, freshRun, compareFresh)
	}
	if len(rows) == 0 && len(asRows) == 0 {
		return nil
	}
	committed := t.kv.CommittedEpoch()
	j := &SealJob{kv: t.kv, epoch: epoch, rows: rows, asRows: asRows, found: t.noteSealBound, gaps: &t.gaps}
	if t.sealed == nil {
		t.sealed = make([][]sealedBlock, codec.VnodeCount)
	}
	for v, sbs := range t.sealed {
		if len(sbs) > 0 {
			t.sealed[v] = slices.DeleteFunc(sbs, func(s sealedBlock) bool { return s.epoch <= committed })
			j.before[v] = slices.Clone(t.sealed[v]) // the job may run on as the next prunes
		}
	}
	// What the job may write as blocks, per vnode and run: the range of its rows.
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && sameRun(&rows[end], &rows[start]) {
			end++
		}
		first, last := rows[start].key, rows[end-1].key
		v := rows[start].vnode
		t.sealed[v] = append(t.sealed[v], sealedBlock{epoch: epoch, first: first, last: last})
		if end-start >= minBlockRows && t.inFreeRange(first, last, epoch) {
			j.free[v] = append(j.free[v], keyGap{first, last})
		}
		j.noBlockFrom[v] = t.blockFrom[v]
		// Its rows may be written as rows, and a block over them spans the keys between them
		// too: no gap keeps any of the range.
		t.narrowGapsSpan(int(v), first, last)
		start = end
	}
	// Every fresh row may be written as a row, or into a block ending at it: the bounds rise
	// over each vnode's greatest (rows are in key order; the gaps are narrowed above).
	for i, r := range rows {
		if i+1 == len(rows) || rows[i+1].vnode != r.vnode {
			t.wrote(r.key, true)
		}
	}
	for _, r := range asRows {
		t.wrote(r.key, true)
	}
	return j
}

// vnodeBounds returns, for each of the layers taking (indexes into layers), where each vnode's
// entries start (the last bound: the end), or nil when their keys are not all of one table
// and its vnodes.
func vnodeBounds(layers []*layer, taking []int) [][codec.VnodeCount + 1]int {
	bounds := make([][codec.VnodeCount + 1]int, len(taking))
	table, some := uint32(0), false
	for i, li := range taking {
		es := layers[li].entries
		if len(es) == 0 {
			continue
		}
		first, last := es[0].key, es[len(es)-1].key
		if len(first) < codec.TablePrefixLen || len(last) < codec.TablePrefixLen ||
			tableOf(first) != tableOf(last) || some && tableOf(first) != table || vnodeOf(last) >= codec.VnodeCount {
			return nil
		}
		table, some = tableOf(first), true
		b := &bounds[i]
		for v := 1; v <= codec.VnodeCount; v++ {
			b[v] = b[v-1] + sort.Search(len(es)-b[v-1], func(k int) bool { return vnodeOf(es[b[v-1]+k].key) >= v })
		}
	}
	return bounds
}

// noteSealBound keeps what a seal job found for the next TakeFresh (any goroutine).
func (t *Table) noteSealBound(b vnodeBound) {
	t.sealMu.Lock()
	t.sealBounds = append(t.sealBounds, b)
	t.sealMu.Unlock()
}

// Write adds the job's rows to b.
func (j *SealJob) Write(b *storage.Batch) {
	rows := j.rows
	// Room for all of it at once: a copy's epoch seals tens of MB, which growing the batch
	// by doubling would copy about as often again.
	size := 0
	for _, rs := range [][]freshRow{rows, j.asRows} {
		for _, r := range rs {
			size += len(r.key) + len(r.value) + 8
		}
	}
	b.Grow(size, len(j.asRows)+len(rows)/minBlockRows+1)
	asRows := func(rs []freshRow) {
		for _, r := range rs {
			b.Put([]byte(r.key), r.value)
		}
	}
	// A vnode's blocks go into the batch after its rows, whose keys sort before them: the
	// job's writes are then one run of ascending keys, which the batch's Normalize merges
	// with the epoch's other writes instead of sorting them all (a vnode's one-row runs
	// between its blocks made as many runs as there were of them).
	var blocks [][]freshRow // the vnode's parts that go as blocks, in key order
	vnode := -1
	putBlocks := func() {
		for _, part := range blocks {
			j.pks, j.values = j.pks[:0], j.values[:0]
			for _, r := range part {
				j.pks = append(j.pks, r.key[codec.TablePrefixLen:])
				j.values = append(j.values, r.value)
			}
			last := part[len(part)-1].key
			j.keyBuf = appendBlockKey(j.keyBuf[:0], []byte(last[:codec.TablePrefixLen]), []byte(last[codec.TablePrefixLen:]))
			j.valBuf = appendBlock(j.valBuf[:0], j.epoch, j.pks, j.values)
			b.Put(j.keyBuf, j.valBuf)
		}
		blocks = blocks[:0]
	}
	for len(rows) > 0 {
		if v := int(rows[0].vnode); v != vnode {
			putBlocks()
			vnode = v
		}
		n := 1
		for n < len(rows) && sameRun(&rows[n], &rows[0]) {
			n++
		}
		run := rows[:n]
		rows = rows[n:]
		if n < minBlockRows {
			asRows(run)
			continue
		}
		for len(run) > 0 {
			// Up to blockRows rows and blockBytes bytes; fewer than
			// minBlockRows go as rows.
			m, size := 0, 0
			for m < min(len(run), blockRows) {
				size += len(run[m].key) + len(run[m].value) + 8
				if size > blockBytes && m > 0 {
					break
				}
				m++
			}
			if rest := len(run) - m; rest > 0 && rest < minBlockRows && m == blockRows {
				m = (len(run) + 1) / 2 // no small block at the end
			}
			part := run[:m]
			run = run[m:]
			if m < minBlockRows {
				asRows(part)
				continue
			}
			first, last := part[0].key, part[len(part)-1].key
			if j.overlaps(first, last) {
				asRows(part)
				continue
			}
			blocks = append(blocks, part)
			j.gaps.took(first, last)
		}
	}
	putBlocks()
	asRows(j.asRows)
	j.rows, j.asRows = nil, nil
}

// sealedBlock is the key range of a vnode's rows a SealJob took and may
// have written as blocks, until its epoch commits.
type sealedBlock struct {
	epoch       uint64
	first, last string
}

// rewrittenKeys returns, for each key a write other than a fresh insert
// gives in the flushed layers from the first one of the epoch of the first
// one TakeFresh(epoch) reads on, or in
// the current buffer, the newest layer that writes it (len(layers) for the
// buffer): a fresh row of an older layer is then not the key's row. Nil
// when there are none (a copy's epochs).
func (t *Table) rewrittenKeys(epoch uint64) map[string]int {
	var out map[string]int
	note := func(key string, at int) {
		if out == nil {
			out = map[string]int{}
		}
		out[key] = at
	}
	first := slices.IndexFunc(t.layers, func(l *layer) bool { return l.unsealed && l.epoch <= epoch })
	if first < 0 {
		return nil
	}
	// From the first layer of that epoch: a write of an earlier layer of
	// the epoch went into its batch with a version no older than a block's.
	for first > 0 && t.layers[first-1].epoch == t.layers[first].epoch {
		first--
	}
	for li := first; li < len(t.layers); li++ {
		for _, e := range t.layers[li].entries {
			if !e.fresh {
				note(e.key, li)
			}
		}
	}
	for _, e := range t.cur.entries {
		note(e.key, len(t.layers))
	}
	return out
}

// overlaps reports whether a block over [first, last] (full keys of one
// vnode) would overlap a stored block or one an earlier job may have
// written and not committed; when the store cannot tell, it says yes.
func (j *SealJob) overlaps(first, last string) bool {
	v := vnodeOf(first)
	for _, s := range j.before[v] {
		if s.first <= last && first <= s.last {
			return true
		}
	}
	for _, r := range j.free[v] {
		if r.lo <= first && last <= r.hi {
			return false
		}
	}
	if from := j.noBlockFrom[v]; from != "" && first >= from {
		return false // every stored block of the vnode ends below first
	}
	if j.gaps.holds(first, last) {
		return false
	}
	// The first stored block ending at or after first is the one that may overlap; the keys
	// from first to its first row are a gap, less the blocks earlier jobs sealed (not in the
	// store the lookup reads), for the vnode's later blocks.
	p := first[:codec.TablePrefixLen]
	blk, _, err := findBlock(context.Background(), j.kv, []byte(first), j.kv.CommittedEpoch())
	if err != nil {
		return true
	}
	hi := ""
	if blk.n > 0 {
		bfirst, _, err := blk.entry(0)
		if err != nil {
			return true
		}
		hi = p + string(bfirst)
		if hi <= last {
			return true
		}
	} else if j.found != nil {
		j.found(vnodeBound{vnodeOf(first), first})
	}
	// The earlier jobs' blocks (none holds a key of [first, last]: checked above) that lie
	// above the block end the gap sooner.
	for _, s := range j.before[v] {
		if s.first > last && (hi == "" || s.first < hi) {
			hi = s.first
		}
	}
	j.gaps.set(first, hi)
	return false
}

// getRow is GetRow for the table's own point reads, through its block cache.
func (t *Table) getRow(ctx context.Context, key []byte, epoch uint64, dst []byte) ([]byte, bool, error) {
	find := func() (block, bool, error) { return t.findBlockCached(ctx, key, epoch) }
	none, err := t.noRowKey(ctx, key, epoch)
	if err != nil {
		return nil, false, err
	}
	if none {
		// Only a block may hold the row.
		return getRow(ctx, noRowKeys{t.kv}, key, epoch, dst, find)
	}
	return getRow(ctx, t.kv, key, epoch, dst, find)
}

// rowGap is a key range of a vnode where the store holds no row key at
// epochs from at on, from lo (exclusive when open: the table wrote lo) to hi
// (exclusive; "": the vnode's end).
type rowGap struct {
	lo, hi string
	open   bool
	at     uint64
}

func (g rowGap) holds(k string, epoch uint64) bool { return epoch >= g.at && g.covers(k) }

// covers reports whether k lies in the gap's range, at whatever epoch.
func (g rowGap) covers(k string) bool { return g.from(k) && (g.hi == "" || k < g.hi) }

// from reports whether k lies at or above the gap's low end.
func (g rowGap) from(k string) bool {
	return k > g.lo || !g.open && k == g.lo
}

// above makes key (a key the gap may hold) its exclusive low end; false when
// nothing is left of it.
func (g *rowGap) above(key string) bool {
	g.lo, g.open = key, true
	return !g.empty()
}

// empty reports whether no key lies in the gap.
func (g rowGap) empty() bool {
	switch {
	case g.hi == "":
		return false
	case g.lo >= g.hi:
		return true
	}
	// Above an open lo, nothing lies below lo+"\x00".
	return g.open && len(g.hi) == len(g.lo)+1 && g.hi[len(g.lo)] == 0 && g.hi[:len(g.lo)] == g.lo
}

// noRowKey reports whether the store holds no row key key, by its vnode's
// rowGap: one read finds the first row key at or after key, and the gap up
// to it answers the reads after (changes applied in key order to rows a copy
// stored in blocks then read one row key a gap, not one a row). A read below
// the gap reads the row key itself.
func (t *Table) noRowKey(ctx context.Context, key []byte, epoch uint64) (bool, error) {
	if !t.schema.Blocks || len(key) < codec.TablePrefixLen {
		return false, nil
	}
	_, vnode, _ := codec.SplitTablePrefix(key)
	v, k := int(vnode), string(key)
	g, ok := t.rowGaps[v]
	switch {
	case ok && g.holds(k, epoch):
		return true, nil
	case ok && (!g.from(k) || epoch < g.at):
		return false, nil
	}
	// Row keys sort before the vnode's blocks (blockMarker).
	end := append(append([]byte(nil), key[:codec.TablePrefixLen]...), blockMarker)
	it, err := t.kv.Scan(ctx, key, end, epoch)
	if err != nil {
		return false, err
	}
	g = rowGap{lo: k, at: epoch}
	switch err := it.Next(); {
	case errors.Is(err, io.EOF):
	case err != nil:
		it.Close()
		return false, err
	default:
		g.hi = string(it.Key())
	}
	if err := it.Close(); err != nil {
		return false, err
	}
	upper := g.hi
	if upper == "" {
		upper = string(end)
	}
	t.abovePending(&g, upper, epoch)
	if g.empty() {
		delete(t.rowGaps, v)
		return false, nil
	}
	if t.rowGaps == nil {
		t.rowGaps = map[int]rowGap{}
	}
	t.rowGaps[v] = g
	return g.holds(k, epoch), nil
}

// abovePending raises gap g (found in the store at epoch, up to upper) over
// the table's writes in it that the store does not hold at epoch. The table's
// own writes are the only ones: those flushed and not in the store at epoch
// are in its layers above epoch, or of epoch itself when epoch is staged and
// not committed (wrote narrows the gap for those flushed from now on).
func (t *Table) abovePending(g *rowGap, upper string, epoch uint64) {
	committed := t.kv.CommittedEpoch()
	for _, l := range t.layers {
		if l.epoch < epoch || l.epoch == epoch && epoch <= committed {
			// In the store at epoch: committed, or staged again at epoch
			// (Stage). A layer of a staged epoch itself was flushed after
			// the stage.
			continue
		}
		i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].key >= upper })
		if i > 0 && g.from(l.entries[i-1].key) {
			g.above(l.entries[i-1].key)
		}
	}
	// The runs seal jobs took that the store does not hold at epoch: a block over one spans the
	// keys between its rows too (the rows in the layers raised g only above the last one
	// below upper), so g keeps only what lies above each run it meets.
	if t.sealed == nil || len(g.lo) < codec.TablePrefixLen {
		return
	}
	for _, sb := range t.sealed[vnodeOf(g.lo)] {
		if sb.epoch < epoch || sb.epoch == epoch && epoch <= committed {
			continue
		}
		if g.from(sb.last) && (upper == "" || sb.first < upper) {
			g.above(sb.last)
		}
	}
}

// Key gaps. StoredKeys keeps, per vnode, up to maxKeyGaps ranges its seeks
// found without a row key and outside every block's range (from the key
// asked to the first stored row key or block's first row after it), narrowed
// by the table's writes as rowGaps are. A key check inside one needs no seek,
// of rows or blocks: sessions inserting ascending keys from ranges of their
// own (8 connections, each its ids) each land in the gap between their last
// key and the next session's first, in every vnode. A seal job's run inside
// one overlaps no block (TakeFresh).
//
// A vnode's key gaps are sorted and apart: each one's hi is set and at most
// the next one's lo. Only the last gap whose lo is at most a key can hold it,
// and a binary search finds it (every row's key check and write look one up).
const maxKeyGaps = 16

// inFreeRange reports whether one key gap of first's vnode holds both first and last (keys
// of the vnode, first <= last) at epoch: nothing the store holds or the table sealed lies in
// [first, last], and no block's range meets it. Called before the table's writes of them
// narrow the gap.
func (t *Table) inFreeRange(first, last string, epoch uint64) bool {
	v := vnodeOf(first)
	i := t.keyGapAt(v, first)
	if i < 0 {
		return false
	}
	g := t.keyGaps[v][i]
	return g.holds(first, epoch) && g.covers(last)
}

// keyGapAt returns the index of the one key gap of vnode v that may hold k,
// or -1.
func (t *Table) keyGapAt(v int, k string) int {
	if t.keyGaps == nil {
		return -1
	}
	gs := t.keyGaps[v]
	// The first gap whose lo is above k; the one before it is the candidate.
	i := sort.Search(len(gs), func(i int) bool { return gs[i].lo > k })
	return i - 1
}

// inKeyGap reports whether a key gap of vnode v holds k at epoch.
func (t *Table) inKeyGap(v int, k string, epoch uint64) bool {
	i := t.keyGapAt(v, k)
	return i >= 0 && t.keyGaps[v][i].holds(k, epoch)
}

// addKeyGap records that the store holds no row key of vnode v in [lo, hi),
// and no block whose range meets it, at epoch (hi is a row key of v, or a
// block's first row's), less the table's writes not in the store.
// Gaps it overlaps are dropped (a gap may always shrink: it only spares
// seeks), and with maxKeyGaps gaps the one found at the oldest epoch.
func (t *Table) addKeyGap(v int, lo, hi string, epoch uint64) {
	g := rowGap{lo: lo, hi: hi, at: epoch}
	t.abovePending(&g, hi, epoch)
	if g.empty() || g.hi == "" {
		return
	}
	if t.keyGaps == nil {
		t.keyGaps = make([][]rowGap, codec.VnodeCount)
	}
	gs := slices.DeleteFunc(t.keyGaps[v], func(o rowGap) bool { return o.hi > g.lo && g.hi > o.lo })
	if len(gs) == maxKeyGaps {
		oldest := 0
		for i := range gs {
			if gs[i].at < gs[oldest].at {
				oldest = i
			}
		}
		gs = slices.Delete(gs, oldest, oldest+1)
	}
	i := sort.Search(len(gs), func(i int) bool { return gs[i].lo > g.lo })
	t.keyGaps[v] = slices.Insert(gs, i, g)
}

// narrowGapsSpan takes [first, last] (keys of vnode v: a seal job's run, whose rows it writes
// as rows, or as blocks that span the keys between them too; or one key, narrowGaps) out of the
// vnode's row gap and key gaps: a gap that meets it keeps only what lies above last (its lo
// rises, so the key gaps stay sorted and apart).
func (t *Table) narrowGapsSpan(v int, first, last string) {
	if g, ok := t.rowGaps[v]; ok && g.from(last) && (g.hi == "" || first < g.hi) {
		if !g.above(last) {
			delete(t.rowGaps, v)
		} else {
			t.rowGaps[v] = g
		}
	}
	if t.keyGaps == nil {
		return
	}
	// Key gaps are sorted and apart, each with its hi set: those meeting the range run from
	// the first ending above first to the last starting at or below last.
	gs := t.keyGaps[v]
	i := sort.Search(len(gs), func(k int) bool { return gs[k].hi > first })
	j := i
	for j < len(gs) && gs[j].from(last) {
		j++
	}
	if i == j {
		return
	}
	n := i
	if g := gs[j-1]; g.above(last) { // only the last may reach above last
		gs[n] = g
		n++
	}
	t.keyGaps[v] = append(gs[:n], gs[j:]...)
}

// noRowKeys is a store whose Get finds nothing (getRow's row-key read, for a
// key in a rowGap).
type noRowKeys struct{ storage.KV }

func (noRowKeys) Get(context.Context, []byte, uint64, []byte) ([]byte, bool, error) {
	return nil, false, nil
}

// storedKeysBlocks is StoredKeys for a table with blocks, keys in key order
// (order): one iterator answers for the keys' own entries and one finds the
// block that may hold each key (the first block key at or after the key's),
// each stepping once and else seeking, as StoredKeys does for row keys. A
// store whose iterators are no Seeker answers with get (GetRow).
func (t *Table) storedKeysBlocks(ctx context.Context, at uint64, keys [][]byte, order []int, found []bool, get func(i int) error) error {
	_, upper := codec.TableSpan(t.schema.TableID)
	first := keys[order[0]]
	if len(first) < codec.TablePrefixLen {
		return fmt.Errorf("state table %d: stored keys: key %x has no vnode", t.schema.TableID, first)
	}
	// The row keys' iterator is opened when a key first needs it: keys in
	// key gaps or above their vnode's keys need none, and a scan writes the
	// store's waiting commits first (with NoSync, a whole commit window).
	var rows storage.Iterator
	var rs storage.Seeker
	defer func() {
		if rows != nil {
			rows.Close()
		}
	}()
	openRows := func(k []byte) (seeks bool, err error) {
		if rows == nil {
			if rows, err = t.kv.Scan(ctx, k, upper, at); err != nil {
				return false, fmt.Errorf("state table %d: stored keys: %w", t.schema.TableID, err)
			}
			rs, _ = rows.(storage.Seeker)
		}
		return rs != nil, nil
	}
	// to moves it (at cur, started: moved before) to the first key at or
	// after k: a step when that is the next key, else a seek.
	to := func(it storage.Iterator, sk storage.Seeker, cur []byte, started *bool, k []byte) ([]byte, error) {
		if *started && (cur == nil || bytes.Compare(cur, k) >= 0) {
			return cur, nil // keys asked only grow: nothing lies between
		}
		*started = true
		c, err := step(it)
		if err != nil || c == nil || bytes.Compare(c, k) >= 0 {
			return c, err
		}
		if err := sk.Seek(k); err != nil {
			return nil, err
		}
		return step(it)
	}
	var err error
	var ok bool
	var blocks storage.Iterator
	var bs storage.Seeker
	var rcur, bcur, target, decoded []byte
	var blk block
	var rStarted, bStarted bool
	for n, i := range order {
		k := keys[i]
		_, vn, _ := codec.SplitTablePrefix(k)
		v := int(vn)
		if t.aboveVnode(k) {
			found[i] = false // above every key of its vnode
			continue
		}
		if t.inKeyGap(v, string(k), at) {
			found[i] = false // no row key, no block's row and no block's range holds it
			continue
		}
		if seeks, err := openRows(k); err != nil {
			return err
		} else if !seeks {
			for _, i := range order[n:] {
				if err := get(i); err != nil {
					return err
				}
			}
			return nil
		}
		if rcur, err = to(rows, rs, rcur, &rStarted, k); err != nil {
			return fmt.Errorf("state table %d: stored keys: %w", t.schema.TableID, err)
		}
		rowKey := rcur != nil && bytes.HasPrefix(rcur, k[:codec.TablePrefixLen]) && !isBlockKey(rcur)
		if !rowKey {
			t.learn(v, false, k) // no row key of the vnode at or after k
		}
		tomb, isTomb := uint64(0), false
		if rcur != nil && bytes.Equal(rcur, k) {
			if tomb, isTomb = tombstoneEpoch(rows.Value()); !isTomb {
				found[i] = true
				continue
			}
		}
		if rcur == nil || !bytes.Equal(rcur[:min(len(rcur), codec.TablePrefixLen)], k[:codec.TablePrefixLen]) {
			// Nothing of the key's vnode lies at or after it, its
			// blocks' keys included (they sort after its rows).
			found[i] = false
			t.learn(v, true, k)
			continue
		}
		// The key gap k starts ends at the next row key (none: the
		// blocks' keys come first) and at the next block's range.
		gapHi := ""
		if rowKey && !isTomb {
			gapHi = string(rcur)
		}
		found[i] = false
		if from := t.blockFrom[v]; from != "" && string(k) >= from {
			if gapHi != "" {
				t.addKeyGap(v, string(k), gapHi, at)
			}
			continue
		}
		target = appendBlockKey(target[:0], k, k[codec.TablePrefixLen:])
		if blocks == nil {
			// Opened when first needed (a bulk insert of keys above the
			// stored ones never needs it).
			if blocks, err = t.kv.Scan(ctx, target, upper, at); err != nil {
				return fmt.Errorf("state table %d: stored keys: %w", t.schema.TableID, err)
			}
			defer blocks.Close()
			if bs, ok = blocks.(storage.Seeker); !ok {
				return fmt.Errorf("state table %d: stored keys: the store's block iterator cannot seek", t.schema.TableID)
			}
		}
		if bcur, err = to(blocks, bs, bcur, &bStarted, target); err != nil {
			return fmt.Errorf("state table %d: stored keys: %w", t.schema.TableID, err)
		}
		if bcur == nil || !isBlockKey(bcur) || !bytes.Equal(bcur[:codec.TablePrefixLen], k[:codec.TablePrefixLen]) {
			t.learn(v, true, k) // no block of the vnode ends at or after k
			if gapHi != "" {
				t.addKeyGap(v, string(k), gapHi, at)
			}
			continue
		}
		if !bytes.Equal(decoded, bcur) {
			decoded = append(decoded[:0], bcur...)
			if blk, err = decodeBlock(append([]byte(nil), blocks.Value()...)); err != nil {
				decoded = decoded[:0]
				return fmt.Errorf("state table %d: stored keys: block %x: %w", t.schema.TableID, bcur, err)
			}
		}
		_, ok, err := blk.get(k[codec.TablePrefixLen:])
		if err != nil {
			return fmt.Errorf("state table %d: stored keys: block %x: %w", t.schema.TableID, bcur, err)
		}
		found[i] = ok && !(isTomb && tomb >= blk.epoch)
		if ok || isTomb {
			continue
		}
		// Below the block's first row, k lies in no block's range: the
		// blocks before it end below k (it is the first ending at or
		// after k).
		bfirst, _, err := blk.entry(0)
		if err != nil {
			return fmt.Errorf("state table %d: stored keys: block %x: %w", t.schema.TableID, bcur, err)
		}
		if bytes.Compare(bfirst, k[codec.TablePrefixLen:]) > 0 {
			hi := string(k[:codec.TablePrefixLen]) + string(bfirst)
			if gapHi == "" || hi < gapHi {
				gapHi = hi
			}
			t.addKeyGap(v, string(k), gapHi, at)
		}
	}
	return nil
}

// blockEdit is a stored block that deletes rewrote in an epoch not yet
// committed (editBlocks): the block's rows less the deleted ones under key,
// its last row's ("" and value nil when none is left). Table.edits files it
// under every key the block had since its last committed form, so a later
// edit starts from it whichever of them the store shows.
type blockEdit struct {
	epoch  uint64
	key    string
	value  []byte
	keys   []string
	writes []blockWrite // what it wrote, for Stage to write again
}

type blockWrite struct {
	key   string
	value []byte // nil: a delete
}

// pruneEdits forgets the edits of committed epochs (the store holds them;
// the blocks cached before them are stale) and reports whether any is left.
func (t *Table) pruneEdits() bool {
	if len(t.edits) == 0 {
		return false
	}
	committed := t.kv.CommittedEpoch()
	for k, e := range t.edits {
		if e.epoch <= committed {
			delete(t.edits, k)
			t.blockCache = nil
		}
	}
	return len(t.edits) > 0
}

// editBlocks writes into b, at epoch, the deletes write deferred of rows
// stored blocks hold (blockDels): each such block is rewritten without
// them, and without its rows whose keys the store holds with no write
// pending (a tombstone, then deleted too, or a newer row, which stays),
// under its new last row's key, or deleted when no row is left; the rows'
// own keys get plain deletes. A block keeps its epoch, so tombstones read
// against it as before. So a delete leaves nothing behind but the keys of
// rows written since. Where it cannot tell, a delete is a tombstone of
// epoch tombAt (its write's). It reports whether it rewrote a block. The
// deletes go into b after everything else written: the caller calls it
// before writing newer writes of the same keys.
func (t *Table) editBlocks(b *storage.Batch, epoch, tombAt uint64) bool {
	keys := t.blockDels
	t.blockDels = t.blockDels[:0]
	if len(keys) == 0 {
		return false
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	ctx := context.Background()
	committed := t.kv.CommittedEpoch()
	at := t.storeEpoch(committed)
	t.pruneEdits()
	edited := false
	tomb := func(k string) {
		t.valBuf = appendTombstone(t.valBuf[:0], tombAt)
		b.Put([]byte(k), t.valBuf)
		t.wrote(k, false)
	}
	for i := 0; i < len(keys); {
		k := []byte(keys[i])
		sk, blk, ok, err := findBlockKey(ctx, t.kv, k, at)
		if err != nil || !ok {
			// Not readable, or no block holds it after all: a tombstone
			// is a delete in every respect but the key it leaves.
			tomb(keys[i])
			i++
			continue
		}
		prefix := keys[i][:codec.TablePrefixLen]
		last := string(sk[codec.TablePrefixLen+1:]) // the stored block's last pk
		j := i + 1
		for j < len(keys) && keys[j][:codec.TablePrefixLen] == prefix && keys[j][codec.TablePrefixLen:] <= last {
			j++
		}
		group := keys[i:j]
		i = j
		cur, chain := string(sk), []string{string(sk)}
		if e := t.edits[string(sk)]; e != nil {
			cur, chain = e.key, e.keys
			if e.value == nil {
				for _, g := range group {
					b.Delete([]byte(g))
				}
				continue
			}
			if blk, err = decodeBlock(e.value); err != nil {
				for _, g := range group {
					tomb(g)
				}
				continue
			}
		}
		if err := t.editBlock(ctx, b, epoch, at, blk, prefix, cur, chain, group); err != nil {
			for _, g := range group {
				tomb(g)
			}
			continue
		}
		edited = true
	}
	return edited
}

// editBlock rewrites blk (of vnode prefix, stored under cur, filed under
// chain) without the rows of dels and those the store holds row keys for.
func (t *Table) editBlock(ctx context.Context, b *storage.Batch, epoch, at uint64, blk block, prefix, cur string, chain, dels []string) error {
	first, _, err := blk.entry(0)
	if err != nil {
		return err
	}
	last, _, err := blk.entry(blk.n - 1)
	if err != nil {
		return err
	}
	// The row keys stored in the block's range (tombstones or newer rows).
	type storedKey struct {
		tomb  bool
		epoch uint64 // a tombstone's
	}
	stored := map[string]storedKey{}
	lo := append([]byte(prefix), first...)
	hi := append(append([]byte(prefix), last...), 0)
	err = scanEach(ctx, t.kv, lo, hi, at, func(k, v []byte) {
		te, isTomb := tombstoneEpoch(v)
		stored[string(k)] = storedKey{isTomb, te}
	})
	if err != nil {
		return err
	}
	var writes []blockWrite
	t.pks, t.vals = t.pks[:0], t.vals[:0]
	var gone []string // tombstones to delete
	for r := range blk.n {
		pk, v, err := blk.entry(r)
		if err != nil {
			return err
		}
		key := prefix + string(pk)
		if _, ok := slices.BinarySearch(dels, key); ok {
			continue
		}
		if sk, ok := stored[key]; ok {
			if _, _, known := t.pending(t.kv.CommittedEpoch(), []byte(key)); !known {
				// Nothing pending rewrites the key: a newer row or a
				// tombstone no older than the block takes the row out of
				// it (the tombstone with it); an older tombstone goes.
				switch {
				case !sk.tomb:
					continue
				case sk.epoch >= blk.epoch:
					gone = append(gone, key)
					continue
				default:
					gone = append(gone, key)
				}
			}
		}
		t.pks, t.vals = append(t.pks, pk), append(t.vals, v)
	}
	if len(t.pks) == blk.n {
		// Nothing of the block goes (the deleted keys are rows of its
		// range it does not hold): plain deletes.
		for _, g := range dels {
			b.Delete([]byte(g))
		}
		return nil
	}
	e := &blockEdit{epoch: epoch}
	if len(t.pks) > 0 {
		e.key = string(appendBlockKey(nil, []byte(prefix), t.pks[len(t.pks)-1]))
		e.value = appendBlock(nil, blk.epoch, t.pks, t.vals)
	}
	if e.key != cur {
		writes = append(writes, blockWrite{key: cur})
	}
	if e.key != "" {
		writes = append(writes, blockWrite{key: e.key, value: e.value})
	}
	for _, g := range gone {
		writes = append(writes, blockWrite{key: g})
	}
	for _, g := range dels {
		writes = append(writes, blockWrite{key: g})
	}
	for _, w := range writes {
		if w.value == nil {
			b.Delete([]byte(w.key))
		} else {
			b.Put([]byte(w.key), w.value)
		}
	}
	e.writes = writes
	e.keys = slices.Clone(chain)
	if e.key != "" && !slices.Contains(e.keys, e.key) {
		e.keys = append(e.keys, e.key)
	}
	if t.edits == nil {
		t.edits = map[string]*blockEdit{}
	}
	for _, k := range e.keys {
		t.edits[k] = e
	}
	t.blockCache = nil
	return nil
}

// Key bounds. A table learns, per vnode, keys at or above which the store
// holds no row key (rowFrom) and no block ends (blockFrom), from where its
// key checks' iterators stop, and raises them over every key it writes: a
// bulk insert of keys above a vnode's then costs no store read at all. Only
// the table's own writes add keys to its state table.

// learn lowers bound (of vnode v; blocks: blockFrom, else rowFrom) to k
// (none yet: sets it), where the store holds no such key at or after k,
// but never to or below a key the table wrote: its writes still in flight
// are not in the store the reads saw.
func (t *Table) learn(v int, blocks bool, k []byte) {
	bound, top := &t.rowFrom[v], t.rowTop[v]
	if blocks {
		bound, top = &t.blockFrom[v], t.blockTop[v]
	}
	c := string(k)
	if top != "" && c <= top {
		c = top + "\x00"
	}
	if *bound == "" || c < *bound {
		*bound = c
	}
}

// aboveVnode reports whether key lies at or above both bounds of its vnode:
// the store holds no row key and no block end of the vnode at or after it.
func (t *Table) aboveVnode(key []byte) bool {
	if len(key) < codec.TablePrefixLen {
		return false
	}
	v := int(key[4])<<8 | int(key[5]) // vnodeOf, without converting key
	r, b := t.rowFrom[v], t.blockFrom[v]
	return r != "" && b != "" && string(key) >= r && string(key) >= b
}

// wrote raises the bounds of key's vnode over key, written as a row or
// (block) in a block; only a table with blocks keeps them.
func (t *Table) wrote(key string, block bool) {
	if !t.schema.Blocks || len(key) < codec.TablePrefixLen {
		return
	}
	v := vnodeOf(key)
	raise := func(bound, top *string) {
		if key > *top {
			*top = key
		}
		if *bound != "" && key >= *bound {
			*bound = key + "\x00"
		}
	}
	raise(&t.rowFrom[v], &t.rowTop[v])
	t.narrowGaps(v, key)
	if block {
		raise(&t.blockFrom[v], &t.blockTop[v])
	}
}

// narrowGaps takes key, a row key of vnode v the table writes (or may write
// as a row), out of the vnode's gaps: a row key at or below it may be stored
// now, so a gap holding it keeps only what lies above it.
func (t *Table) narrowGaps(v int, key string) { t.narrowGapsSpan(v, key, key) }

// scanEach calls fn with every key and value of kv in [lower, upper) at
// epoch (valid during the call only).
func scanEach(ctx context.Context, kv storage.KV, lower, upper []byte, epoch uint64, fn func(k, v []byte)) error {
	it, err := kv.Scan(ctx, lower, upper, epoch)
	if err != nil {
		return err
	}
	for {
		err := it.Next()
		if errors.Is(err, io.EOF) {
			return it.Close()
		}
		if err != nil {
			it.Close()
			return err
		}
		fn(it.Key(), it.Value())
	}
}
