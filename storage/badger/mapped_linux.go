package badger

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// Badger maps every table file (and value-log file) into the process (MAP_SHARED) and reads its
// blocks there, so each page of a table a read touches stays in the process's resident memory
// (RssFile) until the kernel needs it back: with gigabytes of state and no memory pressure on the
// machine, that was most of a stateful query's RSS (Nexmark q7 at 10M events: 1.5-2 GB of 3.7
// GB). MappedTables
// measures those pages and TrimMapped hands them back with madvise(MADV_PAGEOUT), a hint that
// never destroys data: the addresses come from a listing of the process's mappings that a
// compaction may make stale (a table unmapped, its range mapped again by someone else), and
// MADV_DONTNEED on a range that became private memory would zero it, where MADV_PAGEOUT at worst
// swaps a few pages out.

// mapping is one table file mapped into the process.
type mapping struct {
	start, end uintptr
	resident   int64 // bytes
}

// MappedTables returns the bytes of the store's table files resident in the process's memory.
func (s *Store) MappedTables() (int64, error) {
	ms, err := s.tableMappings()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, m := range ms {
		n += m.resident
	}
	return n, nil
}

// TrimMapped keeps the store's table files resident in the process under limit bytes: when more
// are, it hands back their pages, the most resident files first, until at most seven eighths
// of the limit stay: a little below the limit, so that a read set just over it is not trimmed
// every time, but not much, since every page handed back that a read wants again costs a fault
// and a read from the disk (trimming to half the limit cost Nexmark q18 a tenth of its CPU).
// It returns the resident bytes before and after (before less what it handed back: measuring
// again would walk the page tables a second time); while all the process's file-backed resident memory is within the limit it measures no further
// (listing the mappings costs a walk of their page tables) and returns that figure for both. On a
// kernel without MADV_PAGEOUT (before Linux 5.4) it returns the error once and trims nothing after.
func (s *Store) TrimMapped(limit int64) (before, after int64, err error) {
	if all, err := residentFileBytes(); err == nil && (all <= limit || s.noPageout.Load()) {
		return all, all, nil
	}
	ms, err := s.tableMappings()
	if err != nil {
		return 0, 0, err
	}
	for _, m := range ms {
		before += m.resident
	}
	after = before
	if before <= limit {
		return before, after, nil
	}
	target := limit - limit/8
	slices.SortFunc(ms, func(a, b mapping) int { return cmp.Compare(b.resident, a.resident) })
	for _, m := range ms {
		if after <= target {
			break
		}
		if m.resident == 0 {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT); e != 0 {
			if e == unix.ENOMEM {
				continue // unmapped since the listing (a compaction dropped the table)
			}
			if e == unix.EINVAL {
				s.noPageout.Store(true) // an old kernel: said once, then nothing is trimmed
			}
			return before, after, fmt.Errorf("trim %s's mapped tables: madvise: %w", s.dir, e)
		}
		after -= m.resident
	}
	return before, after, nil
}

// residentFileBytes returns the process's file-backed resident memory (RssFile).
func residentFileBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("RssFile:")); ok {
			return parseKB(v)
		}
	}
	return 0, errors.New("no RssFile in /proc/self/status")
}

// parseKB parses a /proc size ("  1234 kB") into bytes.
func parseKB(v []byte) (int64, error) {
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("a size %q: %w", bytes.TrimSpace(v), err)
	}
	return kb << 10, nil
}

// tableMappings lists the store's table files (*.sst in its directory) and value-log files
// (*.vlog: a table's blocks, vloggc.go) mapped into the process, from /proc/self/smaps.
func (s *Store) tableMappings() ([]mapping, error) {
	dir, err := filepath.Abs(s.dir)
	if err != nil {
		return nil, fmt.Errorf("mapped tables of %s: %w", s.dir, err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("mapped tables of %s: %w", s.dir, err)
	}
	defer f.Close()
	return parseSmaps(bufio.NewScanner(f), dir)
}

// parseSmaps returns the mappings of table and value-log files in dir that sc (smaps' lines)
// lists, each with its resident bytes.
func parseSmaps(sc *bufio.Scanner, dir string) ([]mapping, error) {
	var out []mapping
	cur := -1 // index in out of the mapping whose fields follow, or -1
	for sc.Scan() {
		line := sc.Bytes()
		if rss, ok := bytes.CutPrefix(line, []byte("Rss:")); ok {
			if cur >= 0 {
				n, err := parseKB(rss)
				if err != nil {
					return nil, fmt.Errorf("smaps: Rss: %w", err)
				}
				out[cur].resident = n
			}
			continue
		}
		// A mapping's line: "start-end perms offset dev inode [path]"; fields' lines start with a
		// name and a colon.
		fields := bytes.Fields(line)
		if len(fields) < 5 || bytes.HasSuffix(fields[0], []byte(":")) {
			continue
		}
		lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok {
			continue
		}
		cur = -1
		if len(fields) < 6 || len(fields[1]) != 4 || fields[1][3] != 's' {
			continue // not a shared file mapping
		}
		path := string(bytes.Join(fields[5:], []byte(" ")))
		if ext := filepath.Ext(path); filepath.Dir(path) != dir || (ext != ".sst" && ext != ".vlog") {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("smaps: mapping %q: %w", fields[0], err)
		}
		out = append(out, mapping{start: uintptr(start), end: uintptr(end)})
		cur = len(out) - 1
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("smaps: %w", err)
	}
	return out, nil
}
