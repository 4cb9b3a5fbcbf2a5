package badger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	bdg "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"

	"github.com/tributary/tributary/storage"
)

// DamageError reports a data directory Open refuses to use: a file is missing or damaged. It
// wraps storage.ErrDamaged.
type DamageError struct {
	File   string // the path of the missing or damaged file
	Reason string // what is wrong with it, one line
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("data dir damaged: %s: %s", e.File, e.Reason)
}

// Unwrap makes errors.Is(err, storage.ErrDamaged) true.
func (e *DamageError) Unwrap() error { return storage.ErrDamaged }

func damaged(file, format string, args ...any) *DamageError {
	return &DamageError{File: file, Reason: oneLine(fmt.Sprintf(format, args...))}
}

// oneLine joins the lines of a message (Badger's errors may carry several).
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// oneLineError prints a wrapped error on one line.
type oneLineError struct{ err error }

func (e oneLineError) Error() string { return oneLine(e.err.Error()) }
func (e oneLineError) Unwrap() error { return e.err }

// checkDir verifies a data directory before Badger opens it, because Badger itself starts empty
// over a missing MANIFEST (and deletes every table file it no longer finds referenced), skips a
// table that fails its checksum, panics on a truncated one, and truncates a write-ahead file at
// the first damaged entry, silently dropping everything after it. It checks:
//   - MANIFEST is present whenever table or write-ahead files are, and reads to its end;
//   - every table file the MANIFEST references exists and passes its checksums (every block and
//     the index are read);
//   - every write-ahead file (*.mem, and the last *.vlog, the ones Badger replays) reads to the
//     end of its last complete write; what follows is zeros, or the incomplete last write a
//     crash leaves, never readable entries behind damaged bytes.
//
// A damaged write-ahead tail is refused unless acceptTail is set; then the file is truncated where
// its last complete write ends (the dropped bytes kept beside it) and the loss logged. An
// incomplete last write is truncated likewise, as Badger would. Everything else is refused, and
// then checkDir has written nothing.
func checkDir(dir string, acceptTail bool, warn func(msg string, args ...any)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read data dir %s: %w", dir, err)
	}
	var ssts, mems, vlogs []string
	hasManifest := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
		case name == bdg.ManifestFilename:
			hasManifest = true
		case strings.HasSuffix(name, ".sst"):
			ssts = append(ssts, name)
		case strings.HasSuffix(name, ".mem"):
			mems = append(mems, name)
		case strings.HasSuffix(name, ".vlog"):
			vlogs = append(vlogs, name)
		}
	}
	manifestPath := filepath.Join(dir, bdg.ManifestFilename)
	if !hasManifest {
		if n := len(ssts) + len(mems) + len(vlogs); n > 0 {
			return damaged(manifestPath, "missing, but the directory holds %d table and write-ahead files "+
				"(Badger would start an empty database and delete them); restore the data directory from a backup", n)
		}
		return nil // a new database
	}
	mf, err := readManifest(manifestPath)
	if err != nil {
		return err
	}
	if err := checkTables(dir, mf); err != nil {
		return err
	}
	for _, name := range ssts {
		if id, ok := table.ParseFileID(name); ok {
			if _, listed := mf.Tables[id]; !listed {
				// Badger removes it at open: a table an interrupted compaction or flush wrote
				// before the MANIFEST named it. Say so, in case it is not that.
				warn("a table file the MANIFEST does not name will be removed (left by an interrupted compaction)",
					"file", filepath.Join(dir, name))
			}
		}
	}
	// Badger replays every memtable file and the value log file with the highest id.
	slices.Sort(mems) // names are zero-padded ids
	logs := mems
	if len(vlogs) > 0 {
		slices.Sort(vlogs)
		logs = append(logs, vlogs[len(vlogs)-1])
	}
	// Scan every file before changing any, so a refusal leaves the directory as it was.
	type tail struct {
		path string
		r    logScan
	}
	var tails []tail
	for _, name := range logs {
		path := filepath.Join(dir, name)
		r, err := scanLogFile(path)
		if err != nil {
			return err
		}
		if r.damaged && !acceptTail {
			return damaged(path, "unreadable bytes at offset %d of %d with readable entries after them: "+
				"the writes from offset %d on would be lost; restore from a backup, or start with "+
				"--accept-damaged-tail to drop them", r.stop, r.size, r.validEnd)
		}
		if !r.clean() {
			tails = append(tails, tail{path, r})
		}
	}
	for _, t := range tails {
		kept, err := dropTail(t.path, t.r, t.r.damaged)
		if err != nil {
			return err
		}
		if t.r.damaged {
			warn("accepting the loss of a damaged write-ahead tail (--accept-damaged-tail)", "file", t.path,
				"from_offset", t.r.validEnd, "bytes_dropped", t.r.dataEnd-t.r.validEnd, "dropped_bytes_kept_in", kept)
		} else {
			warn("dropping an incomplete last write (never acknowledged) left by a crash", "file", t.path,
				"from_offset", t.r.validEnd, "bytes_dropped", t.r.dataEnd-t.r.validEnd)
		}
	}
	return nil
}

// dropTail truncates a write-ahead file where its last complete write ends, as Badger's replay
// would (Badger fails instead on some damage, such as a length that overflows), keeping the
// dropped bytes in path.dropped-at-OFFSET first when keep is set. It returns that file's path.
func dropTail(path string, r logScan, keep bool) (string, error) {
	kept := ""
	if keep {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("read damaged tail of %s: %w", path, err)
		}
		defer f.Close()
		tail := make([]byte, r.dataEnd-r.validEnd)
		if _, err := f.ReadAt(tail, r.validEnd); err != nil {
			return "", fmt.Errorf("read damaged tail of %s: %w", path, err)
		}
		kept = fmt.Sprintf("%s.dropped-at-%d", path, r.validEnd)
		if err := os.WriteFile(kept, tail, 0o600); err != nil {
			return "", fmt.Errorf("keep damaged tail of %s: %w", path, err)
		}
		if err := syncFileAt(kept); err != nil {
			return "", err
		}
	}
	if err := os.Truncate(path, r.validEnd); err != nil {
		return "", fmt.Errorf("drop the tail of %s: %w", path, err)
	}
	if err := syncFileAt(path); err != nil {
		return "", err
	}
	return kept, nil
}

func syncFileAt(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open %s to sync: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// readManifest replays MANIFEST and fails unless all of it reads (Badger would silently
// truncate an unreadable tail and forget the tables it names).
func readManifest(path string) (bdg.Manifest, error) {
	fp, err := os.Open(path)
	if err != nil {
		return bdg.Manifest{}, damaged(path, "cannot open: %v", err)
	}
	defer fp.Close()
	info, err := fp.Stat()
	if err != nil {
		return bdg.Manifest{}, damaged(path, "cannot stat: %v", err)
	}
	var mf bdg.Manifest
	var end int64
	err = catchPanic(func() error {
		var err error
		mf, end, err = bdg.ReplayManifestFile(fp, 0, bdg.DefaultOptions("").WithLogger(nil))
		return err
	})
	if err != nil {
		return mf, damaged(path, "unreadable: %v; restore the data directory from a backup", err)
	}
	if end != info.Size() {
		return mf, damaged(path, "unreadable from byte %d of %d (a damaged or incomplete change record); "+
			"restore the data directory from a backup", end, info.Size())
	}
	return mf, nil
}

// checkTables checks that every table the manifest references exists and passes its checksums,
// a few tables at a time.
func checkTables(dir string, mf bdg.Manifest) error {
	ids := make([]uint64, 0, len(mf.Tables))
	for id := range mf.Tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		path := table.NewFilename(id, dir)
		if _, err := os.Stat(path); err != nil {
			return damaged(path, "table file referenced by MANIFEST is missing (%v); restore the data directory from a backup", err)
		}
	}
	var (
		mu    sync.Mutex
		first *DamageError
		next  int
		wg    sync.WaitGroup
	)
	for range min(len(ids), max(1, runtime.GOMAXPROCS(0))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= len(ids) || first != nil {
					mu.Unlock()
					return
				}
				id := ids[next]
				next++
				mu.Unlock()
				path := table.NewFilename(id, dir)
				if err := verifyTable(path, mf.Tables[id].Compression); err != nil {
					mu.Lock()
					if first == nil || first.File > path {
						first = damaged(path, "table file fails verification: %v; restore the data directory from a backup", err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return nil
}

// verifyTable opens a table file read-only and reads every block with checksums on. Badger panics
// on some damage (a truncated file); the panic becomes the error.
func verifyTable(path string, compression options.CompressionType) error {
	f, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return fmt.Errorf("open: %w", err)
	}
	info, err := f.Fd.Stat()
	if err != nil {
		_ = f.Close(-1)
		return fmt.Errorf("stat: %w", err)
	}
	if info.Size() < 16 {
		_ = f.Close(-1)
		return fmt.Errorf("only %d bytes", info.Size())
	}
	defer func() {
		// OpenTable closes the file on some failures (then Stat fails), not on others, nor
		// when it panics; success leaves it open. Never unmap twice.
		if _, err := f.Fd.Stat(); !errors.Is(err, os.ErrClosed) {
			_ = f.Close(-1)
		}
	}()
	return catchPanic(func() error {
		// The table is dropped without t.DecrRef: at zero references it deletes the file.
		// A block that fails to decode (compressed data damaged) makes VerifyChecksum panic
		// (badger v4.9.6 table.go:711 formats a nil block); catchPanic reports it.
		_, err := table.OpenTable(f, table.Options{
			ReadOnly:    true,
			ChkMode:     options.OnTableAndBlockRead,
			Compression: compression,
			BlockSize:   4 << 10,
		})
		return err
	})
}

// catchPanic runs fn and turns a panic (Badger's reaction to some damage) into an error.
func catchPanic(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable (Badger failed on it: %v)", r)
		}
	}()
	return fn()
}
