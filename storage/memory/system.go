package memory

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FallbackRAM is what SystemRAM assumes when the machine's memory cannot be
// read (not Linux, or /proc is not mounted).
const FallbackRAM = 4 << 30

// SystemRAM returns the memory the process may use: the smaller of the
// machine's RAM (/proc/meminfo's MemTotal) and the memory limit of its
// cgroup (v2 memory.max or v1 memory.limit_in_bytes, of its own cgroup and
// the ones above it), and says where the figure came from.
func SystemRAM() (int64, string) {
	ram, src := meminfoTotal("/proc/meminfo"), "MemTotal"
	if lim := cgroupLimit("/proc/self/cgroup", "/sys/fs/cgroup"); lim > 0 && (ram == 0 || lim < ram) {
		ram, src = lim, "cgroup"
	}
	if ram <= 0 {
		return FallbackRAM, "fallback"
	}
	return ram, src
}

// DefaultLimit is the memory budget when none is given: three quarters of
// SystemRAM, leaving room for the page cache Badger's tables are read
// through and for memory the budget does not see. It says where the figure
// came from.
func DefaultLimit() (int64, string) {
	ram, src := SystemRAM()
	return ram / 4 * 3, "3/4 of " + src
}

// meminfoTotal returns MemTotal in bytes (0 when unreadable).
func meminfoTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupLimit returns the smallest memory limit of the process's cgroup and
// its ancestors (0: none). selfCgroup is /proc/self/cgroup, root the cgroup
// file system's mount point.
func cgroupLimit(selfCgroup, root string) int64 {
	data, err := os.ReadFile(selfCgroup)
	if err != nil {
		return 0
	}
	best := int64(0)
	take := func(v int64) {
		// v1 reports "no limit" as a huge number rounded to the page size.
		if v > 0 && v < 1<<62 && (best == 0 || v < best) {
			best = v
		}
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(string(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, file = root, "memory.max"
		case hasController(parts[1], "memory"):
			dir, file = filepath.Join(root, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		// The cgroup's own directory and each above it, up to the mount point
		// (a container sees its own cgroup at the root).
		p := filepath.Clean("/" + parts[2])
		for {
			take(readLimit(filepath.Join(dir, p, file)))
			if p == "/" {
				break
			}
			p = filepath.Dir(p)
		}
	}
	return best
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup limit file ("max" or a missing file: 0).
func readLimit(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return v
}
