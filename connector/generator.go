package connector

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/tributary/tributary/sql/types"
)

// Generator makes a generated source's rows: the rows of split s are a pure
// function of s and their position (how many of its rows came before), so a
// split resumes exactly from its committed offset.
type Generator interface {
	// SplitCount is the number of splits.
	SplitCount() int
	// SplitRows is the number of rows split produces in all (-1: unbounded).
	SplitRows(split int) int64
	// Fill appends up to limit rows of split, from position off, as Insert
	// rows to dst and returns how many: fewer than limit only when the
	// split is exhausted.
	Fill(dst *types.Chunk, split int, off int64, limit int) int
}

// GeneratorSource is a Source over a Generator (datagen, nexmark). Its
// splits are named "0", "1", ...; an offset is the next position, 8 bytes
// big-endian.
type GeneratorSource struct {
	Gen   Generator
	Rate  int64 // DefaultRate
	Total int64 // TotalRows
	Chunk int   // ChunkRows
}

func (g *GeneratorSource) Check(context.Context) error { return nil }
func (g *GeneratorSource) DefaultRate() int64          { return g.Rate }
func (g *GeneratorSource) TotalRows() int64            { return g.Total }
func (g *GeneratorSource) ChunkRows() int              { return g.Chunk }
func (g *GeneratorSource) Upsert() bool                { return false }

func (g *GeneratorSource) Enumerator(context.Context) (SplitEnumerator, error) {
	return genEnumerator{g}, nil
}

// Reader reads the given splits round robin.
func (g *GeneratorSource) Reader(_ context.Context, splits []SplitOffset, _ ReaderEnv) (SplitReader, error) {
	r := &genReader{gen: g.Gen, ready: make(chan struct{})}
	close(r.ready)
	for _, s := range splits {
		i, err := strconv.Atoi(s.Split)
		if err != nil || i < 0 || i >= g.Gen.SplitCount() {
			return nil, fmt.Errorf("split %q: the source has splits 0..%d", s.Split, g.Gen.SplitCount()-1)
		}
		off, err := DecodePosition(s.Offset)
		if err != nil {
			return nil, fmt.Errorf("split %q: %w", s.Split, err)
		}
		r.splits = append(r.splits, i)
		r.pos = append(r.pos, off)
	}
	return r, nil
}

type genEnumerator struct{ g *GeneratorSource }

func (e genEnumerator) Splits(context.Context) ([]string, error) {
	out := make([]string, e.g.Gen.SplitCount())
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out, nil
}

func (e genEnumerator) Bounds(_ context.Context, splits []string) (map[string]SplitBounds, error) {
	out := map[string]SplitBounds{}
	for _, s := range splits {
		i, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("split %q: not a generator split", s)
		}
		end := e.g.Gen.SplitRows(i)
		if end < 0 {
			end = 1<<63 - 1
		}
		out[s] = SplitBounds{Start: EncodePosition(0), End: end}
	}
	return out, nil
}

func (genEnumerator) Close() error { return nil }

type genReader struct {
	gen    Generator
	splits []int
	pos    []int64
	next   int // the split to read next (round robin)
	ready  chan struct{}
}

func (r *genReader) Read(dst *types.Chunk, limit int) (ReadResult, error) {
	for i := 0; i < len(r.splits); i++ {
		k := (r.next + i) % len(r.splits)
		if n := r.gen.Fill(dst, r.splits[k], r.pos[k], limit); n > 0 {
			r.pos[k] += int64(n)
			r.next = k + 1
			return ReadResult{Split: strconv.Itoa(r.splits[k]), Rows: n, Offset: EncodePosition(r.pos[k]), Next: r.pos[k]}, nil
		}
	}
	return ReadResult{Exhausted: true}, nil
}

// Ready is always ready: a generator has rows until it is exhausted.
func (r *genReader) Ready() <-chan struct{} { return r.ready }
func (r *genReader) Close() error           { return nil }

// EncodePosition is the offset of a source whose offsets are positions (8
// bytes big-endian).
func EncodePosition(pos int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(pos)) }

// DecodePosition reads an EncodePosition offset; nil is position 0.
func DecodePosition(b []byte) (int64, error) {
	if b == nil {
		return 0, nil
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("offset of %d bytes, want 8", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
