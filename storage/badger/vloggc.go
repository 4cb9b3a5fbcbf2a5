package badger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	bdg "github.com/dgraph-io/badger/v4"

	"github.com/tributary/tributary/storage"
)

// Values of valueLogThreshold bytes or more go to Badger's value log; the LSM tree keeps a
// pointer to them. A state table's blocks (storage/state: up to 256 rows or 16 KiB, what a
// bulk INSERT or a CDC copy writes) are that big, single rows rarely. In the LSM tree a block
// is written three times more (the memtable's write-ahead file, its arena, the level-0 table)
// and again by every compaction; in the value log once. A 10M-row CDC copy ran at 0.81-1.15M
// rows/s against 0.79-0.84M, with half the page faults; a GROUP BY view's backfill over 10M
// bulk-loaded rows took 1.26-1.47 s against 1.45-1.69 s, with 150 MiB less memory
// (docs/benchmarks.md, "Blocks in the value log").
const valueLogThreshold = 4 << 10

// valueLogFileSize is the size at which Badger starts a new value-log file. Space is
// reclaimed a whole file at a time (collectValueLog), never from the file being written, and
// the store's writes wait while a file is rewritten (runValueLogGC), so files are much smaller
// than Badger's 1 GiB default.
const valueLogFileSize = 16 << 20

// defaultValueLogGCInterval is how often the store looks for value-log files to reclaim.
const defaultValueLogGCInterval = 30 * time.Second

// gcDiscardRatio: a value-log file is rewritten when compactions found at least this share
// of it garbage (Badger's recommendation: a lifetime write amplification of 2).
const gcDiscardRatio = 0.5

// gcMaxRewrites bounds the files one collection rewrites (each rewrite is a burst of writes).
const gcMaxRewrites = 8

// gcLinkExt names the second link a collection gives each value-log file it may remove.
const gcLinkExt = ".gc"

// startValueLogGC runs collectValueLog every interval until Close (interval < 0: never).
func (s *Store) startValueLogGC(interval time.Duration) {
	if interval < 0 {
		return
	}
	if interval == 0 {
		interval = defaultValueLogGCInterval
	}
	s.gc.stop = make(chan struct{})
	s.gc.done = make(chan struct{})
	go func() {
		defer close(s.gc.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.gc.stop:
				return
			case <-t.C:
			}
			if n, err := s.collectValueLog(); err != nil {
				s.logger.Warn("value log collection", "dir", s.dir, "rewritten_files", n, "err", err)
			} else if n > 0 {
				s.logger.Info("value log collected", "dir", s.dir, "rewritten_files", n)
			}
		}
	}()
}

// stopValueLogGC stops the collection loop and waits for a collection in flight.
func (s *Store) stopValueLogGC() {
	s.gc.stopOnce.Do(func() {
		if s.gc.stop != nil {
			close(s.gc.stop)
			<-s.gc.done
		}
	})
}

// collectValueLog reclaims the space of value-log files that are mostly garbage (values of
// deleted or overwritten keys, by the discard statistics Badger's compactions keep): Badger
// writes each file's live values again at the value log's head and removes the file. It
// returns how many files it rewrote.
//
// Badger removes a file right after writing its live values, unsynced: an operating-system
// crash could keep the removal and lose the values. So before each rewrite every file that it
// may remove gets a second link (NNNNNN.vlog.gc), and the links go only after the store is
// synced; Open puts a file back from its link when the file is gone (restoreValueLogs). When
// the moved values did reach the disk, a file put back is garbage that may stay: Badger's
// compactions count no discard for its entries (the rewritten ones have the same key and
// version, and a merge drops such a twin unseen), so at most 16 MiB per rewrite a crash cut.
func (s *Store) collectValueLog() (rewritten int, err error) {
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	links := map[string]bool{}
	for rewritten < gcMaxRewrites {
		if err = s.runValueLogGC(links); err != nil {
			break
		}
		rewritten++
	}
	if errors.Is(err, bdg.ErrNoRewrite) || errors.Is(err, bdg.ErrRejected) || errors.Is(err, errClosedDuringGC) {
		err = nil
	}
	if rewritten > 0 {
		if serr := s.Sync(); serr != nil && !errors.Is(serr, storage.ErrClosed) {
			// The links stay: the next Open puts back whatever the removals took.
			return rewritten, errors.Join(err, fmt.Errorf("value log collection: %w", serr))
		}
	}
	if uerr := unlinkValueLogs(s.dir, links); uerr != nil {
		err = errors.Join(err, uerr)
	}
	if err != nil {
		return rewritten, fmt.Errorf("value log collection in %s: %w", s.dir, err)
	}
	return rewritten, nil
}

// errClosedDuringGC ends a collection that Close overtook.
var errClosedDuringGC = errors.New("store closed")

// runValueLogGC rewrites at most one value-log file, after linking every file it may remove
// (adding the links to links), with the store's writes held (commits, a stage in flight,
// deferred commits a read would apply): so no file becomes removable between the links and
// the rewrite (the newest file, which Badger writes and never removes, changes only with a
// write), and Badger's rewrite, which reads its memtable's newest version unsynchronised with
// its writer (DB.MaxVersion), reads it exactly. A rewrite moves at most half a value-log file
// (valueLogFileSize): 6.4 MB of live values (a 32 MiB file, a fifth live) took 50-110 ms on
// the machine of docs/benchmarks.md, so files are 16 MiB and writes wait under about 100 ms.
func (s *Store) runValueLogGC(links map[string]bool) error {
	s.commitMu.Lock() // lock order as in Commit: commitMu, closeMu, deferMu
	defer s.commitMu.Unlock()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closeMu.closed {
		return errClosedDuringGC
	}
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	if err := linkValueLogs(s.dir, links); err != nil {
		return fmt.Errorf("value log collection in %s: %w", s.dir, err)
	}
	return catchPanic(func() error { return s.db.RunValueLogGC(gcDiscardRatio) })
}

// valueLogFiles lists the value-log files in dir, oldest first.
func valueLogFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if num, ok := strings.CutSuffix(e.Name(), ".vlog"); ok && !e.IsDir() {
			if _, err := strconv.Atoi(num); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names) // zero-padded numbers
	return names, nil
}

// linkValueLogs gives every value-log file but the newest (the one Badger writes, which a
// rewrite never removes) a second link, synced in the directory, unless links has it already,
// and adds the new links to links.
func linkValueLogs(dir string, links map[string]bool) error {
	names, err := valueLogFiles(dir)
	if err != nil || len(names) < 2 {
		return err
	}
	added := false
	for _, name := range names[:len(names)-1] {
		link := filepath.Join(dir, name+gcLinkExt)
		if links[link] {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", link, err)
		}
		if err := os.Link(filepath.Join(dir, name), link); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
		links[link], added = true, true
	}
	if !added {
		return nil
	}
	return syncDir(dir)
}

// unlinkValueLogs removes the links linkValueLogs made.
func unlinkValueLogs(dir string, links map[string]bool) error {
	if len(links) == 0 {
		return nil
	}
	var errs []error
	for link := range links {
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, syncDir(dir))...)
}

// restoreValueLogs, at Open, puts back each value-log file a collection removed before the
// values it moved were synced (its link NNNNNN.vlog.gc outlived it: a crash may have taken
// them), and removes the links of files still there. It returns how many files it put back.
func restoreValueLogs(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	restored, changed := 0, false
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), gcLinkExt)
		if !ok || !strings.HasSuffix(name, ".vlog") {
			continue
		}
		link, file := filepath.Join(dir, e.Name()), filepath.Join(dir, name)
		changed = true
		if exists(file) {
			if err := os.Remove(link); err != nil {
				return restored, fmt.Errorf("remove %s: %w", link, err)
			}
			continue
		}
		if err := os.Rename(link, file); err != nil {
			return restored, fmt.Errorf("restore %s: %w", file, err)
		}
		restored++
	}
	if changed {
		return restored, syncDir(dir)
	}
	return restored, nil
}
