package file

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tributary/tributary/sql/types"
)

// The file sink writes only under a root directory the operator chooses
// (--file-sink-root): a relative path is resolved inside it, and a path
// that leads out of it, by "..", as an absolute path elsewhere or through a
// symbolic link, is refused (42501). An empty root (the default of the
// package, for tests of the connector alone) confines nothing.
var root struct {
	sync.RWMutex
	dir string
}

// SetRoot sets the directory file sinks write under ("" for none).
func SetRoot(dir string) {
	root.Lock()
	defer root.Unlock()
	root.dir = dir
}

// Root returns the directory file sinks write under ("": anywhere).
func Root() string {
	root.RLock()
	defer root.RUnlock()
	return root.dir
}

// resolve returns the directory path names under the root, or an error
// when it leads out of it.
func resolve(path string) (string, error) {
	dir := Root()
	if dir == "" {
		return path, nil
	}
	base, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	p = filepath.Clean(p)
	outside := func(real, realBase string) bool {
		rel, err := filepath.Rel(realBase, real)
		return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	refuse := func() error {
		return types.Errorf(types.ErrInsufficientPrivilege, "file sink path %q is outside the file sink root %q (--file-sink-root)", path, base)
	}
	if outside(p, base) {
		return "", refuse()
	}
	// Symbolic links: the deepest existing part of the path, resolved, must
	// still be under the (resolved) root.
	realBase, err := filepath.EvalSymlinks(base)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(base, 0o750); err != nil {
			return "", err
		}
		realBase, err = filepath.EvalSymlinks(base)
	}
	if err != nil {
		return "", err
	}
	existing := p
	for {
		real, err := filepath.EvalSymlinks(existing)
		if err == nil {
			if outside(real, realBase) {
				return "", refuse()
			}
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	return p, nil
}
