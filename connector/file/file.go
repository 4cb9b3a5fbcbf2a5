package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// Name is the connector option value.
const Name = "file"

// Config is a file sink's options.
type Config struct {
	// Path is the directory the files go to (created if missing).
	Path string
	// MaxBytes rotates an epoch's output into parts of at most about this
	// size (file.max_bytes, default 64 MiB).
	MaxBytes int
}

// Parse reads the file sink options of props (keys lower-case).
func Parse(props map[string]string) (Config, error) {
	cfg := Config{Path: props["path"], MaxBytes: 64 << 20}
	if strings.TrimSpace(cfg.Path) == "" {
		return cfg, types.Errorf(types.ErrInvalidParameter, "a file sink needs path = '<directory>'")
	}
	p, err := resolve(cfg.Path)
	if err != nil {
		return cfg, err
	}
	cfg.Path = p
	for k, v := range props {
		switch k {
		case "connector", "type", "primary_key", "force_append_only", "path":
		case "file.max_bytes":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n <= 0 {
				return cfg, types.Errorf(types.ErrInvalidParameter, "file.max_bytes must be a positive integer, got %q", v)
			}
			cfg.MaxBytes = n
		default:
			return cfg, types.Errorf(types.ErrInvalidParameter, "unknown file sink option %q (known: path, file.max_bytes)", k)
		}
	}
	return cfg, nil
}

// Sink writes each epoch's changes as JSON lines: one object per row with
// the columns by name and "__op" (insert, delete, update_delete,
// update_insert). Commit writes <path>/part-<writer>-<epoch>-<n>.jsonl
// through a temporary file and a rename.
type Sink struct {
	cfg    Config
	target connector.SinkTarget
	parts  [][]byte // the epoch's output, in parts of about MaxBytes
	row    []types.Datum
	names  [][]byte // the columns' JSON keys, with quotes and colon
	text   []byte   // scratch for values' text forms
}

// Open returns a file sink for target, creating the directory.
func Open(cfg Config, target connector.SinkTarget) (*Sink, error) {
	if _, err := resolve(cfg.Path); err != nil { // again: a link may have appeared since
		return nil, fmt.Errorf("file sink %s: %w", target.Sink, err)
	}
	if err := os.MkdirAll(cfg.Path, 0o750); err != nil {
		return nil, fmt.Errorf("file sink %s: %w", target.Sink, err)
	}
	s := &Sink{cfg: cfg, target: target}
	for _, c := range target.Columns {
		s.names = append(s.names, append(connector.AppendJSONString(nil, c.Name), ':'))
	}
	return s, nil
}

var opNames = [...]string{types.OpInsert: "insert", types.OpDelete: "delete", types.OpUpdateDelete: "update_delete", types.OpUpdateInsert: "update_insert"}

// Write implements connector.Sink.
func (s *Sink) Write(_ context.Context, c *types.Chunk) error {
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		if len(s.parts) == 0 || len(s.parts[len(s.parts)-1]) >= s.cfg.MaxBytes {
			s.parts = append(s.parts, nil)
		}
		b := s.parts[len(s.parts)-1]
		s.row = c.Row(i, s.row[:0])
		b = append(b, `{"__op":"`...)
		b = append(b, opNames[c.Op(i)]...)
		b = append(b, '"')
		for j, col := range s.target.Columns {
			if col.Hidden {
				continue
			}
			b = append(b, ',')
			b = append(b, s.names[j]...)
			b, s.text = connector.AppendJSONValue(b, s.text, col.Type, &s.row[j])
		}
		b = append(b, "}\n"...)
		s.parts[len(s.parts)-1] = b
	}
	return nil
}

// PartName is the file name of part n of a writer's epoch.
func PartName(writer int, epoch uint64, n int) string {
	return fmt.Sprintf("part-%04d-%020d-%04d.jsonl", writer, epoch, n)
}

// Commit implements connector.Sink: the epoch's parts are written and
// renamed into place; an epoch without rows writes nothing.
func (s *Sink) Commit(_ context.Context, epoch uint64) error {
	for n, p := range s.parts {
		final := filepath.Join(s.cfg.Path, PartName(s.target.Writer, epoch, n))
		tmp := final + ".tmp"
		if err := os.WriteFile(tmp, p, 0o640); err != nil {
			return fmt.Errorf("file sink %s: epoch %d: %w", s.target.Sink, epoch, err)
		}
		if err := os.Rename(tmp, final); err != nil {
			return fmt.Errorf("file sink %s: epoch %d: %w", s.target.Sink, epoch, err)
		}
	}
	s.parts = s.parts[:0]
	return nil
}

// Close implements connector.Sink.
func (s *Sink) Close() error { return nil }
