package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bdg "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"

	"github.com/tributary/tributary/storage"
)

// ErrInUse is returned by Open when another process holds the data directory.
var ErrInUse = errors.New("data dir is in use by another process")

// metaKey holds the committed-epoch watermark and the discard epoch, 8 bytes each, big endian. Its
// version is the epoch it was written at.
var metaKey = append(bytes.Clone(storage.ReservedPrefix), "meta/committed"...)

// badgerPrefix starts Badger's internal keys, which its iterators hide; Commit refuses such keys.
var badgerPrefix = []byte("!badger!")

// Options configure Open.
type Options struct {
	// Dir is the data directory; it is created if missing.
	Dir string
	// MinFreeBytes is the free space under which Open and Commit fail with storage.ErrDiskFull.
	// 0 means storage.DefaultMinFreeBytes.
	MinFreeBytes uint64
	// MemTableSize is Badger's memtable size in bytes (0: DefaultMemTableSize). One Badger
	// transaction holds at most about 15% of it, so smaller values split batches more.
	MemTableSize int64
	// BlockCacheSize is Badger's block cache in bytes (0: DefaultBlockCacheSize).
	BlockCacheSize int64
	// MemoryShare is the most Badger's memtables, block cache and index cache
	// may take together (the store's share of --memory-limit; 0: the
	// defaults). A share at or above the defaults' DefaultMemory keeps them;
	// a smaller one scales them down (MemorySizes). MemTableSize and
	// BlockCacheSize, when set, win.
	MemoryShare int64
	// Logger receives Badger's warnings and errors at level Warn (nil: slog.Default()).
	Logger *slog.Logger
	// NoSync acknowledges commits before they reach the disk: they survive the process being
	// killed but not an operating-system crash or power loss. By default every Commit is synced
	// (fsync) before it returns; the writes of one epoch share one sync. With NoSync a commit
	// returns before Badger holds it (its commit-log record, written unsynced, covers it until
	// then; deferred.go).
	NoSync bool
	// AcceptDamagedTail lets Open start when a write-ahead file has damaged bytes followed by
	// readable entries: the entries from the damage on are dropped (and logged). Without it Open
	// refuses such a directory with a *DamageError.
	AcceptDamagedTail bool
	// ValueLogFileSize is the size of a value-log file (0: 16 MiB; tests use Badger's 1 MiB
	// minimum to reach several files quickly).
	ValueLogFileSize int64
	// ValueLogGCInterval is how often the store reclaims value-log files that are mostly
	// garbage (0: every 30 s; negative: never, for tests that collect by hand).
	ValueLogGCInterval time.Duration
}

// Badger's memory defaults (issue 19; docs/benchmarks.md has the runs).
// Memtables of 64 MiB, three of them (one written, two being flushed), a
// 64 MiB block cache and a 64 MiB index cache (without one every open
// table's index stays in memory, growing with the data): all bounded.
// Without jemalloc (a plain Go build) Badger's manual allocations
// (ristretto's z.Calloc) are Go heap, and the table builders' allocators
// are not bounded by any option: Badger pools up to 8 of them (not
// configurable), each kept up to 400 MiB, at whatever size its largest table
// made it grow (an L0->L0 compaction starts at 256 MiB). Tried and not kept,
// because they did not bound the builders and cost CPU or memory elsewhere
// in q4 and q20: memtables of 32 MiB x 2 or of 8 MiB (50% more CPU in q9),
// two compactors, L0 compacted from 3 tables, uncompressed tables (memory
// moves to mapped file pages).
const (
	DefaultMemTableSize   = 64 << 20
	DefaultNumMemtables   = 3
	DefaultBlockCacheSize = 64 << 20
	DefaultIndexCacheSize = 64 << 20
	// DefaultMemory is what the defaults take together (320 MiB).
	DefaultMemory = DefaultNumMemtables*DefaultMemTableSize + DefaultBlockCacheSize + DefaultIndexCacheSize
)

// MemorySizes are Badger's memory settings.
type MemorySizes struct {
	MemTableSize   int64
	NumMemtables   int
	BlockCacheSize int64
	IndexCacheSize int64
}

// Total is what the sizes take together.
func (m MemorySizes) Total() int64 {
	return int64(m.NumMemtables)*m.MemTableSize + m.BlockCacheSize + m.IndexCacheSize
}

// Smallest sizes MemorySizesFor gives: a memtable of 2 MiB still holds a
// transaction of 300 KB (15%), and caches below 1 MiB hold too few blocks.
const (
	minMemTableSize = 2 << 20
	minCacheSize    = 1 << 20
)

// MemorySizesFor returns the memory settings for a share of share bytes: the
// defaults when share is 0 or at least DefaultMemory, else the defaults'
// proportions scaled down (memtables 60%, block cache 20%, index cache 20%),
// two memtables instead of three when each would be under 8 MiB, and no size
// under 2 MiB (memtables) or 1 MiB (caches), so a tiny share may be exceeded.
func MemorySizesFor(share int64) MemorySizes {
	if share <= 0 || share >= DefaultMemory {
		return MemorySizes{DefaultMemTableSize, DefaultNumMemtables, DefaultBlockCacheSize, DefaultIndexCacheSize}
	}
	m := MemorySizes{NumMemtables: DefaultNumMemtables}
	mem := share * 6 / 10
	if mem/int64(m.NumMemtables) < 8<<20 {
		m.NumMemtables = 2
	}
	m.MemTableSize = max(mem/int64(m.NumMemtables), minMemTableSize)
	m.BlockCacheSize = max(share/5, minCacheSize)
	m.IndexCacheSize = max(share/5, minCacheSize)
	return m
}

// Store is a storage.KV on a Badger database. Create it with Open.
type Store struct {
	db      *bdg.DB
	dir     string
	minFree atomic.Uint64

	committed  atomic.Uint64
	maxVersion atomic.Uint64
	discard    storage.DiscardTracker

	// commitMu serialises Commit and Stage and guards failed, wal and stagedBig.
	commitMu sync.Mutex
	failed   error    // set when a Commit failed after writing; further commits refuse
	wal      *walSync // syncs Badger's write-ahead files (nil with NoSync)
	redo     *redoLog // the commit log that makes most commits durable (unsynced with NoSync)
	// staged are the epochs Stage wrote and no Commit has published or dropped yet;
	// stagedBig is set when a staged batch put values in the value log (synced at the Commit).
	staged    storage.StagedEpochs
	stagedBig bool
	// staging is the last Stage's write, which runs on after Stage returns (holding commitMu
	// until it is done), so the writer prepares its next batch meanwhile; reads above the
	// committed epoch wait for it, and its error comes back from the next Stage or Commit.
	staging atomic.Pointer[stageOp]
	// noSync is Options.NoSync: the commit log is written but never synced, and commits wait
	// in windows that Badger takes together (deferred.go); while those are paused, a commit of
	// parallelWriteEntries or more goes into Badger after Commit returns (applying).
	noSync bool
	// applying is the last such commit's write into Badger, which runs on after Commit returns
	// (holding commitMu until it is done): reads at or above its epoch wait for it, and its
	// error comes back from the next Commit or Stage.
	applying atomic.Pointer[applyOp]
	// applyPause is how many commits are still written before Commit returns because a read
	// had to wait for such a write (set by waitApplying, counted down by applyLater).
	applyPause atomic.Int32
	// beforeApply (tests) runs before such a write.
	beforeApply func()
	// deferMu holds the committed small batches Badger has not taken yet (deferred.go), in
	// epoch order; deferFirst is the first one's epoch (0: none). Lock order: commitMu, closeMu,
	// deferMu in Commit; deferMu, closeMu in a read that writes them first.
	deferMu struct {
		sync.Mutex
		commits []deferredCommit
		entries int
		bytes   int
		pause   int // commits not to defer (reads had to write the deferred ones)
		// seq counts the commits asked to wait (deferrable); forced holds seq at the last
		// pauseReads-1 reads that had to write the waiting ones (n of them so far; next: the
		// oldest's place).
		seq    uint64
		forced struct {
			at      [pauseReads - 1]uint64
			n, next int
		}
		// index finds a key's newest version in a long window (built by the first point
		// read that needs it, then kept up by each commit; nil again when the window goes).
		index map[uint64]uint64
		seed  maphash.Seed
	}
	deferFirst atomic.Uint64
	// windowOp is the last sealed window's write into Badger (NoSync, deferred.go), which runs
	// without commitMu: reads at or above its first epoch wait for it, and its error comes back
	// from the next Commit.
	windowOp atomic.Pointer[applyOp]
	// sealedBytes is the sealed window's size while it is written.
	sealedBytes atomic.Int64
	// valueThreshold is the value size from which Badger puts values in the value log.
	valueThreshold int
	// space answers the free-space check before each Stage and Commit.
	space storage.SpaceGuard
	// sizes are Badger's memory settings as opened (the caches' sizes at scale 1).
	sizes MemorySizes

	// closeMu is held shared by every operation touching db and exclusively by Close.
	closeMu struct {
		sync.RWMutex
		closed bool
	}
	iters struct {
		sync.Mutex
		open map[*iter]struct{}
	}
	// events counts what Badger logs of its stalls and slow compactions;
	// l0Stall is the L0 table count at which writes stall.
	events  *badgerEvents
	l0Stall int

	// loseLogged (tests) leaves commits that go through the commit log out of Badger, as an
	// operating-system crash would take them from its unsynced files.
	loseLogged bool
	// noPageout is set once the kernel refused MADV_PAGEOUT (before Linux 5.4): TrimMapped then
	// measures and trims nothing.
	noPageout atomic.Bool

	logger *slog.Logger
	// gc is the value-log collection (vloggc.go): mu serialises collections; the loop runs
	// until stop is closed and closes done.
	gc struct {
		mu         sync.Mutex
		stop, done chan struct{}
		stopOnce   sync.Once
	}
}

var _ storage.KV = (*Store)(nil)

// Open opens (or creates) the store in opts.Dir and rolls back any versions above the persisted
// committed epoch (left by a crash during a commit), so the store reads exactly its last committed
// epoch.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("open badger store: no data dir")
	}
	minFree := opts.MinFreeBytes
	if minFree == 0 {
		minFree = storage.DefaultMinFreeBytes
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	events := &badgerEvents{}
	sizes := MemorySizesFor(opts.MemoryShare)
	bo := bdg.DefaultOptions(opts.Dir).
		WithLogger(slogLogger{l: logger.With("component", "badger", "dir", opts.Dir), events: events}).
		WithSyncWrites(false). // walSync syncs each commit, with one flush instead of Badger's two
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true).
		WithNumVersionsToKeep(1).
		WithMetricsEnabled(false).
		WithNumMemtables(sizes.NumMemtables).
		// Writes are serialised by commitMu: Badger's conflict detection has nothing to find, and
		// in managed mode it keeps every committed transaction's key fingerprints until the discard
		// timestamp passes them (hundreds of MB over one big epoch: 5M keys staged while no epoch
		// committed, issue 14).
		WithDetectConflicts(false).
		WithIndexCacheSize(sizes.IndexCacheSize).
		WithBlockCacheSize(sizes.BlockCacheSize).
		// Uncompressed tables: a block is read where it lies rather than decompressed into a
		// fresh buffer (a 10M-row snapshot scan: about 12% less CPU and 170 MB less garbage;
		// state and blocks compress little, the files grew 3%). Tables written compressed
		// stay readable (each table records its compression).
		WithCompression(options.None).
		// L0 is compacted from 10 tables (Badger's default: 5), writes stall at 30 (15). State
		// keys start with their vnode, so every L0 table spans the whole key space and each
		// L0 compaction rewrites the base level: a bulk write (a 10M-row CDC copy, 450 MB)
		// paid a third of its CPU compacting while it ran (1.6 GB written for 450 MB of data,
		// 1.3 GB now). Reads did not get slower: a 10M-row table read by a new view's
		// backfill after its load took less CPU (fewer, larger tables to step through).
		WithNumLevelZeroTables(10).
		WithNumLevelZeroTablesStall(30).
		// The base level (where L0 goes) holds 256 MiB and its tables 16 MiB (Badger's
		// defaults: 10 MiB and 2 MiB). Badger sizes levels up from the last one and compacts L0
		// into the first level whose size reaches the base level's, so a store of a few GB
		// had three levels under L0 where it now has two: state that no watermark cleans
		// (a join or top-N over every auction and bid) is rewritten once less, every read
		// seeks one level less, and fewer, larger tables mean fewer msyncs and mappings.
		// Nexmark q18 at 15M events: 20.6 -> 15.2 CPU-s per million events
		// (docs/benchmarks.md, "Fewer, larger levels").
		WithBaseLevelSize(256 << 20).
		WithBaseTableSize(16 << 20)
	if opts.MemTableSize > 0 {
		sizes.MemTableSize = opts.MemTableSize
	}
	// Badger requires values stored in the LSM to fit one transaction (about 15% of a memtable).
	bo = bo.WithMemTableSize(sizes.MemTableSize).WithValueThreshold(min(valueLogThreshold, sizes.MemTableSize/10))
	vlogSize := int64(valueLogFileSize)
	if opts.ValueLogFileSize > 0 {
		vlogSize = opts.ValueLogFileSize
	}
	bo = bo.WithValueLogFileSize(vlogSize)
	if opts.BlockCacheSize > 0 {
		sizes.BlockCacheSize = opts.BlockCacheSize
		bo = bo.WithBlockCacheSize(opts.BlockCacheSize)
	}
	if err := ensureDir(opts.Dir); err != nil {
		return nil, err
	}
	if err := storage.CheckFreeSpace(opts.Dir, minFree); err != nil {
		return nil, fmt.Errorf("open badger store: %w", err)
	}
	// A crash while Badger created a value-log or memtable file leaves it empty, and Open
	// then fails on it (dgraph-io/badger#2207; Open's own attempt also makes the file
	// non-empty, so this must happen first). An empty file holds no data: remove such
	// files, under Badger's directory lock so a running server is never touched. Then
	// check what Badger would otherwise lose or misread silently (checkDir).
	if err := withDirLock(opts.Dir, func() error {
		removed, err := removeEmptyLogFiles(opts.Dir)
		if removed > 0 {
			logger.Warn("removed empty log files left by a crash", "dir", opts.Dir, "files", removed)
		}
		if err != nil {
			return err
		}
		if restored, err := restoreValueLogs(opts.Dir); err != nil {
			return err
		} else if restored > 0 {
			logger.Warn("put back value-log files a collection removed before a crash", "dir", opts.Dir, "files", restored)
		}
		return checkDir(opts.Dir, opts.AcceptDamagedTail, logger.Warn)
	}); err != nil {
		return nil, err
	}
	existing := exists(filepath.Join(opts.Dir, bdg.ManifestFilename))
	var db *bdg.DB
	err := catchPanic(func() error {
		var err error
		db, err = bdg.OpenManaged(bo)
		return err
	})
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("data dir %s is in use by another process: %w (%v)", opts.Dir, ErrInUse, err)
		}
		return nil, fmt.Errorf("open badger at %s: %w", opts.Dir, oneLineError{err})
	}
	s := &Store{db: db, dir: opts.Dir, logger: logger, valueThreshold: int(bo.ValueThreshold), events: events, l0Stall: bo.NumLevelZeroTablesStall, sizes: sizes}
	s.minFree.Store(minFree)
	s.iters.open = make(map[*iter]struct{})
	if !opts.NoSync {
		if s.wal, err = newWALSync(opts.Dir); err != nil {
			return nil, errors.Join(fmt.Errorf("open badger store at %s: %w", opts.Dir, err), db.Close())
		}
	}
	s.noSync = opts.NoSync
	{
		// Without syncs, an operating-system crash may leave any part of the log's last
		// writes unwritten: its damaged tail is dropped rather than refused, as what NoSync
		// acknowledged may be lost then anyway.
		redo, recs, err := openRedo(opts.Dir, existing, opts.AcceptDamagedTail || opts.NoSync, opts.NoSync, logger.Warn)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("open badger store at %s: %w", opts.Dir, err), db.Close())
		}
		s.redo = redo
		if err := s.replay(recs, logger); err != nil {
			return nil, errors.Join(fmt.Errorf("replay the commit log of %s: %w", opts.Dir, err), redo.close(), db.Close())
		}
	}
	if err := s.recover(); err != nil {
		var rerr error
		if s.redo != nil {
			rerr = s.redo.close()
		}
		return nil, errors.Join(fmt.Errorf("recover badger store at %s: %w", opts.Dir, err), rerr, db.Close())
	}
	s.startValueLogGC(opts.ValueLogGCInterval)
	return s, nil
}

// replay writes the commit log's records above Badger's committed epoch into Badger (commits
// an operating-system crash took from Badger's unsynced files). The log keeps them (new records
// follow them) until it starts over, so nothing is synced here: after a kill -9 Badger's
// memtable files can hold tens of MB of dirty pages, whose sync would delay the start.
func (s *Store) replay(recs []redoRecord, logger *slog.Logger) error {
	committed, _, err := s.readMeta()
	if err != nil {
		return err
	}
	n := 0
	for _, r := range recs {
		if r.epoch <= committed {
			continue
		}
		if err := s.write(r.epoch, r.discard, r.batch); err != nil {
			return fmt.Errorf("epoch %d: %w", r.epoch, err)
		}
		committed = r.epoch
		n++
	}
	if n > 0 {
		logger.Info("replayed commits from the commit log", "dir", s.dir, "commits", n, "committed_epoch", committed)
	}
	return nil
}

// checkpointLocked starts the commit log over when it is full. The caller holds commitMu, or is
// Open. With NoSync the next generation takes the log's other half (switchHalf), once the
// records there, two generations old, are in Badger; else every write so far is made durable
// in Badger's own files, and the log's records are then redundant.
func (s *Store) checkpointLocked() error {
	if s.noSync {
		if s.redo.prevStart != 0 {
			if err := s.inBadger(s.redo.prevLast); err != nil {
				return err
			}
		}
		return s.redo.switchHalf()
	}
	if err := s.applyDeferred(); err != nil { // the log's records of them are about to go
		return err
	}
	if s.wal != nil {
		if err := s.wal.sync(true); err != nil {
			return err
		}
	}
	return s.redo.reset(s.redo.gen + 1)
}

// inBadger waits until Badger's files hold every commit up to epoch: its watermark (the
// committed epoch written with each write into Badger, in epoch order) reaches it once the
// sealed window's write ends, or else the deferred commits are written now. The caller holds
// commitMu: no other commit is applying.
func (s *Store) inBadger(epoch uint64) error {
	for try := 0; ; try++ {
		committed, _, err := s.readMeta()
		if err != nil {
			return fmt.Errorf("commit log checkpoint: %w", err)
		}
		if committed >= epoch {
			return nil
		}
		switch try {
		case 0:
			err = s.waitWindow()
		case 1:
			err = s.applyDeferred()
		default:
			return fmt.Errorf("commit log checkpoint: Badger's committed epoch %d is below %d, the last of the records to overwrite", committed, epoch)
		}
		if err != nil {
			return fmt.Errorf("commit log checkpoint: %w", err)
		}
	}
}

func encodeMeta(committed, discard uint64) []byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], committed)
	binary.BigEndian.PutUint64(b[8:], discard)
	return b[:]
}

// readMeta returns the persisted committed and discard epochs (zeros for a new database).
func (s *Store) readMeta() (committed, discard uint64, err error) {
	txn := s.db.NewTransactionAt(math.MaxUint64, false)
	defer txn.Discard()
	item, err := txn.Get(metaKey)
	if errors.Is(err, bdg.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read meta key: %w", err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return 0, 0, fmt.Errorf("read meta value: %w", err)
	}
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("meta value has %d bytes, want 16", len(v))
	}
	return binary.BigEndian.Uint64(v[:8]), binary.BigEndian.Uint64(v[8:]), nil
}

// recover loads the watermark and rolls back versions above it: at a new epoch R above every stored
// version it writes each such key's value as of the watermark (or a delete where it had none), then
// publishes R. A crash during recovery is itself rolled back by the next Open.
func (s *Store) recover() error {
	committed, discard, err := s.readMeta()
	if err != nil {
		return err
	}
	keys, err := s.keysAbove(committed)
	if err != nil {
		return err
	}
	maxV := max(s.db.MaxVersion(), committed)
	s.discard.Init(discard)
	s.db.SetDiscardTs(discard)
	if len(keys) == 0 {
		s.committed.Store(committed)
		s.maxVersion.Store(maxV)
		return nil
	}
	r := maxV + 1
	rtxn := s.db.NewTransactionAt(committed, false)
	defer rtxn.Discard()
	wb := s.db.NewWriteBatchAt(r)
	defer wb.Cancel()
	for _, k := range keys {
		item, err := rtxn.Get(k)
		switch {
		case errors.Is(err, bdg.ErrKeyNotFound):
			err = wb.Delete(k)
		case err != nil:
			return fmt.Errorf("read %x at %d: %w", k, committed, err)
		default:
			var v []byte
			if v, err = item.ValueCopy(nil); err != nil {
				return fmt.Errorf("read value of %x at %d: %w", k, committed, err)
			}
			err = wb.Set(k, v)
		}
		if err != nil {
			return fmt.Errorf("roll back %x: %w", k, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("flush roll-back at %d: %w", r, err)
	}
	if err := s.writeMeta(r, discard); err != nil {
		return err
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("sync roll-back: %w", err)
	}
	if s.wal != nil {
		if err := s.wal.sync(true); err != nil {
			return fmt.Errorf("sync roll-back: %w", err)
		}
	}
	slog.Default().Debug("rolled back uncommitted versions", "dir", s.dir, "keys", len(keys),
		"committed", committed, "published", r)
	s.committed.Store(r)
	s.maxVersion.Store(r)
	return nil
}

// keysAbove lists the user keys having a version above epoch, each once.
func (s *Store) keysAbove(epoch uint64) ([][]byte, error) {
	txn := s.db.NewTransactionAt(math.MaxUint64, false)
	defer txn.Discard()
	opts := bdg.IteratorOptions{AllVersions: true, SinceTs: epoch}
	it := txn.NewIterator(opts)
	defer it.Close()
	var keys [][]byte
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		if bytes.HasPrefix(k, storage.ReservedPrefix) {
			continue
		}
		if n := len(keys); n > 0 && bytes.Equal(keys[n-1], k) {
			continue
		}
		keys = append(keys, it.Item().KeyCopy(nil))
	}
	return keys, nil
}

func (s *Store) writeMeta(epoch, discard uint64) error {
	txn := s.db.NewTransactionAt(math.MaxUint64, true)
	defer txn.Discard()
	if err := txn.Set(metaKey, encodeMeta(epoch, discard)); err != nil {
		return fmt.Errorf("set meta at %d: %w", epoch, err)
	}
	if err := txn.CommitAt(epoch, nil); err != nil {
		return fmt.Errorf("commit meta at %d: %w", epoch, err)
	}
	return nil
}

// Commit implements storage.KV. A small batch (under directMin entries, fitting one Badger
// transaction) is written with the watermark in that transaction; a bigger one is written by
// writeDirect and the watermark follows in its own transaction once every entry is in.
func (s *Store) Commit(ctx context.Context, epoch uint64, b *storage.Batch) error {
	s.commitMu.Lock()
	unlock := true // false once a write applying the batch holds both locks (applyLater)
	defer func() {
		if unlock {
			s.commitMu.Unlock()
		}
	}()
	s.closeMu.RLock()
	defer func() {
		if unlock {
			s.closeMu.RUnlock()
		}
	}()
	if s.closeMu.closed {
		return fmt.Errorf("badger commit epoch %d: %w", epoch, storage.ErrClosed)
	}
	if s.failed != nil {
		return fmt.Errorf("badger commit epoch %d: %w (after %v)", epoch, storage.ErrFailed, s.failed)
	}
	if err := s.applyErrLocked(); err != nil {
		s.failed = err
		return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
	}
	if err := s.stageErrLocked(true); err != nil {
		return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
	}
	if c := s.committed.Load(); epoch <= c {
		return fmt.Errorf("badger commit epoch %d, committed %d: %w", epoch, c, storage.ErrStaleEpoch)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
	}
	if b == nil {
		b = &storage.Batch{}
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
	}
	for i := 0; i < b.Len(); i++ {
		if k, _, _ := b.Entry(i); bytes.HasPrefix(k, badgerPrefix) {
			return fmt.Errorf("badger commit epoch %d: %w: key %q is in Badger's internal range", epoch, storage.ErrInvalidKey, k)
		}
	}
	if err := s.space.Check(s.dir, s.minFree.Load(), 2*uint64(b.Size())); err != nil {
		return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
	}
	b.Normalize()
	discard := s.discard.Effective()
	if s.maxVersion.Load() < epoch {
		s.maxVersion.Store(epoch)
	}
	deferIt := s.deferrable(epoch, b)
	if !deferIt {
		// Badger takes the waiting batches first, in epoch order.
		if err := s.applyDeferred(); err != nil {
			s.failed = err
			return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
		}
	}
	rolledBack, err := s.rollBackAbandoned(epoch)
	if err != nil {
		s.failed = err
		return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
	}
	if deferIt && s.noSync {
		// The window (deferred.go): durable against a kill once its record is written.
		rec, err := s.logLocked(epoch, discard, b)
		if err != nil {
			s.failed = err
			return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
		}
		if rec != nil {
			if s.deferCommit(epoch, discard, b) {
				if err := s.sealWindow(); err != nil {
					s.failed = err
					return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
				}
			}
			s.publishLocked(epoch, discard)
			return nil
		}
		// Not even an empty log holds the record: written as any batch that big.
		if err := s.applyDeferred(); err != nil {
			s.failed = err
			return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
		}
		deferIt = false
	}
	if !deferIt && s.applyLater(epoch, b, rolledBack) {
		rec, err := s.logLocked(epoch, discard, b)
		if err != nil {
			s.failed = err
			return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
		}
		if rec != nil {
			op := &applyOp{epoch: epoch, done: make(chan struct{})}
			s.applying.Store(op) // before the epoch shows committed: its readers wait for op
			s.publishLocked(epoch, discard)
			unlock = false
			go func() {
				defer s.commitMu.Unlock()
				defer s.closeMu.RUnlock()
				defer close(op.done)
				if s.beforeApply != nil {
					s.beforeApply()
				}
				op.err = s.applyLogged(rec)
			}()
			return nil
		}
	}
	if err := s.writeDurably(epoch, discard, b, rolledBack, deferIt); err != nil {
		s.failed = err
		return fmt.Errorf("badger commit epoch %d: %w", epoch, err)
	}
	s.publishLocked(epoch, discard)
	return nil
}

// publishLocked makes epoch the committed one, its writes in Badger or on their way (applying).
// The caller holds commitMu.
func (s *Store) publishLocked(epoch, discard uint64) {
	s.stagedBig = false
	s.staged.Forget(epoch)
	s.committed.Store(epoch)
	s.db.SetDiscardTs(discard)
}

// stageOp is one Stage's write in flight: done is closed when it finished, with err set.
type stageOp struct {
	done chan struct{}
	err  error
}

// waitStaging waits for a Stage's write still in flight when epoch reads above the committed
// epoch (only those can see staged writes); it returns that write's error.
func (s *Store) waitStaging(epoch uint64) error {
	op := s.staging.Load()
	if op == nil || epoch <= s.committed.Load() {
		return nil
	}
	<-op.done
	return op.err
}

// applyOp is a commit's write into Badger in flight (Commit, NoSync): done is closed when it
// finished, with err set.
type applyOp struct {
	epoch uint64
	done  chan struct{}
	err   error
}

// waitApplying waits for a commit's write still in flight when epoch reads at or above its
// epoch; it returns that write's error.
func (s *Store) waitApplying(epoch uint64) error {
	// Reads that follow the commits (other sessions' key checks) gain nothing from a write
	// running on: they wait for it anyway. The next commits go into Badger before they return.
	window := s.windowOp.Load()
	if err := window.wait(epoch, func() {
		s.deferMu.Lock()
		s.deferMu.pause = maxDeferred
		s.deferMu.Unlock()
	}); err != nil {
		return fmt.Errorf("write of the epochs from %d: %w", window.epoch, err)
	}
	op := s.applying.Load()
	if err := op.wait(epoch, func() { s.applyPause.Store(maxDeferred) }); err != nil {
		return fmt.Errorf("commit of epoch %d: %w", op.epoch, err)
	}
	return nil
}

// wait waits for op (nil: none) when epoch reads at or above its epoch, calling pause first if
// the write is still running, and returns the write's error.
func (op *applyOp) wait(epoch uint64, pause func()) error {
	if op == nil || epoch < op.epoch {
		return nil
	}
	select {
	case <-op.done:
	default:
		pause()
		<-op.done
	}
	return op.err
}

// applyErrLocked returns the error of the last commit's write in flight, which has finished:
// the caller holds commitMu, which that write held until it was done.
func (s *Store) applyErrLocked() error {
	if op := s.applying.Load(); op != nil && op.err != nil {
		return fmt.Errorf("the write of committed epoch %d failed: %w", op.epoch, op.err)
	}
	if op := s.windowOp.Load(); op != nil {
		select {
		case <-op.done:
			if op.err != nil {
				return fmt.Errorf("the write of the committed epochs from %d failed: %w", op.epoch, op.err)
			}
		default:
		}
	}
	return nil
}

// applyLater reports whether Commit may return before Badger holds epoch's batch (NoSync, and
// no read waited for such a write in the last maxDeferred commits):
// the commit log then holds it, which a killed process keeps as it keeps Badger's own files.
// The batch is big enough that writing it while the committer prepares the next one pays
// for the hand-off, and needs nothing but its record (no staged epoch, no abandoned stage
// rolled back, no value for the value log).
func (s *Store) applyLater(epoch uint64, b *storage.Batch, rolledBack bool) bool {
	if s.applyPause.Load() > 0 {
		s.applyPause.Add(-1)
		return false
	}
	return s.noSync && s.redo != nil && !s.loseLogged && !rolledBack && !s.stagedBig && !s.staged.Has(epoch) &&
		b.Len() >= parallelWriteEntries && b.Size() < redoBigBatch && !s.hasBigValue(b)
}

// logLocked writes epoch's record to the commit log (checkpointing it first when full) and
// returns it; nil when the record does not fit even an empty log. The caller holds commitMu.
func (s *Store) logLocked(epoch, discard uint64, b *storage.Batch) ([]byte, error) {
	rec := s.redo.encode(epoch, discard, b)
	if !s.redo.fits(len(rec)) {
		if err := s.checkpointLocked(); err != nil {
			return nil, err
		}
		if rec = s.redo.encode(epoch, discard, b); !s.redo.fits(len(rec)) {
			return nil, nil
		}
	}
	if err := s.redo.append(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// applyLogged writes a logged record's batch into Badger. The caller holds commitMu: the log's
// buffer holding rec is reused only by the next record.
func (s *Store) applyLogged(rec []byte) error {
	r, ok := decodeRedo(rec[redoRecHeader:])
	if !ok {
		return fmt.Errorf("badger: a commit log record just encoded does not decode")
	}
	return s.write(r.epoch, r.discard, r.batch)
}

// stageErrLocked returns the error of the last Stage's write, which has finished: the caller
// holds commitMu, which that write held until it was done. A Commit takes the error (clear): the
// failed write's epoch may be below the one a Stage reports it to, and must not commit either.
func (s *Store) stageErrLocked(clear bool) error {
	op := s.staging.Load()
	if op == nil {
		return nil
	}
	if clear {
		s.staging.Store(nil)
	}
	if op.err != nil {
		return fmt.Errorf("an earlier stage failed: %w", op.err)
	}
	return nil
}

// Stage implements storage.KV: b goes into Badger at version epoch (writeDirect), without
// the watermark, so reads at committed epochs ignore it and a restart rolls it back (recover) unless
// Commit(epoch) published it. Badger keeps the newest write of a key at one version (checked on
// v4.9.6 through memtables, level-0 tables and compactions): Commit's batch, written after, wins.
// The write runs on after Stage returns, while the caller fills its next batch (b then belongs to
// the store): reads above the committed epoch wait for it, the next Stage or Commit starts after
// it and reports its error.
func (s *Store) Stage(ctx context.Context, epoch uint64, b *storage.Batch) error {
	s.commitMu.Lock()
	unlock := true
	defer func() {
		if unlock {
			s.commitMu.Unlock()
		}
	}()
	s.closeMu.RLock()
	defer func() {
		if unlock {
			s.closeMu.RUnlock()
		}
	}()
	if s.closeMu.closed {
		return fmt.Errorf("badger stage epoch %d: %w", epoch, storage.ErrClosed)
	}
	if s.failed != nil {
		return fmt.Errorf("badger stage epoch %d: %w (after %v)", epoch, storage.ErrFailed, s.failed)
	}
	if err := s.stageErrLocked(false); err != nil {
		return fmt.Errorf("badger stage epoch %d: %w", epoch, err)
	}
	if err := s.applyErrLocked(); err != nil {
		return fmt.Errorf("badger stage epoch %d: %w", epoch, err)
	}
	if c := s.committed.Load(); epoch <= c {
		return fmt.Errorf("badger stage epoch %d, committed %d: %w", epoch, c, storage.ErrStaleEpoch)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("badger stage epoch %d: %w", epoch, err)
	}
	if b == nil {
		b = &storage.Batch{}
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("badger stage epoch %d: %w", epoch, err)
	}
	for i := 0; i < b.Len(); i++ {
		if k, _, _ := b.Entry(i); bytes.HasPrefix(k, badgerPrefix) {
			return fmt.Errorf("badger stage epoch %d: %w: key %q is in Badger's internal range", epoch, storage.ErrInvalidKey, k)
		}
	}
	if err := s.space.Check(s.dir, s.minFree.Load(), 2*uint64(b.Size())); err != nil {
		return fmt.Errorf("badger stage epoch %d: %w", epoch, err)
	}
	if s.maxVersion.Load() < epoch {
		s.maxVersion.Store(epoch)
	}
	// Staged writes are above the watermark: a failure here leaves nothing a reader sees, and
	// the next Commit, or a restart, rolls them back. Earlier staged epochs may still be on their
	// way to Commit: only a Commit knows them abandoned.
	s.staged.Add(epoch)
	if b.Len() == 0 {
		return nil
	}
	op := &stageOp{done: make(chan struct{})}
	s.staging.Store(op) // the last one succeeded (stageErrLocked above): nothing is lost
	unlock = false      // the write below releases both locks when done
	go func() {
		defer s.commitMu.Unlock()
		defer s.closeMu.RUnlock()
		defer close(op.done)
		op.err = s.stageWriteLocked(epoch, b)
	}()
	return nil
}

// stageWriteLocked writes a validated batch at epoch, one transaction at a time. The caller holds
// commitMu and closeMu shared.
func (s *Store) stageWriteLocked(epoch uint64, b *storage.Batch) error {
	b.Normalize()
	if s.hasBigValue(b) {
		s.stagedBig = true
	}
	if err := s.writeDirect(epoch, b); err != nil {
		return fmt.Errorf("badger stage epoch %d: %w", epoch, err)
	}
	return nil
}

// directMin is the batch size from which Commit writes the data apart from the watermark
// (writeDirect, then the watermark in a transaction of its own) instead of in one transaction.
const directMin = 512

// directPending is how many of writeDirect's requests may wait in Badger's write queue at once.
const directPending = 2

// deleteMeta is Badger's meta bit for a delete (bitDelete), as its KV lists carry it.
var deleteMeta = []byte{1}

// writeDirect writes b (normalized: sorted, one entry per key) at version epoch straight into
// Badger's write queue, in key order and in requests of Badger's batch limits, through its
// loader (DB.NewKVLoader) instead of transactions. It is not atomic: callers write only above
// the watermark (a crash leaves versions that recover rolls back) and publish the epoch after
// it returns. Against a transaction per batch it skips the per-key map of pending writes and
// keeps the keys sorted, which makes the memtable's skiplist inserts two to three times
// cheaper for random keys (a bulk COPY's).
func (s *Store) writeDirect(epoch uint64, b *storage.Batch) error {
	l := s.db.NewKVLoader(directPending)
	if err := load(l, epoch, b); err != nil {
		return errors.Join(err, l.Finish())
	}
	if err := l.Finish(); err != nil {
		return fmt.Errorf("write %d entries: %w", b.Len(), err)
	}
	return nil
}

// load hands b's entries to l at version epoch (a window's commits go through loadMerged).
func load(l *bdg.KVLoader, epoch uint64, b *storage.Batch) error {
	kv := &pb.KV{Version: epoch}
	for i := 0; i < b.Len(); i++ {
		key, value, del := b.Entry(i)
		kv.Key, kv.Value, kv.Meta = key, value, nil
		if del {
			kv.Value, kv.Meta = nil, deleteMeta
		}
		if err := l.Set(kv); err != nil {
			return fmt.Errorf("write entry %d at %d: %w", i, epoch, err)
		}
	}
	return nil
}

// rollBackAbandoned undoes the staged writes of epochs below epoch that never committed: at
// version epoch, each key whose newest version is such an epoch gets its value as of the committed
// epoch again (or a delete where it had none). Keys staged at epoch itself are left alone; what
// epoch's Commit or Stage writes next wins over the roll-back. The caller holds commitMu.
func (s *Store) rollBackAbandoned(epoch uint64) (bool, error) {
	if len(s.staged.Abandoned(epoch)) == 0 {
		return false, nil
	}
	committed := s.committed.Load()
	txn := s.db.NewTransactionAt(math.MaxUint64, false)
	defer txn.Discard()
	it := txn.NewIterator(bdg.IteratorOptions{AllVersions: true, SinceTs: committed})
	defer it.Close()
	rtxn := s.db.NewTransactionAt(committed, false)
	defer rtxn.Discard()
	wb := s.db.NewWriteBatchAt(epoch)
	defer wb.Cancel()
	var last []byte
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if last != nil && bytes.Equal(k, last) {
			continue // an older version of a key already decided
		}
		last = item.KeyCopy(last[:0])
		if bytes.HasPrefix(k, storage.ReservedPrefix) || bytes.HasPrefix(k, badgerPrefix) {
			continue
		}
		if v := item.Version(); v <= committed || v >= epoch {
			continue
		}
		old, err := rtxn.Get(last)
		switch {
		case errors.Is(err, bdg.ErrKeyNotFound):
			err = wb.Delete(bytes.Clone(last))
		case err != nil:
			return false, fmt.Errorf("roll back abandoned stage: read %x at %d: %w", last, committed, err)
		default:
			var v []byte
			if v, err = old.ValueCopy(nil); err != nil {
				return false, fmt.Errorf("roll back abandoned stage: read value of %x at %d: %w", last, committed, err)
			}
			err = wb.Set(bytes.Clone(last), v)
		}
		if err != nil {
			return false, fmt.Errorf("roll back abandoned stage: %x: %w", last, err)
		}
		n++
	}
	if err := wb.Flush(); err != nil {
		return false, fmt.Errorf("roll back abandoned stage at %d: %w", epoch, err)
	}
	slog.Default().Debug("rolled back abandoned staged writes", "dir", s.dir, "keys", n, "epoch", epoch)
	s.staged.ForgetBelow(epoch)
	return true, nil
}

func (s *Store) write(epoch, discard uint64, b *storage.Batch) error {
	meta := encodeMeta(epoch, discard)
	fits := b.Len() < directMin
	if fits {
		txn := s.db.NewTransactionAt(math.MaxUint64, true)
		for i := 0; i < b.Len() && fits; i++ {
			if err := setEntry(txn, b, i); err != nil {
				if !errors.Is(err, bdg.ErrTxnTooBig) {
					txn.Discard()
					return err
				}
				fits = false
			}
		}
		if fits {
			if err := txn.Set(metaKey, meta); err != nil {
				if !errors.Is(err, bdg.ErrTxnTooBig) {
					txn.Discard()
					return fmt.Errorf("set meta: %w", err)
				}
				fits = false
			}
		}
		if fits {
			defer txn.Discard()
			if err := txn.CommitAt(epoch, nil); err != nil {
				return fmt.Errorf("commit transaction: %w", err)
			}
			return nil
		}
		txn.Discard()
	}
	// A big batch: the data first, then the watermark that publishes it.
	if err := s.writeDirect(epoch, b); err != nil {
		return err
	}
	return s.writeMeta(epoch, discard)
}

// writeDurably writes epoch's batch into Badger and, unless NoSync, makes it durable before
// returning: through the commit log (one record written and synced while Badger takes the
// batch; with NoSync written, not synced), or, when the epoch also published staged writes,
// rolled back abandoned ones (rolledBack), holds values bound for the value log, is big
// (redoBigBatch) or does not fit the log, by syncing Badger's own write-ahead files, which
// cover those too.
func (s *Store) writeDurably(epoch, discard uint64, b *storage.Batch, rolledBack, deferIt bool) error {
	// With NoSync (no wal) every other commit goes through the commit log too, unsynced: a
	// damaged Badger file then loses none of them (--accept-damaged-tail replays them).
	if s.redo == nil || (s.wal == nil && !s.noSync) || rolledBack || s.stagedBig || s.staged.Has(epoch) || b.Size() >= redoBigBatch || s.hasBigValue(b) {
		if err := s.write(epoch, discard, b); err != nil {
			return err
		}
		if s.wal != nil {
			return s.wal.sync(s.stagedBig || s.hasBigValue(b))
		}
		return nil
	}
	rec := s.redo.encode(epoch, discard, b)
	if !s.redo.fits(len(rec)) {
		// The log is full: a checkpoint starts it over.
		if err := s.checkpointLocked(); err != nil {
			return err
		}
		rec = s.redo.encode(epoch, discard, b) // the new generation
		if !s.redo.fits(len(rec)) {
			// Bigger than the whole log: Badger's own sync covers it.
			if err := s.write(epoch, discard, b); err != nil {
				return err
			}
			if s.wal == nil {
				return nil
			}
			return s.wal.sync(false)
		}
	}
	if deferIt {
		// Durable once its record is synced; Badger takes it later with others (deferred.go).
		if err := s.redo.append(rec); err != nil {
			return err
		}
		s.deferCommit(epoch, discard, b)
		return nil
	}
	// A small batch goes into Badger first, on this goroutine: handing it to
	// another one would wake an idle thread (tens of microseconds on a VM,
	// and the log's write measured 25-35 µs slower with the wake-up beside
	// it). A big batch goes into Badger on another goroutine while the log
	// is written and synced here.
	written := make(chan error, 1)
	switch {
	case s.loseLogged:
		written <- nil
	case b.Len() < parallelWriteEntries:
		written <- s.write(epoch, discard, b)
	default:
		go func() { written <- s.write(epoch, discard, b) }()
	}
	lerr := s.redo.append(rec)
	if werr := <-written; werr != nil {
		return werr
	}
	return lerr
}

// redoBigBatch is the batch size from which a commit syncs Badger's write-ahead files rather
// than going through the commit log: a record that big would copy the batch twice more (its
// encoding, the aligned write) and write it to disk a second time, and a few of them fill the
// log, whose checkpoint syncs Badger's files anyway (a CDC copy's epochs: tens of MB each).
const redoBigBatch = redoMaxSize / 4

// parallelWriteEntries is the size of a batch from which Badger takes it
// beside the commit log's sync (writeDurably) rather than before it.
const parallelWriteEntries = 256

// hasBigValue reports whether b holds a value Badger puts in the value log.
func (s *Store) hasBigValue(b *storage.Batch) bool {
	for i := 0; i < b.Len(); i++ {
		if _, v, del := b.Entry(i); !del && len(v) >= s.valueThreshold {
			return true
		}
	}
	return false
}

func setEntry(txn *bdg.Txn, b *storage.Batch, i int) error {
	key, value, del := b.Entry(i)
	if del {
		return txn.Delete(key)
	}
	return txn.Set(key, value)
}

// SetMinFreeBytes changes the free space under which Commit fails with storage.ErrDiskFull.
func (s *Store) SetMinFreeBytes(n uint64) { s.minFree.Store(n) }

// CommittedEpoch implements storage.KV.
func (s *Store) CommittedEpoch() uint64 { return s.committed.Load() }

// MaxVersion implements storage.KV.
func (s *Store) MaxVersion() uint64 { return max(s.maxVersion.Load(), s.committed.Load()) }

// SetDiscardEpoch implements storage.KV. Badger applies it at the next Commit, after persisting it, so
// a restart never allows reads below what compaction may already have dropped.
func (s *Store) SetDiscardEpoch(epoch uint64) error {
	if s.isClosed() {
		return fmt.Errorf("badger set discard epoch: %w", storage.ErrClosed)
	}
	if err := s.discard.Set(epoch, s.committed.Load()); err != nil {
		return fmt.Errorf("badger: %w", err)
	}
	return nil
}

// DiscardEpoch implements storage.KV.
func (s *Store) DiscardEpoch() uint64 { return s.discard.Effective() }

// Pin implements storage.KV.
func (s *Store) Pin(epoch uint64) (func(), error) {
	if s.isClosed() {
		return nil, fmt.Errorf("badger pin: %w", storage.ErrClosed)
	}
	release, err := s.discard.Pin(epoch)
	if err != nil {
		return nil, fmt.Errorf("badger: %w", err)
	}
	return release, nil
}

// Sync implements storage.KV.
func (s *Store) Sync() error {
	s.commitMu.Lock() // before closeMu, as in Commit
	defer s.commitMu.Unlock()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closeMu.closed {
		return fmt.Errorf("badger sync: %w", storage.ErrClosed)
	}
	if err := s.applyErrLocked(); err != nil {
		return fmt.Errorf("badger sync %s: %w", s.dir, err)
	}
	if err := s.applyDeferred(); err != nil {
		return fmt.Errorf("badger sync %s: %w", s.dir, err)
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("badger sync %s: %w", s.dir, err)
	}
	if s.wal != nil {
		if err := s.wal.sync(true); err != nil {
			return fmt.Errorf("badger sync %s: %w", s.dir, err)
		}
	}
	return nil
}

// Close implements storage.KV.
func (s *Store) Close() error {
	s.stopValueLogGC() // before commitMu: a collection ends with a Sync
	s.commitMu.Lock()  // before closeMu, as in Commit; waits for a commit in flight
	defer s.commitMu.Unlock()
	var applyErr error
	s.closeMu.RLock()
	if !s.closeMu.closed {
		applyErr = s.applyDeferred() // else the next Open replays them from the commit log
	}
	s.closeMu.RUnlock()
	if applyErr != nil {
		slog.Default().Warn("close: deferred commits left to the commit log", "dir", s.dir, "err", applyErr)
	}
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closeMu.closed {
		return nil
	}
	s.closeMu.closed = true
	s.iters.Lock()
	open := make([]*iter, 0, len(s.iters.open))
	for it := range s.iters.open {
		open = append(open, it)
	}
	clear(s.iters.open)
	s.iters.Unlock()
	for _, it := range open {
		it.mu.Lock()
		it.release()
		it.mu.Unlock()
	}
	if s.wal != nil {
		s.wal.close()
	}
	if s.redo != nil {
		_ = s.redo.close() // every record is in Badger, which Close syncs
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close badger at %s: %w", s.dir, err)
	}
	return nil
}

func (s *Store) isClosed() bool {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	return s.closeMu.closed
}

// checkReadLocked checks an epoch for reading; the caller holds closeMu shared.
func (s *Store) checkReadLocked(epoch uint64) error {
	if s.closeMu.closed {
		return storage.ErrClosed
	}
	return s.staged.CheckRead(&s.discard, epoch, s.committed.Load())
}

// Get implements storage.KV.
func (s *Store) Get(_ context.Context, key []byte, epoch uint64, dst []byte) ([]byte, bool, error) {
	if err := s.waitStaging(epoch); err != nil {
		return dst, false, fmt.Errorf("badger get: %w", err)
	}
	if epoch <= s.committed.Load() {
		// The deferred commits answer for their keys (they are newer than any write still
		// applying); Badger holds every other write, once those are in.
		if v, ok, found, err := s.deferredGet(key, epoch, dst); err != nil || found {
			if err != nil {
				return dst, false, fmt.Errorf("badger get: %w", err)
			}
			return v, ok, nil
		}
	} else if err := s.applyDeferredFor(epoch); err != nil {
		return dst, false, fmt.Errorf("badger get: %w", err)
	}
	if err := s.waitApplying(epoch); err != nil {
		return dst, false, fmt.Errorf("badger get: %w", err)
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.checkReadLocked(epoch); err != nil {
		return dst, false, fmt.Errorf("badger get: %w", err)
	}
	txn := s.db.NewTransactionAt(epoch, false)
	defer txn.Discard()
	item, err := txn.Get(key)
	if errors.Is(err, bdg.ErrKeyNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, fmt.Errorf("badger get %x at %d: %w", key, epoch, err)
	}
	tail := dst[len(dst):]
	v, err := item.ValueCopy(tail)
	if err != nil {
		return dst, false, fmt.Errorf("badger get value of %x at %d: %w", key, epoch, err)
	}
	if len(v) <= cap(tail) {
		return dst[:len(dst)+len(v)], true, nil // copied in place
	}
	return append(dst, v...), true, nil
}

// Scan implements storage.KV.
func (s *Store) Scan(_ context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	return s.newIter(lower, upper, epoch, false, false, 0)
}

// ReverseScan implements storage.KV.
func (s *Store) ReverseScan(_ context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	return s.newIter(lower, upper, epoch, true, false, 0)
}

// ChangedKeys implements storage.KV with an AllVersions iterator reading at until with SinceTs since.
func (s *Store) ChangedKeys(_ context.Context, lower, upper []byte, since, until uint64) (storage.ChangeIterator, error) {
	if since > until {
		return nil, fmt.Errorf("badger changed keys: since %d above until %d", since, until)
	}
	it, err := s.newIter(lower, upper, until, false, true, since)
	if err != nil {
		return nil, err
	}
	return &changeIter{iter: it}, nil
}

func (s *Store) newIter(lower, upper []byte, epoch uint64, reverse, changes bool, since uint64) (*iter, error) {
	if err := s.waitStaging(epoch); err != nil {
		return nil, fmt.Errorf("badger scan: %w", err)
	}
	if err := s.applyDeferredFor(epoch); err != nil {
		return nil, fmt.Errorf("badger scan: %w", err)
	}
	if err := s.waitApplying(epoch); err != nil {
		return nil, fmt.Errorf("badger scan: %w", err)
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.checkReadLocked(epoch); err != nil {
		return nil, fmt.Errorf("badger scan: %w", err)
	}
	if changes {
		if err := s.checkReadLocked(since); err != nil {
			return nil, fmt.Errorf("badger changed keys: %w", err)
		}
	}
	upper = storage.ClampUpper(upper)
	it := &iter{
		s:       s,
		lower:   bytes.Clone(lower),
		upper:   bytes.Clone(upper),
		reverse: reverse,
		changes: changes,
	}
	it.txn = s.db.NewTransactionAt(epoch, false)
	var prefix []byte
	if reverse {
		// A reverse scan starts at upper, so its Prefix (which Valid checks)
		// must hold upper too.
		prefix = commonPrefix(lower, upper)
	} else {
		prefix = rangePrefix(lower, upper)
	}
	opts := bdg.IteratorOptions{
		Reverse:     reverse,
		AllVersions: it.changes,
		SinceTs:     since,
		Prefix:      prefix,
	}
	it.it = it.txn.NewIterator(opts)
	s.iters.Lock()
	s.iters.open[it] = struct{}{}
	s.iters.Unlock()
	return it, nil
}

func commonPrefix(a, b []byte) []byte {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return bytes.Clone(a[:n])
}

// rangePrefix returns the longest prefix of lower that every key in [lower,
// upper) has. Badger's forward iterator stops at the first key without its
// Prefix; a shorter one would have it skip deleted keys and newer versions
// beyond the range (a vnode scan: every later vnode of the table) before it
// stops. (Its reverse iterator ignores Prefix: see Table.learnTop in state.)
func rangePrefix(lower, upper []byte) []byte {
	for n := len(lower); n > 0; n-- {
		if atMostPrefixEnd(upper, lower[:n]) {
			return bytes.Clone(lower[:n])
		}
	}
	return nil
}

// atMostPrefixEnd reports whether upper <= codec.PrefixEnd(p) (no end, when
// p is all 0xff: true): then every key in [p, upper) starts with p.
func atMostPrefixEnd(upper, p []byte) bool {
	i := len(p) - 1
	for i >= 0 && p[i] == 0xff {
		i--
	}
	if i < 0 {
		return true
	}
	// The end is p[:i] followed by p[i]+1.
	if c := bytes.Compare(upper[:min(i, len(upper))], p[:i]); c != 0 || len(upper) <= i {
		return c <= 0
	}
	if upper[i] != p[i]+1 {
		return upper[i] < p[i]+1
	}
	return len(upper) == i+1
}

// iter is a Badger iterator bounded to [lower, upper).
type iter struct {
	s            *Store
	txn          *bdg.Txn
	it           *bdg.Iterator
	lower, upper []byte
	reverse      bool
	changes      bool // AllVersions listing for ChangedKeys

	// mu guards the Badger iterator against Store.Close, which releases every
	// open iterator. Each iterator has its own: parallel scans share no lock.
	mu sync.Mutex

	started  bool
	seeked   bool // Seek positioned the Badger iterator: the next Next reads where it is
	key      []byte
	value    []byte
	verEpoch uint64
	deleted  bool
	err      error
	closed   bool
}

// release closes the Badger iterator and transaction (once); the caller
// holds it.mu.
func (it *iter) release() {
	if it.it != nil {
		it.it.Close()
		it.txn.Discard()
		it.it, it.txn = nil, nil
	}
}

// position moves the Badger iterator to the first candidate, or past the current key.
func (it *iter) position() {
	if it.seeked {
		it.seeked = false
		return
	}
	if !it.started {
		it.started = true
		switch {
		case it.reverse:
			it.it.Seek(it.upper)
			if it.it.Valid() && bytes.Compare(it.it.Item().Key(), it.upper) >= 0 {
				it.it.Next()
			}
		case it.lower != nil:
			it.it.Seek(it.lower)
		default:
			it.it.Rewind()
		}
		return
	}
	it.it.Next()
	if it.changes {
		// Skip older versions of the current key.
		for it.it.Valid() && bytes.Equal(it.it.Item().Key(), it.key) {
			it.it.Next()
		}
	}
}

func (it *iter) Next() error {
	if it.err != nil {
		return it.err
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.it == nil { // released by Store.Close
		it.err = fmt.Errorf("badger iterator: %w", storage.ErrClosed)
		return it.err
	}
	it.position()
	if !it.it.Valid() {
		it.err = io.EOF
		return it.err
	}
	item := it.it.Item()
	k := item.Key()
	if it.reverse {
		if it.lower != nil && bytes.Compare(k, it.lower) < 0 {
			it.err = io.EOF
			return it.err
		}
	} else if bytes.Compare(k, it.upper) >= 0 {
		it.err = io.EOF
		return it.err
	}
	it.key = append(it.key[:0], k...)
	if it.changes {
		it.verEpoch, it.deleted = item.Version(), item.IsDeletedOrExpired()
		it.value = it.value[:0]
		if it.deleted {
			return nil
		}
	}
	v, err := item.ValueCopy(it.value[:0])
	if err != nil {
		it.err = fmt.Errorf("badger read value of %x: %w", k, err)
		return it.err
	}
	it.value = v
	return nil
}

func (it *iter) Key() []byte   { return it.key }
func (it *iter) Value() []byte { return it.value }

// Seek implements storage.Seeker for forward scans.
func (it *iter) Seek(key []byte) error {
	if it.reverse || it.changes {
		return errors.New("badger iterator: Seek on a reverse or change iterator")
	}
	if it.err != nil && it.err != io.EOF {
		return it.err
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.it == nil { // released by Store.Close
		it.err = fmt.Errorf("badger iterator: %w", storage.ErrClosed)
		return it.err
	}
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.err = nil
	it.started, it.seeked = true, true
	it.it.Seek(key)
	return nil
}

func (it *iter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	it.mu.Lock()
	if it.it != nil {
		// Under s.iters: Store.Close then either no longer finds it or waits
		// for the release before it closes Badger.
		it.s.iters.Lock()
		delete(it.s.iters.open, it)
		it.release()
		it.s.iters.Unlock()
	}
	it.mu.Unlock()
	err := it.err
	it.err = fmt.Errorf("badger iterator: %w", storage.ErrClosed)
	if err == io.EOF {
		return nil
	}
	return err
}

type changeIter struct{ *iter }

func (it *changeIter) Epoch() uint64 { return it.verEpoch }
func (it *changeIter) Deleted() bool { return it.deleted }

// slogLogger routes Badger's warnings and errors to slog at Warn, counts
// the info messages that tell of write stalls and slow compactions into
// events, and drops the rest.
type slogLogger struct {
	l      *slog.Logger
	events *badgerEvents
}

func (l slogLogger) Errorf(f string, args ...any) {
	l.l.Warn(strings.TrimSpace(fmt.Sprintf(f, args...)))
}

func (l slogLogger) Warningf(f string, args ...any) {
	l.l.Warn(strings.TrimSpace(fmt.Sprintf(f, args...)))
}

func (l slogLogger) Infof(f string, args ...any) {
	if l.events != nil {
		l.events.note(f, args)
	}
}
func (slogLogger) Debugf(string, ...any) {}

// removeEmptyLogFiles deletes zero-length *.vlog and *.mem files in dir.
func removeEmptyLogFiles(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".vlog") || strings.HasSuffix(name, ".mem")) {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return removed, err
		}
		removed++
	}
	return removed, nil
}
