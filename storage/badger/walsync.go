package badger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// walSync makes each Commit durable with one sync of the write-ahead file it wrote.
//
// Badger's own SyncWrites syncs two files per write (the value log, even when the write put
// nothing in it, and the memtable's write-ahead file); each sync is a disk cache flush, the
// whole cost of a lone client's durable INSERT. So the store runs Badger with SyncWrites off
// and, after each commit, fdatasyncs what the commit wrote: the current memtable file
// (NNNNN.mem), preceded by any it filled on the way (Badger numbers memtable files one after
// another and does not sync a filled one before moving on), and, only when the batch held
// values big enough to go to the value log, the value log files likewise (NNNNNN.vlog). Writes
// through Badger's shared mappings are in the page cache, so fdatasync on our own descriptor
// writes them out as msync would. A file first seen is made durable in the directory too.
//
// Only Commit and Open's roll-back write, under the store's commit lock, which also guards
// walSync.
type walSync struct {
	dir   string
	mem   logSeq
	vlog  logSeq
	syncs int // file syncs done (for tests)
}

// logSeq follows one numbered series of log files.
type logSeq struct {
	ext    string // ".mem" or ".vlog"
	digits int    // zero padding of the number
	fid    int    // the newest file known (0: none yet)
	f      *os.File
}

func (q *logSeq) path(dir string, fid int) string {
	return filepath.Join(dir, fmt.Sprintf("%0*d%s", q.digits, fid, q.ext))
}

func newWALSync(dir string) (*walSync, error) {
	w := &walSync{dir: dir, mem: logSeq{ext: ".mem", digits: 5}, vlog: logSeq{ext: ".vlog", digits: 6}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		for _, q := range []*logSeq{&w.mem, &w.vlog} {
			if num, ok := strings.CutSuffix(e.Name(), q.ext); ok {
				if fid, err := strconv.Atoi(num); err == nil && fid > q.fid {
					q.fid = fid
				}
			}
		}
	}
	return w, nil
}

// sync makes every write so far durable: the memtable files, and the value log files too when
// vlog is set (the last commit put values in the value log).
func (w *walSync) sync(vlog bool) error {
	if err := w.syncSeq(&w.mem); err != nil {
		return err
	}
	if vlog {
		return w.syncSeq(&w.vlog)
	}
	return nil
}

func (w *walSync) syncSeq(q *logSeq) error {
	created := false
	for {
		if q.f == nil {
			if q.fid == 0 {
				q.fid = 1
			}
			f, err := os.Open(q.path(w.dir, q.fid))
			if errors.Is(err, os.ErrNotExist) {
				// Already flushed into a table file (Badger syncs those) and removed:
				// go on with the next file that exists (several may have gone by
				// since the last sync when the commit log covered the commits).
				next, ok, lerr := w.nextExisting(q, q.fid)
				if lerr != nil {
					return lerr
				}
				if ok {
					q.fid = next
					created = true
					continue
				}
			}
			if err != nil {
				return fmt.Errorf("open write-ahead file to sync: %w", err)
			}
			q.f = f
		}
		if !exists(q.path(w.dir, q.fid+1)) {
			break
		}
		// Badger moved on to the next file: finish this one first.
		if err := w.syncFile(q.f); err != nil {
			return err
		}
		_ = q.f.Close() // read-only descriptor: nothing to lose
		q.f, q.fid, created = nil, q.fid+1, true
	}
	if err := w.syncFile(q.f); err != nil {
		return err
	}
	if created {
		return syncDir(w.dir)
	}
	return nil
}

// nextExisting returns the lowest file number above fid of q's series in the directory.
func (w *walSync) nextExisting(q *logSeq, fid int) (int, bool, error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return 0, false, fmt.Errorf("list %s: %w", w.dir, err)
	}
	best := 0
	for _, e := range entries {
		if num, ok := strings.CutSuffix(e.Name(), q.ext); ok {
			if n, err := strconv.Atoi(num); err == nil && n > fid && (best == 0 || n < best) {
				best = n
			}
		}
	}
	return best, best > 0, nil
}

func (w *walSync) syncFile(f *os.File) error {
	w.syncs++
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	return nil
}

func (w *walSync) close() {
	for _, q := range []*logSeq{&w.mem, &w.vlog} {
		if q.f != nil {
			_ = q.f.Close() // read-only descriptor
			q.f = nil
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s to sync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
