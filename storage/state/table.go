package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
)

// Schema is the fixed layout of a state table.
type Schema struct {
	// TableID is the key prefix of every row; it must not be 0xFFFFFFFF (storage.ReservedPrefix).
	TableID uint32
	// Types are the column types of a row.
	Types []types.T
	// PK are the primary-key column indices, in key order.
	PK []int
	// PKDesc optionally marks key columns (parallel to PK) as descending.
	PKDesc []bool
	// DistKey are the distribution-key column indices, a subset of PK; a row's vnode is
	// codec.VnodeOf(codec.HashRow(Types, row, DistKey)). Empty puts every row on one vnode.
	DistKey []int
	// Missing optionally gives what a trailing column reads in rows stored before it was added
	// (codec.DecodeRowMissing); nil: NULL.
	Missing []types.Datum
	// Blocks lets rows inserted with InsertFresh be stored many to a key (blocks.go); reads of
	// the table's keys outside Table then go through Scan, GetRow and ChangedRows. It needs a
	// primary key.
	Blocks bool
}

// ErrSchema is returned by New for an invalid schema.
var ErrSchema = errors.New("state: invalid schema")

// Table is one state table as seen by the actor that owns it. It is not safe for concurrent use.
type Table struct {
	kv     storage.KV
	schema Schema
	// distInPK[i] is the position in PK of DistKey[i], so a vnode can be computed from a pk alone.
	distInPK []int
	pkTypes  []types.T
	pkCols   []int // 0..len(PK)-1, to encode a pk given as its own datums

	cur    buffer   // writes of the current epoch
	layers []*layer // flushed epochs not yet known committed, oldest first
	// sealed are, by vnode (nil: none), the key ranges SealJobs took whose epochs may not be
	// committed yet.
	sealed [][]sealedBlock
	// blockCache holds, per vnode, the blocks point reads found last (findBlockCached).
	blockCache map[int][]cachedBlock
	// stagedAt is the last epoch Stage wrote into the store ahead of its commit: reads of what is
	// not pending go to the store at that epoch while it is above theirs.
	stagedAt uint64
	// stagedDelAt is the last epoch Stage wrote a delete at: a tombstone staged at an epoch hides
	// a block of the same epoch, so the epoch's later fresh rows go as rows.
	stagedDelAt uint64
	// blockDels are deletes of rows stored blocks hold, for editBlocks; edits the blocks it
	// rewrote in epochs not committed yet, by every key they had since.
	blockDels []string
	edits     map[string]*blockEdit
	pks, vals [][]byte
	// rowFrom and blockFrom are, per vnode, keys at or after which the store holds no row key
	// and no block ends ("": not known); see learn.
	rowFrom, blockFrom [codec.VnodeCount]string
	rowTop, blockTop   [codec.VnodeCount]string // the greatest key written as a row, in a block
	probed             [codec.VnodeCount]bool   // findBlockCached looked for the vnode's blocks
	rowGaps            map[int]rowGap           // per vnode, a range without row keys (noRowKey)
	keyGaps            [][]rowGap               // per vnode (nil: none), ranges without row keys or blocks (StoredKeys)
	// tracked says the table is its vnodes' only writer (TrackKeys): it
	// keeps rowFrom and rowTop itself, learning rowFrom at rowAt.
	tracked bool
	rowAt   [codec.VnodeCount]uint64
	// prefixCols and prefixes are the prefix filters (TrackPrefixes): per vnode (nil: none
	// yet), the prefixes of the first prefixCols key columns of the keys the store may hold.
	prefixCols int
	prefixes   []*vnodePrefixes
	pfxBuf     []byte
	// sealBounds are what seal jobs found looking for blocks (off the owner's goroutine): per
	// vnode, a key at or after which the store held no block end; TakeFresh learns them.
	sealMu     sync.Mutex
	sealBounds []vnodeBound
	// gaps are, per vnode, key ranges no block overlaps (blockGaps): a copy's seal jobs look a
	// vnode's next block up once, not every epoch.
	gaps blockGaps

	keyBuf []byte
	valBuf []byte
	pkBuf  []types.Datum
}

// vnodeBound is a key of a vnode (see learn).
type vnodeBound struct {
	vnode int
	key   string
}

// buffer holds one epoch's writes: the latest write per key.
type buffer struct {
	// index maps a key to its position in entries, unless unindexed: then
	// every write so far was a fresh one (InsertFresh: a key the writer
	// vouches is nowhere else, so no write looks for it) and index holds
	// none of them until a write or read needs it (indexAll). A bulk copy's
	// buffers never build it.
	index     map[string]int
	unindexed bool
	entries   []entry
	arena     []byte // values; append-only, so slices into it stay valid
	// sorted holds the positions of entries[:len(sorted)] in key order; the
	// entries after them (the tail) are unsorted until the next re-sort.
	sorted []int
	// dropsBlocks says it deletes blocks (DeleteBlocks).
	dropsBlocks bool
	// prefixes are the hashes of the prefixes of every key written or deleted, in a table
	// tracking prefixes (TrackPrefixes; nil: none yet).
	prefixes map[uint64]struct{}
}

type entry struct {
	key   string
	value []byte // encoded row; nil for a delete
	del   bool
	// fresh marks an InsertFresh of a table with blocks: Flush leaves it in its layer for TakeFresh;
	// run is its RunTag. asRow marks a fresh entry that superseded a write flushed before it
	// (mergeEntries): TakeFresh writes it as a row, after that write in the batch.
	fresh bool
	asRow bool
	run   uint32
}

// layer is a flushed epoch's writes, sorted by key.
type layer struct {
	epoch   uint64
	entries []entry
	// filter answers most finds of a key the layer does not hold without a search (built by
	// the first find of a big enough layer, nil again when entries change).
	filter bloom
	// unsealed says fresh entries wait for TakeFresh; dropsBlocks that it deletes blocks
	// (DeleteBlocks).
	unsealed    bool
	dropsBlocks bool
}

// New returns a table over kv with the given schema.
func New(kv storage.KV, s Schema) (*Table, error) {
	if s.TableID == 0xFFFFFFFF {
		return nil, fmt.Errorf("%w: table id 0xFFFFFFFF is reserved", ErrSchema)
	}
	// An empty primary key is allowed: the table holds at most one row (a
	// simple aggregation's materialized view).
	if len(s.PK) == 0 && len(s.DistKey) > 0 {
		return nil, fmt.Errorf("%w: table %d has a distribution key but no primary key", ErrSchema, s.TableID)
	}
	if s.Blocks && len(s.PK) == 0 {
		return nil, fmt.Errorf("%w: table %d stores blocks but has no primary key", ErrSchema, s.TableID)
	}
	if s.PKDesc != nil && len(s.PKDesc) != len(s.PK) {
		return nil, fmt.Errorf("%w: %d descending flags for %d key columns", ErrSchema, len(s.PKDesc), len(s.PK))
	}
	t := &Table{kv: kv, schema: s}
	for _, c := range s.PK {
		if c < 0 || c >= len(s.Types) {
			return nil, fmt.Errorf("%w: key column %d out of %d columns", ErrSchema, c, len(s.Types))
		}
		t.pkTypes = append(t.pkTypes, s.Types[c])
		t.pkCols = append(t.pkCols, len(t.pkCols))
	}
	for _, c := range s.DistKey {
		i := slices.Index(s.PK, c)
		if i < 0 {
			return nil, fmt.Errorf("%w: distribution column %d is not in the primary key", ErrSchema, c)
		}
		t.distInPK = append(t.distInPK, i)
	}
	t.cur.index = make(map[string]int)
	return t, nil
}

// Schema returns the table's schema.
func (t *Table) Schema() Schema { return t.schema }

// VnodeOfRow returns the vnode a row belongs to.
func (t *Table) VnodeOfRow(row []types.Datum) uint16 {
	return codec.VnodeOf(codec.HashRow(t.schema.Types, row, t.schema.DistKey))
}

// VnodeOfPK returns the vnode of the row with primary key pk (values in PK order).
func (t *Table) VnodeOfPK(pk []types.Datum) uint16 {
	return codec.VnodeOf(codec.HashRow(t.pkTypes, pk, t.distInPK))
}

// EncodePK appends the memcomparable encoding of pk (values in PK order) to buf: the form of
// KeyRange bounds and of RowIterator.PK.
func (t *Table) EncodePK(buf []byte, pk []types.Datum) []byte {
	return codec.AppendKey(buf, t.pkTypes, pk, t.pkCols, t.schema.PKDesc)
}

func (t *Table) rowKey(buf []byte, row []types.Datum) []byte {
	buf = codec.AppendTablePrefix(buf, t.schema.TableID, t.VnodeOfRow(row))
	return codec.AppendKey(buf, t.schema.Types, row, t.schema.PK, t.schema.PKDesc)
}

func (t *Table) checkRow(row []types.Datum) error {
	if len(row) != len(t.schema.Types) {
		return fmt.Errorf("state table %d: row has %d columns, schema %d", t.schema.TableID, len(row), len(t.schema.Types))
	}
	return nil
}

// Insert writes row (replacing any row with the same primary key).
func (t *Table) Insert(row []types.Datum) error {
	if err := t.checkRow(row); err != nil {
		return err
	}
	t.keyBuf = t.rowKey(t.keyBuf[:0], row)
	return t.InsertKeyed(t.keyBuf, row)
}

// InsertKeyed is Insert of a row whose key the caller has encoded already
// (RowKey of row).
func (t *Table) InsertKeyed(key []byte, row []types.Datum) error {
	if err := t.checkRow(row); err != nil {
		return err
	}
	t.valBuf = codec.EncodeRow(t.valBuf[:0], t.schema.Types, row)
	t.cur.put(key, t.valBuf, false, false)
	t.wroteRow(key, row)
	return nil
}

// InsertFresh inserts a row whose primary key the caller vouches is nowhere in the table: not
// stored, not pending. In a table with blocks it waits, after Flush, for TakeFresh to write it with
// the epoch's other fresh rows of its vnode and run as blocks; elsewhere it is Insert. run
// (RunTag) tells apart writers of disjoint key ranges (the splits of a parallel copy): a block
// holds one run's rows, so it never spans a gap another run fills later.
func (t *Table) InsertFresh(row []types.Datum, run uint32) error {
	if err := t.checkRow(row); err != nil {
		return err
	}
	t.keyBuf = t.rowKey(t.keyBuf[:0], row)
	return t.InsertFreshKeyed(t.keyBuf, row, run)
}

// InsertFreshKeyed is InsertFresh of a row whose key the caller has encoded
// already (RowKey of row).
func (t *Table) InsertFreshKeyed(key []byte, row []types.Datum, run uint32) error {
	if err := t.checkRow(row); err != nil {
		return err
	}
	t.valBuf = codec.EncodeRow(t.valBuf[:0], t.schema.Types, row)
	t.cur.entries[t.cur.put(key, t.valBuf, false, t.schema.Blocks)].run = run
	t.wroteRow(key, row)
	return nil
}

// RunTag is the run InsertFresh takes for a run's name.
func RunTag(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// Delete removes the row with row's primary key.
func (t *Table) Delete(row []types.Datum) error {
	if err := t.checkRow(row); err != nil {
		return err
	}
	t.keyBuf = t.rowKey(t.keyBuf[:0], row)
	t.cur.put(t.keyBuf, nil, true, false)
	t.deletedRow(row)
	return nil
}

// Update replaces old by new; when the primary key changes, old's row is deleted.
func (t *Table) Update(old, new []types.Datum) error {
	if err := t.checkRow(old); err != nil {
		return err
	}
	if err := t.checkRow(new); err != nil {
		return err
	}
	oldKey := t.rowKey(nil, old)
	t.keyBuf = t.rowKey(t.keyBuf[:0], new)
	if !bytes.Equal(oldKey, t.keyBuf) {
		t.cur.put(oldKey, nil, true, false)
		t.deletedRow(old)
	}
	t.valBuf = codec.EncodeRow(t.valBuf[:0], t.schema.Types, new)
	t.cur.put(t.keyBuf, t.valBuf, false, false)
	t.wroteRow(t.keyBuf, new)
	return nil
}

// sortEntries returns an epoch's writes sorted by key (sortByVnode): in entries or in a new
// slice (not copied back: a copy's flush moves megabytes).
func sortEntries(entries []entry) []entry {
	if len(entries) == 0 {
		return entries
	}
	return sortByVnode(entries, entryKey, entryRun, compareEntries)
}

func entryKey(e *entry) string { return e.key }
func entryRun(e *entry) uint32 { return e.run }

// sortByVnode sorts xs, whose keys (key) are state keys, and returns them sorted (in xs or in
// a new slice): bucketed by their table and vnode prefix first (a stable counting sort when
// they all share the table), then each bucket sorted unless it already is. Rows written in
// primary-key order (a copy, ascending ids) then cost a pass, not a comparison sort; rows of
// a few writers each in key order (the ranges of a parallel copy, told apart by run) a
// merge (mergeRuns).
func sortByVnode[T any](xs []T, key func(*T) string, run func(*T) uint32, cmp func(a, b T) int) []T {
	if len(xs) < 64 || len(key(&xs[0])) < codec.TablePrefixLen {
		slices.SortFunc(xs, cmp)
		return xs
	}
	table := tableOf(key(&xs[0]))
	var counts [codec.VnodeCount + 1]int
	for i := range xs {
		k := key(&xs[i])
		if len(k) < codec.TablePrefixLen || tableOf(k) != table || vnodeOf(k) >= codec.VnodeCount {
			slices.SortFunc(xs, cmp)
			return xs
		}
		counts[vnodeOf(k)+1]++
	}
	for v := 1; v <= codec.VnodeCount; v++ {
		counts[v] += counts[v-1]
	}
	out := make([]T, len(xs))
	next := counts
	for i := range xs {
		v := vnodeOf(key(&xs[i]))
		out[next[v]] = xs[i]
		next[v]++
	}
	var scratch []T
	for v := range codec.VnodeCount {
		bucket := out[counts[v]:counts[v+1]]
		if !slices.IsSortedFunc(bucket, cmp) {
			scratch = mergeRuns(bucket, scratch, run, cmp)
		}
	}
	return out
}

// maxMergedRuns bounds the writers mergeRuns merges; a bucket of more is sorted.
const maxMergedRuns = 8

// mergeRuns sorts xs, made of the rows of a few runs (run) each mostly in key order: it
// splits them by run (keeping their order), sorts each run's unless it is sorted already and
// merges the runs, using scratch (returned, grown) as room. More than maxMergedRuns runs: a
// comparison sort.
func mergeRuns[T any](xs, scratch []T, run func(*T) uint32, cmp func(a, b T) int) []T {
	var tags [maxMergedRuns]uint32
	var sizes [maxMergedRuns]int
	k := 0
	for i := range xs {
		r := run(&xs[i])
		j := 0
		for j < k && tags[j] != r {
			j++
		}
		if j == k {
			if k == maxMergedRuns {
				slices.SortFunc(xs, cmp)
				return scratch
			}
			tags[k] = r
			k++
		}
		sizes[j]++
	}
	if k == 1 {
		slices.SortFunc(xs, cmp)
		return scratch
	}
	// Split by run into scratch, then merge the parts back into xs pairwise.
	scratch = slices.Grow(scratch[:0], len(xs))[:len(xs)]
	var starts [maxMergedRuns + 1]int
	for j := range k {
		starts[j+1] = starts[j] + sizes[j]
	}
	next := starts
	for i := range xs {
		r := run(&xs[i])
		j := 0
		for tags[j] != r {
			j++
		}
		scratch[next[j]] = xs[i]
		next[j]++
	}
	parts := make([][]T, k)
	for j := range k {
		parts[j] = scratch[starts[j]:starts[j+1]]
		if !slices.IsSortedFunc(parts[j], cmp) {
			slices.SortFunc(parts[j], cmp)
		}
	}
	// Merge pairs until one part is left, scratch and xs taking turns as the destination;
	// the result is copied into xs when it ended in scratch.
	src, dst := scratch, xs
	for len(parts) > 1 {
		merged := parts[:0:0]
		at := 0
		for j := 0; j < len(parts); j += 2 {
			if j+1 == len(parts) {
				n := copy(dst[at:], parts[j])
				merged = append(merged, dst[at:at+n])
				at += n
				continue
			}
			a, b := parts[j], parts[j+1]
			start := at
			for len(a) > 0 && len(b) > 0 {
				if cmp(b[0], a[0]) < 0 {
					dst[at] = b[0]
					b = b[1:]
				} else {
					dst[at] = a[0]
					a = a[1:]
				}
				at++
			}
			at += copy(dst[at:], a)
			at += copy(dst[at:], b)
			merged = append(merged, dst[start:at])
		}
		parts = merged
		src, dst = dst, src
	}
	if &src[0] != &xs[0] {
		copy(xs, parts[0])
	}
	return scratch
}

func vnodeOf(key string) int { return int(key[4])<<8 | int(key[5]) }

// tableOf is the table id a state key starts with (of at least 4 bytes): compared as a
// number, not a string (a call per row in a sort's pass).
func tableOf(key string) uint32 {
	_ = key[3]
	return uint32(key[0])<<24 | uint32(key[1])<<16 | uint32(key[2])<<8 | uint32(key[3])
}

// compareEntries orders entries by key (slices.SortFunc with it sorts an
// epoch's writes in about 2/3 of sort.Slice's time).
func compareEntries(a, b entry) int { return strings.Compare(a.key, b.key) }

// put writes key and returns its entry's position.
func (b *buffer) put(key, value []byte, del, fresh bool) int {
	e := entry{del: del, fresh: fresh}
	if !del {
		off := len(b.arena)
		b.arena = append(b.arena, value...)
		e.value = b.arena[off:len(b.arena):len(b.arena)]
	}
	if fresh && (b.unindexed || len(b.entries) == 0) {
		b.unindexed = true
		e.key = string(key)
		b.entries = append(b.entries, e)
		return len(b.entries) - 1
	}
	b.indexAll()
	if i, ok := b.index[string(key)]; ok {
		// A write over a pending one is not fresh: the key may be stored
		// (a delete pending), so it must be written as a row.
		e.key, e.fresh = b.entries[i].key, false
		b.entries[i] = e
		return i
	}
	e.key = string(key)
	b.index[e.key] = len(b.entries)
	b.entries = append(b.entries, e)
	return len(b.entries) - 1
}

// indexAll puts the entries written unindexed into the index.
func (b *buffer) indexAll() {
	if !b.unindexed {
		return
	}
	b.unindexed = false
	if b.index == nil {
		b.index = make(map[string]int, len(b.entries))
	}
	for i := range b.entries {
		b.index[b.entries[i].key] = i
	}
}

// A flushed layer of at least bigLayer writes is merged with the one below
// (of the same epoch) only once the epoch has bigLayers layers.
const (
	bigLayer  = 1024
	bigLayers = 4
)

// next returns an empty buffer sized for as many writes as b holds (the
// index for at most maxIndex keys, the arena for at most 8 MiB): a writer's
// next batch is likely as big, and growing from empty copies everything a
// few times over. b's arena stays with the entries flushed from it; its index
// (which nothing else holds) is emptied and kept when it held reuseIndex to maxIndex keys
// (a bulk writer's; emptying costs its capacity, too much for a small write's flush).
// entries, when not nil, is the (empty) slice the next writes go into.
func (b *buffer) next(maxIndex int, entries []entry) buffer {
	index := b.index
	if len(index) > maxIndex || len(index) < reuseIndex {
		index = make(map[string]int, min(len(b.index), maxIndex))
	} else {
		clear(index)
	}
	if entries == nil {
		entries = make([]entry, 0, min(len(b.entries), 1<<16))
	}
	return buffer{
		index:   index,
		entries: entries,
		arena:   make([]byte, 0, min(len(b.arena), 8<<20)),
	}
}

// reuseIndex is the fewest keys of a buffer whose index map the next buffer keeps.
const reuseIndex = 1024

// Discard drops the writes made since the last Flush (a failed statement's).
func (t *Table) Discard() { t.cur = buffer{index: make(map[string]int)} }

// PendingRows returns the number of keys written in the current epoch.
func (t *Table) PendingRows() int { return len(t.cur.entries) }

// Overlays reports whether reads through t differ from the store's at its
// committed epoch: writes pending, flushed but not committed, or staged.
func (t *Table) Overlays() bool {
	committed := t.kv.CommittedEpoch()
	if len(t.cur.entries) > 0 || t.stagedAt > committed {
		return true
	}
	for _, l := range t.layers {
		if l.epoch > committed {
			return true
		}
	}
	return false
}

// Flush adds the current epoch's writes to b, which the coordinator commits at epoch, and starts a
// new epoch. The writes stay visible to this table's reads until the store's committed epoch
// reaches epoch.
func (t *Table) Flush(epoch uint64, b *storage.Batch) {
	t.dropCommittedLayers(t.kv.CommittedEpoch())
	if len(t.cur.entries) == 0 {
		return
	}
	// In key order: the batch then holds one ascending run per table, which the store merges
	// rather than sorts (storage.Batch.Normalize).
	written := t.cur.entries
	entries := sortEntries(written)
	// Room for them all at once: an actor's batch starts empty every epoch, and growing it by
	// doubling copied its bytes again and again (a view's actors, one connection's INSERTs).
	size := 0
	for i := range entries {
		size += len(entries[i].key) + len(entries[i].value)
	}
	b.Grow(size, len(entries))
	unsealed := false
	for _, e := range entries {
		if e.fresh {
			unsealed = true // Seal writes it
			continue
		}
		t.write(b, e, epoch)
	}
	drops := t.editBlocks(b, epoch, epoch) || t.cur.dropsBlocks
	var spare []entry
	if &written[0] != &entries[0] && cap(written) <= 1<<16 {
		// The sort moved the entries to a new slice: the next flush's writes
		// go into the old one (a bulk writer flushes every chunk).
		clear(written)
		spare = written[:0]
	}
	t.cur = t.cur.next(1<<14, spare) // sized for a like flush, not kept huge
	t.layers = append(t.layers, &layer{epoch: epoch, entries: entries, unsealed: unsealed, dropsBlocks: drops})
	// Writers that flush often within one epoch (per statement, per chunk)
	// would leave a layer each for reads to search: merge a layer into the one
	// below while that is of the same epoch and at most twice its size, so an
	// epoch keeps O(log n) layers at O(n log n) total merge work. Big layers
	// (a bulk writer's chunks) stay apart up to bigLayers of the epoch: a read
	// searches a few more, and most of their rows are never merged.
	for n := len(t.layers); n >= 2; n = len(t.layers) {
		below, top := t.layers[n-2], t.layers[n-1]
		if below.epoch != top.epoch || len(below.entries) > 2*len(top.entries) {
			break
		}
		if len(top.entries) >= bigLayer && (n < bigLayers || t.layers[n-bigLayers].epoch != top.epoch) {
			break
		}
		below.entries, below.filter = mergeEntries(below.entries, top.entries), nil
		below.unsealed = below.unsealed || top.unsealed
		below.dropsBlocks = below.dropsBlocks || top.dropsBlocks
		t.layers[n-1] = nil
		t.layers = t.layers[:n-1]
	}
}

// Stage adds the flushed layers' writes (oldest first) and then the current ones to b, which the
// caller stages into the store at epoch (storage.KV.Stage) ahead of its commit, so they are not held
// in memory, and drops them all. Reads then see the store at epoch under the writes pending after.
// Writes of earlier epochs still committing are staged again at epoch, with the values they commit.
// Anything the caller's batch for epoch holds for these keys must be staged before b.
func (t *Table) Stage(epoch uint64, b *storage.Batch) {
	// In a table with blocks, the epoch's fresh rows are sealed here, into b after the other
	// writes; elsewhere, and once the epoch staged a delete, they go as rows (a row's own key is
	// as good as a block's).
	t.dropCommittedLayers(t.kv.CommittedEpoch())
	t.rowGaps, t.keyGaps = nil, nil // found at committed epochs: staged keys are read above them
	var job *SealJob
	var took []bool // per layer: the job writes its fresh rows
	if t.schema.Blocks && t.stagedDelAt != epoch {
		if len(t.cur.entries) > 0 {
			entries := sortEntries(t.cur.entries)
			unsealed := slices.ContainsFunc(entries, func(e entry) bool { return e.fresh })
			t.layers = append(t.layers, &layer{epoch: epoch, entries: entries, unsealed: unsealed, dropsBlocks: t.cur.dropsBlocks})
			t.cur = t.cur.next(1<<16, nil)
		}
		for _, l := range t.layers {
			took = append(took, l.unsealed && l.epoch <= epoch)
		}
		job = t.TakeFresh(epoch)
	}
	// Blocks that deletes of earlier epochs still committing rewrote, as they wrote them.
	if t.pruneEdits() {
		done := map[*blockEdit]bool{}
		for _, e := range t.edits {
			if e.epoch < epoch && !done[e] {
				done[e] = true
				for _, w := range e.writes {
					if w.value == nil {
						b.Delete([]byte(w.key))
					} else {
						b.Put([]byte(w.key), w.value)
					}
				}
			}
		}
	}
	// A tombstone carries the epoch of its layer: a delete of an earlier epoch still committing
	// must not hide a block this epoch writes.
	dels := false
	write := func(e entry, at uint64) {
		t.write(b, e, at)
		dels = dels || e.del && at == epoch
	}
	for li, l := range t.layers {
		for _, e := range l.entries {
			if e.fresh && li < len(took) && took[li] {
				continue // the job's, or a newer write is the key's
			}
			write(e, l.epoch)
		}
		t.editBlocks(b, epoch, l.epoch) // before the newer layers' writes
	}
	entries := sortEntries(t.cur.entries)
	for _, e := range entries {
		write(e, epoch)
	}
	t.editBlocks(b, epoch, epoch)
	if job != nil {
		job.Write(b)
	}
	if dels {
		t.stagedDelAt = epoch
	}
	// The next chunk is likely as big as this one: size for it (growing a map and an
	// arena from empty cost a bulk load a tenth of its time).
	t.cur = t.cur.next(1<<16, nil)
	t.blockCache = nil // blocks this deleted are gone at epoch
	clear(t.layers)
	t.layers = nil
	t.stagedAt = max(t.stagedAt, epoch)
}

// storeEpoch is the epoch reads at epoch take from the store: a staged epoch above it.
func (t *Table) storeEpoch(epoch uint64) uint64 { return max(epoch, t.stagedAt) }

// mergeEntries merges two key-sorted entry lists; on equal keys newer wins.
func mergeEntries(older, newer []entry) []entry {
	out := make([]entry, 0, len(older)+len(newer))
	i, j := 0, 0
	for i < len(older) && j < len(newer) {
		switch {
		case older[i].key < newer[j].key:
			out = append(out, older[i])
			i++
		case older[i].key > newer[j].key:
			out = append(out, newer[j])
			j++
		default:
			e := newer[j]
			if e.fresh {
				e.asRow = true // older[i] was written at its flush: this one goes after it
			}
			out = append(out, e)
			i++
			j++
		}
	}
	out = append(out, older[i:]...)
	return append(out, newer[j:]...)
}

func (t *Table) dropCommittedLayers(committed uint64) {
	n := 0
	for n < len(t.layers) && t.layers[n].epoch <= committed {
		if t.layers[n].dropsBlocks {
			t.blockCache = nil // the blocks it holds are gone
		}
		n++
	}
	if n > 0 {
		clear(t.layers[:n])
		t.layers = t.layers[n:]
	}
}

// Get reads the row with primary key pk (values in PK order) at the latest committed epoch merged
// with the pending writes, decoding it into dst.
func (t *Table) Get(ctx context.Context, pk []types.Datum, dst []types.Datum) ([]types.Datum, bool, error) {
	return t.GetAt(ctx, t.kv.CommittedEpoch(), pk, dst)
}

// GetAt is Get reading committed data at epoch (pending writes of later epochs still apply).
func (t *Table) GetAt(ctx context.Context, epoch uint64, pk []types.Datum, dst []types.Datum) ([]types.Datum, bool, error) {
	if len(pk) != len(t.schema.PK) {
		return dst, false, fmt.Errorf("state table %d: get with %d key values, want %d", t.schema.TableID, len(pk), len(t.schema.PK))
	}
	t.keyBuf = codec.AppendTablePrefix(t.keyBuf[:0], t.schema.TableID, t.VnodeOfPK(pk))
	t.keyBuf = t.EncodePK(t.keyBuf, pk)
	value, found, err := t.lookup(ctx, epoch, t.keyBuf)
	if err != nil || !found {
		return dst, false, err
	}
	dst, err = codec.DecodeRowMissing(t.schema.Types, value, dst, t.schema.Missing)
	if err != nil {
		return dst, false, fmt.Errorf("state table %d: decode row %x: %w", t.schema.TableID, t.keyBuf, err)
	}
	return dst, true, nil
}

func (t *Table) lookup(ctx context.Context, epoch uint64, key []byte) ([]byte, bool, error) {
	if v, found, known := t.pending(epoch, key); known {
		return v, found, nil
	}
	get := t.kv.Get
	if t.schema.Blocks {
		get = t.getRow
	}
	if t.tracked {
		_, vnode, _ := codec.SplitTablePrefix(key)
		none, err := t.noKeyFrom(ctx, int(vnode), key, t.storeEpoch(epoch))
		if err != nil {
			return nil, false, fmt.Errorf("state table %d: get: %w", t.schema.TableID, err)
		}
		if none {
			return nil, false, nil
		}
	}
	v, found, err := get(ctx, key, t.storeEpoch(epoch), t.valBuf[:0])
	if err != nil {
		return nil, false, fmt.Errorf("state table %d: get: %w", t.schema.TableID, err)
	}
	if found {
		t.valBuf = v
	}
	return v, found, nil
}

// pending is what this table's own writes hold for key, for a read at epoch: known is false when
// they hold nothing and the store decides.
func (t *Table) pending(epoch uint64, key []byte) (value []byte, found, known bool) {
	t.cur.indexAll()
	if i, ok := t.cur.index[string(key)]; ok {
		e := t.cur.entries[i]
		return e.value, !e.del, true
	}
	for i := len(t.layers) - 1; i >= 0 && t.layers[i].epoch > epoch; i-- {
		if e, ok := t.layers[i].find(string(key)); ok {
			return e.value, !e.del, true
		}
	}
	return nil, false, false
}

// layerFilterMin is the fewest entries of a layer whose finds go through its filter.
const layerFilterMin = 64

// find returns the layer's write of key.
func (l *layer) find(key string) (entry, bool) {
	if len(l.entries) >= layerFilterMin {
		if l.filter == nil {
			l.filter = make(bloom, (len(l.entries)+3)/4) // 16 bits an entry
			for i := range l.entries {
				l.filter.add(maphash.String(prefixSeed, l.entries[i].key))
			}
		}
		if !l.filter.has(maphash.String(prefixSeed, key)) {
			return entry{}, false
		}
	}
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].key >= key })
	if i < len(l.entries) && l.entries[i].key == key {
		return l.entries[i], true
	}
	return entry{}, false
}

// RowKey appends row's storage key (table prefix, vnode, encoded primary key) to buf: the form
// PendingAt and StoredKeys take.
func (t *Table) RowKey(buf []byte, row []types.Datum) []byte { return t.rowKey(buf, row) }

// PendingAt reports whether a row with key exists as this table's own writes say, for a read at
// epoch: known is false when they hold nothing for key and the store decides (StoredKeys). With
// StoredKeys it answers as GetAt does.
func (t *Table) PendingAt(epoch uint64, key []byte) (exists, known bool) {
	_, exists, known = t.pending(epoch, key)
	return exists, known
}

// storedKeysBatch is the fewest keys StoredKeys reads through an iterator rather than one
// point read each (in a table without blocks).
const storedKeysBatch = 16

// StoredKeys sets found[i] to whether the store holds keys[i] (RowKeys of this table, in any
// order) at epoch, leaving this table's pending writes aside (PendingAt). It reads the keys in
// key order through one iterator, which answers every key below the next stored key without a
// read and seeks past the rest, instead of one point read per key: a bulk insert of new keys
// costs about a seek per vnode it touches rather than a read per row. When most keys need a
// seek it reads the rest with point reads.
func (t *Table) StoredKeys(ctx context.Context, epoch uint64, keys [][]byte, found []bool) error {
	if len(found) != len(keys) {
		return fmt.Errorf("state table %d: %d answers for %d keys", t.schema.TableID, len(found), len(keys))
	}
	at := t.storeEpoch(epoch)
	get := func(i int) error {
		var err error
		if t.schema.Blocks {
			_, found[i], err = t.getRow(ctx, keys[i], at, t.valBuf[:0])
		} else {
			_, found[i], err = t.kv.Get(ctx, keys[i], at, t.valBuf[:0])
		}
		if err != nil {
			return fmt.Errorf("state table %d: get: %w", t.schema.TableID, err)
		}
		return nil
	}
	// Keys above every key of their vnode (a table with blocks knows where
	// each vnode's keys end) need neither a read nor a place in the order.
	order := make([]int, 0, len(keys))
	for i, k := range keys {
		if t.schema.Blocks && t.aboveVnode(k) {
			found[i] = false
			continue
		}
		order = append(order, i)
	}
	if len(order) == 0 {
		return nil
	}
	// A table with blocks checks even one key through storedKeysBlocks: its
	// key gaps (several a vnode, one per session inserting ascending keys of
	// its own) and bounds answer most keys without the store, where a point
	// read (getRow) knows one gap a vnode and, at a read epoch an other
	// session's commit has passed, looks blocks up in the store. Each such
	// scan writes the store's waiting commits first and keeps the next ones
	// from waiting: eight connections of one-row INSERTs ran a fifth slower.
	if len(order) < storedKeysBatch && !t.schema.Blocks {
		for _, i := range order {
			if err := get(i); err != nil {
				return err
			}
		}
		return nil
	}
	sortKeys(order, keys)
	release, err := t.kv.Pin(at)
	if err != nil {
		return fmt.Errorf("state table %d: stored keys: %w", t.schema.TableID, err)
	}
	defer release()
	if t.schema.Blocks {
		return t.storedKeysBlocks(ctx, at, keys, order, found, get)
	}
	_, upper := codec.TableSpan(t.schema.TableID)
	it, err := t.kv.Scan(ctx, keys[order[0]], upper, at)
	if err != nil {
		return fmt.Errorf("state table %d: stored keys: %w", t.schema.TableID, err)
	}
	defer it.Close()
	seeker, _ := it.(storage.Seeker)
	// cur is the iterator's key: the smallest stored key at or after the last key asked (nil
	// at the end).
	var cur []byte
	next := func() error {
		switch err := it.Next(); {
		case err == io.EOF:
			cur = nil
		case err != nil:
			return fmt.Errorf("state table %d: stored keys: %w", t.schema.TableID, err)
		default:
			cur = it.Key()
		}
		return nil
	}
	if err := next(); err != nil {
		return err
	}
	seeks := 0
	for n, i := range order {
		k := keys[i]
		if seeks > storedKeysBatch && 2*seeks > n {
			// Stored keys lie between most keys asked (random keys into a big table): a seek
			// cannot use the store's Bloom filters as a point read does.
			if err := get(i); err != nil {
				return err
			}
			continue
		}
		if n > 0 && cur != nil && bytes.Compare(cur, k) < 0 {
			// A stored key lies between the last key asked and this one: step once (the next
			// stored key may be this one), then seek.
			if err := next(); err != nil {
				return err
			}
			if cur != nil && bytes.Compare(cur, k) < 0 {
				if seeker == nil {
					if err := get(i); err != nil {
						return err
					}
					continue
				}
				seeks++
				if err := seeker.Seek(k); err != nil {
					return fmt.Errorf("state table %d: stored keys: %w", t.schema.TableID, err)
				}
				if err := next(); err != nil {
					return err
				}
			}
		}
		found[i] = cur != nil && bytes.Equal(cur, k)
	}
	return nil
}

// sortKeys orders order (indexes into keys, row keys of one table) by key: by
// vnode with a counting sort, then each vnode's few keys by comparison (a
// statement's keys spread over every vnode: a comparison sort of them all
// compared their equal table prefixes again and again).
func sortKeys(order []int, keys [][]byte) {
	byKey := func(a, b int) int { return bytes.Compare(keys[a], keys[b]) }
	var starts [codec.VnodeCount + 1]int
	table, _, ok := codec.SplitTablePrefix(keys[order[0]])
	for _, i := range order {
		id, v, kok := codec.SplitTablePrefix(keys[i])
		if !ok || !kok || id != table || int(v) >= codec.VnodeCount {
			slices.SortFunc(order, byKey)
			return
		}
		starts[v+1]++
	}
	for v := 1; v <= codec.VnodeCount; v++ {
		starts[v] += starts[v-1]
	}
	sorted := make([]int, len(order))
	next := starts
	for _, i := range order {
		_, v, _ := codec.SplitTablePrefix(keys[i])
		sorted[next[v]] = i
		next[v]++
	}
	for v := 0; v < codec.VnodeCount; v++ {
		if starts[v+1]-starts[v] > 1 {
			slices.SortFunc(sorted[starts[v]:starts[v+1]], byKey)
		}
	}
	copy(order, sorted)
}

// AllVnodes asks Iter for every vnode.
const AllVnodes = -1

// KeyRange bounds an iteration by encoded primary key (see EncodePK): Start inclusive, End
// exclusive, nil for unbounded. For "after pk p", use Start = append(EncodePK(nil, p), 0).
type KeyRange struct {
	Start, End []byte
}

// IterOptions choose what Iter reads.
type IterOptions struct {
	// Vnode is the vnode to read, or AllVnodes.
	Vnode int
	// Range bounds the primary keys, within each vnode.
	Range KeyRange
	// Epoch is the committed epoch to read (0: the latest committed epoch).
	Epoch uint64
	// Prefix, for a table tracking prefixes (TrackPrefixes) and a read of one vnode at the
	// latest epoch, is the encoding of the tracked key columns that every key of Range starts
	// with: when the table knows the store never held it, the read asks the store nothing.
	// Ignored otherwise.
	Prefix []byte
}

// RowIterator walks rows in key order: vnode by vnode, and by primary key within a vnode.
//
// Next returns nil at a row, io.EOF after the last, or an error; after io.EOF or an error it keeps
// returning it. Row, PK and Vnode are valid after Next returned nil and only until the next call to
// Next or Close (copy what you keep). Close must always be called; it is idempotent.
type RowIterator interface {
	Next() error
	// Row returns the decoded row.
	Row() []types.Datum
	// PK returns the row's encoded primary key (the form of KeyRange bounds).
	PK() []byte
	// Vnode returns the row's vnode.
	Vnode() uint16
	Close() error
}

// Iter returns an iterator over the rows selected by opts: committed data at the chosen epoch merged
// with this table's pending writes (flushed or not) of later epochs. Writes made after Iter returns
// are not seen.
func (t *Table) Iter(ctx context.Context, opts IterOptions) (RowIterator, error) {
	if opts.Vnode != AllVnodes && (opts.Vnode < 0 || opts.Vnode >= codec.VnodeCount) {
		return nil, fmt.Errorf("state table %d: vnode %d out of range", t.schema.TableID, opts.Vnode)
	}
	epoch := opts.Epoch
	var release func()
	var err error
	for range 3 {
		if opts.Epoch == 0 {
			epoch = t.kv.CommittedEpoch()
		}
		// Hold the versions of epoch for the iterator's lifetime.
		if release, err = t.kv.Pin(t.storeEpoch(epoch)); err == nil || opts.Epoch != 0 || !errors.Is(err, storage.ErrEpochDiscarded) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("state table %d: iter: %w", t.schema.TableID, err)
	}
	lower, upper := t.span(opts)
	var kvIt storage.Iterator = noKeys{}
	none, err := t.storeHasNone(ctx, opts, lower, t.storeEpoch(epoch))
	if err == nil && !none {
		kvIt, err = Scan(ctx, t.kv, lower, upper, t.storeEpoch(epoch), t.schema.Blocks)
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("state table %d: iter: %w", t.schema.TableID, err)
	}
	it := &rowIter{t: t, kv: kvIt, release: release, opts: opts}
	var cur []entry
	if h, ok := t.prefixHash(opts); !ok || t.cur.holdsPrefix(h) {
		cur = t.cur.inRange(lower, upper, opts)
	}
	it.sources = append(it.sources, source{entries: cur})
	for i := len(t.layers) - 1; i >= 0 && t.layers[i].epoch > epoch; i-- {
		it.sources = append(it.sources, source{entries: filterRange(t.layers[i].entries, lower, upper, opts)})
	}
	return it, nil
}

// span returns the key range covering opts.
func (t *Table) span(opts IterOptions) (lower, upper []byte) {
	if opts.Vnode == AllVnodes {
		lower, upper = codec.TableSpan(t.schema.TableID)
		return lower, upper
	}
	prefix := codec.AppendTablePrefix(nil, t.schema.TableID, uint16(opts.Vnode))
	lower = append(slices.Clone(prefix), opts.Range.Start...)
	if opts.Range.End != nil {
		upper = append(slices.Clone(prefix), opts.Range.End...)
	} else {
		upper = codec.PrefixEnd(prefix)
	}
	return lower, upper
}

// inKeyRange reports whether a full key lies in [lower, upper) and, for AllVnodes, its pk part in
// opts.Range.
func inKeyRange(key string, lower, upper []byte, opts IterOptions) bool {
	if key < string(lower) || (upper != nil && key >= string(upper)) {
		return false
	}
	if opts.Vnode == AllVnodes {
		pk := key[codec.TablePrefixLen:]
		if pk < string(opts.Range.Start) || (opts.Range.End != nil && pk >= string(opts.Range.End)) {
			return false
		}
	}
	return true
}

func (b *buffer) inRange(lower, upper []byte, opts IterOptions) []entry {
	// Keep the sorted index current when the tail grows, so range reads cost
	// O(log n + k) rather than a scan of every write of the epoch.
	if tail := len(b.entries) - len(b.sorted); tail > 32 && tail*8 > len(b.sorted) {
		b.resort()
	}
	var out []entry
	i := sort.Search(len(b.sorted), func(i int) bool { return b.entries[b.sorted[i]].key >= string(lower) })
	for ; i < len(b.sorted); i++ {
		e := b.entries[b.sorted[i]]
		if upper != nil && e.key >= string(upper) {
			break
		}
		if inKeyRange(e.key, lower, upper, opts) {
			out = append(out, e)
		}
	}
	sortedN := len(out)
	for _, e := range b.entries[len(b.sorted):] {
		if inKeyRange(e.key, lower, upper, opts) {
			out = append(out, e)
		}
	}
	if len(out) > sortedN {
		sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	}
	return out
}

// resort rebuilds the sorted index over every entry.
func (b *buffer) resort() {
	n := len(b.sorted)
	for p := n; p < len(b.entries); p++ {
		b.sorted = append(b.sorted, p)
	}
	tail := b.sorted[n:]
	sort.Slice(tail, func(i, j int) bool { return b.entries[tail[i]].key < b.entries[tail[j]].key })
	if n == 0 {
		return
	}
	merged := make([]int, 0, len(b.sorted))
	x, y := b.sorted[:n], tail
	for len(x) > 0 && len(y) > 0 {
		if b.entries[x[0]].key <= b.entries[y[0]].key {
			merged, x = append(merged, x[0]), x[1:]
		} else {
			merged, y = append(merged, y[0]), y[1:]
		}
	}
	b.sorted = append(append(merged, x...), y...)
}

func filterRange(sorted []entry, lower, upper []byte, opts IterOptions) []entry {
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i].key >= string(lower) })
	j := len(sorted)
	if upper != nil {
		j = sort.Search(len(sorted), func(i int) bool { return sorted[i].key >= string(upper) })
	}
	if opts.Vnode != AllVnodes || (opts.Range.Start == nil && opts.Range.End == nil) {
		return sorted[i:j:j]
	}
	var out []entry
	for _, e := range sorted[i:j] {
		if inKeyRange(e.key, lower, upper, opts) {
			out = append(out, e)
		}
	}
	return out
}

// source is a sorted list of pending writes; sources[0] is the newest.
type source struct {
	entries []entry
	pos     int
}

type rowIter struct {
	t       *Table
	kv      storage.Iterator
	release func()
	opts    IterOptions
	sources []source

	kvValid bool // kv is positioned at an unconsumed entry
	kvDone  bool
	key     []byte
	value   []byte
	row     []types.Datum
	err     error
	closed  bool
}

// advanceKV moves the store iterator to its next entry the pk range accepts.
func (it *rowIter) advanceKV() error {
	for {
		err := it.kv.Next()
		if err == io.EOF {
			it.kvDone, it.kvValid = true, false
			return nil
		}
		if err != nil {
			return err
		}
		if it.opts.Vnode != AllVnodes || (it.opts.Range.Start == nil && it.opts.Range.End == nil) ||
			inKeyRange(string(it.kv.Key()), nil, nil, it.opts) {
			it.kvValid = true
			return nil
		}
	}
}

func (it *rowIter) Next() error {
	if it.err != nil {
		return it.err
	}
	for {
		if !it.kvValid && !it.kvDone {
			if err := it.advanceKV(); err != nil {
				it.err = fmt.Errorf("state table %d: scan: %w", it.t.schema.TableID, err)
				return it.err
			}
		}
		// Find the smallest key among the store and the pending sources (compared without
		// allocating: string(bytes) in a comparison does not copy).
		have, kvIsMin := it.kvValid, it.kvValid
		var minS string
		for i := range it.sources {
			s := &it.sources[i]
			if s.pos == len(s.entries) {
				continue
			}
			k := s.entries[s.pos].key
			if !have || (kvIsMin && k < string(it.kv.Key())) || (!kvIsMin && k < minS) {
				have, kvIsMin, minS = true, false, k
			}
		}
		if !have {
			it.err = io.EOF
			return it.err
		}
		if kvIsMin {
			it.key = append(it.key[:0], it.kv.Key()...)
		} else {
			it.key = append(it.key[:0], minS...)
		}
		// The newest source holding the key wins; every source holding it advances.
		var win *entry
		for i := range it.sources {
			s := &it.sources[i]
			if s.pos < len(s.entries) && s.entries[s.pos].key == string(it.key) {
				if win == nil {
					win = &s.entries[s.pos]
				}
				s.pos++
			}
		}
		if win != nil {
			if it.kvValid && bytes.Equal(it.kv.Key(), it.key) {
				it.kvValid = false
			}
			if win.del {
				continue
			}
			it.value = win.value
		} else {
			it.value = it.kv.Value() // decoded below, before the store iterator moves
			it.kvValid = false
		}
		var err error
		if it.row, err = codec.DecodeRowMissing(it.t.schema.Types, it.value, it.row, it.t.schema.Missing); err != nil {
			it.err = fmt.Errorf("state table %d: decode row %x: %w", it.t.schema.TableID, it.key, err)
			return it.err
		}
		return nil
	}
}

func (it *rowIter) Row() []types.Datum { return it.row }
func (it *rowIter) PK() []byte         { return it.key[codec.TablePrefixLen:] }
func (it *rowIter) Vnode() uint16 {
	_, v, _ := codec.SplitTablePrefix(it.key)
	return v
}

func (it *rowIter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	err := it.kv.Close()
	it.release()
	if it.err != nil && it.err != io.EOF {
		err = errors.Join(it.err, err)
	}
	it.err = fmt.Errorf("state iterator: %w", storage.ErrClosed)
	return err
}
