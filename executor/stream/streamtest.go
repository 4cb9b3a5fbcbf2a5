package stream

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Test helpers shared by the stream operators' tests (and the coordinator's):
// a slice-backed source, a text form of chunks, and a multiset that applies
// change streams and checks their op discipline.

// MockSource is an Executor replaying a fixed list of messages, then io.EOF.
type MockSource struct {
	Types []types.T
	Msgs  []Message
	pos   int
}

// NewMockSource returns a source emitting msgs in order.
func NewMockSource(ts []types.T, msgs ...Message) *MockSource {
	return &MockSource{Types: ts, Msgs: msgs}
}

// Push appends messages to replay.
func (s *MockSource) Push(msgs ...Message) { s.Msgs = append(s.Msgs, msgs...) }

// Schema implements Executor.
func (s *MockSource) Schema() []types.T { return s.Types }

// Next implements Executor.
func (s *MockSource) Next(ctx context.Context) (Message, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	if s.pos >= len(s.Msgs) {
		return Message{}, io.EOF
	}
	s.pos++
	return s.Msgs[s.pos-1], nil
}

// fixtureTypes maps ParseChunk's column type tokens to types.
var fixtureTypes = map[string]types.T{
	"I": types.TInt64, "i": types.TInt32, "F": types.TFloat64, "B": types.TBool,
	"T": types.TVarchar, "N": types.TNumeric, "D": types.TDate, "TS": types.TTimestamp,
	"TZ": types.TTimestamptz, "IV": types.TInterval,
}

// ParseChunk builds a chunk from its text form: a header line of column
// types (I int64, i int32, F float64, B bool, T varchar, N numeric, D date,
// TS timestamp, TZ timestamptz, IV interval), then one row per line: an op
// (+, -, U-, U+), the values in PostgreSQL text form ("." is NULL; no
// spaces inside a value, so write timestamps as 2024-01-01T10:00:00), and an
// optional trailing D marking the row invisible. Example:
//
//	 I I
//	 + 1 4
//	U- 1 4
//	U+ 1 5 D
func ParseChunk(text string) (*types.Chunk, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	var ts []types.T
	for _, tok := range strings.Fields(lines[0]) {
		t, ok := fixtureTypes[tok]
		if !ok {
			return nil, fmt.Errorf("parse chunk: unknown column type %q", tok)
		}
		ts = append(ts, t)
	}
	c := types.NewChunk(ts, len(lines)-1)
	row := make([]types.Datum, len(ts))
	var vis []bool
	for n, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		op, ok := parseOp(f[0])
		if !ok {
			return nil, fmt.Errorf("parse chunk: line %d: unknown op %q", n+2, f[0])
		}
		f = f[1:]
		hidden := len(f) == len(ts)+1 && f[len(ts)] == "D"
		if hidden {
			f = f[:len(ts)]
		}
		if len(f) != len(ts) {
			return nil, fmt.Errorf("parse chunk: line %d: %d values for %d columns", n+2, len(f), len(ts))
		}
		for j, s := range f {
			if s == "." {
				row[j] = types.NullDatum
				continue
			}
			d, err := types.ParseText(ts[j], s)
			if err != nil {
				return nil, fmt.Errorf("parse chunk: line %d column %d: %w", n+2, j, err)
			}
			row[j] = d
		}
		c.AppendRowOp(op, row)
		vis = append(vis, !hidden)
	}
	if slices.Contains(vis, false) {
		c.Vis = vis
	}
	return c, nil
}

// ParseChunks parses several chunk texts (see ParseChunk) into chunk messages.
func ParseChunks(texts ...string) ([]Message, error) {
	out := make([]Message, 0, len(texts))
	for _, s := range texts {
		c, err := ParseChunk(s)
		if err != nil {
			return nil, err
		}
		out = append(out, ChunkMsg(c))
	}
	return out, nil
}

func parseOp(s string) (types.Op, bool) {
	for _, op := range []types.Op{types.OpInsert, types.OpDelete, types.OpUpdateDelete, types.OpUpdateInsert} {
		if op.String() == s {
			return op, true
		}
	}
	return 0, false
}

// FormatRow renders row i of c as space-separated text values ("." for NULL).
func FormatRow(c *types.Chunk, i int) string {
	var b []byte
	var d types.Datum
	for j := range c.Cols {
		if j > 0 {
			b = append(b, ' ')
		}
		c.Cols[j].GetInto(i, &d)
		if d.Null {
			b = append(b, '.')
			continue
		}
		b = types.AppendText(b, c.Cols[j].Type, &d)
	}
	return string(b)
}

// FormatChunk renders the visible rows of c, one "op values" line each.
func FormatChunk(c *types.Chunk) string {
	var b strings.Builder
	for i := 0; i < c.Len(); i++ {
		if c.Visible(i) {
			fmt.Fprintf(&b, "%s %s\n", c.Op(i), FormatRow(c, i))
		}
	}
	return b.String()
}

// Collect pulls messages from e until it has returned barriers barriers (or
// io.EOF, which ends the collection without error).
func Collect(ctx context.Context, e Executor, barriers int) ([]Message, error) {
	var out []Message
	for seen := 0; seen < barriers; {
		m, err := e.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
		if m.Barrier != nil {
			seen++
		}
	}
	return out, nil
}

// RowSet is a multiset of rows (in FormatRow's text form) that a change
// stream is applied to, checking its discipline: a Delete or UpdateDelete
// must remove a present row, an UpdateDelete must be immediately followed by
// its UpdateInsert with the same stream key, and (with a key) an Insert must
// not add a second row with a present stream key.
type RowSet struct {
	// Key lists the stream key columns (nil: no key checks).
	Key  []int
	rows map[string]int
	keys map[string]bool
	buf  types.Chunk
}

// NewRowSet returns an empty multiset checking the stream key key.
func NewRowSet(key []int) *RowSet {
	return &RowSet{Key: key, rows: make(map[string]int), keys: make(map[string]bool)}
}

// keyOf renders row i's key columns.
func (s *RowSet) keyOf(c *types.Chunk, i int) string {
	if s.Key == nil {
		return ""
	}
	s.buf.Cols = s.buf.Cols[:0]
	for _, k := range s.Key {
		s.buf.Cols = append(s.buf.Cols, c.Cols[k])
	}
	return FormatRow(&s.buf, i)
}

// Apply applies the visible rows of c.
func (s *RowSet) Apply(c *types.Chunk) error {
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		row := FormatRow(c, i)
		switch c.Op(i) {
		case types.OpInsert:
			if s.Key != nil {
				k := s.keyOf(c, i)
				if s.keys[k] {
					return fmt.Errorf("row set: insert of %s: a row with key (%s) is present", row, k)
				}
				s.keys[k] = true
			}
			s.rows[row]++
		case types.OpDelete:
			if err := s.remove(row); err != nil {
				return err
			}
			delete(s.keys, s.keyOf(c, i))
		case types.OpUpdateDelete:
			j := i + 1
			if j >= c.Len() || !c.Visible(j) || c.Op(j) != types.OpUpdateInsert {
				return fmt.Errorf("row set: U- %s is not followed by its U+", row)
			}
			for _, k := range s.Key {
				if !vecEqualAt(&c.Cols[k], i, &c.Cols[k], j) {
					return fmt.Errorf("row set: update pair changes key column %d: %s -> %s", k, row, FormatRow(c, j))
				}
			}
			if err := s.remove(row); err != nil {
				return err
			}
			s.rows[FormatRow(c, j)]++
			i = j
		case types.OpUpdateInsert:
			return fmt.Errorf("row set: U+ %s without its U-", row)
		}
	}
	return nil
}

// ApplyMessages applies every chunk of msgs.
func (s *RowSet) ApplyMessages(msgs []Message) error {
	for _, m := range msgs {
		if m.Chunk != nil {
			if err := s.Apply(m.Chunk); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *RowSet) remove(row string) error {
	if s.rows[row] == 0 {
		return fmt.Errorf("row set: delete of absent row %s", row)
	}
	if s.rows[row]--; s.rows[row] == 0 {
		delete(s.rows, row)
	}
	return nil
}

// String returns the rows sorted, one per line (repeated per multiplicity).
func (s *RowSet) String() string {
	var lines []string
	for r, n := range s.rows {
		for range n {
			lines = append(lines, r)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
