package plan

import (
	"strings"

	"github.com/tributary/tributary/sql/expr"
)

// FrameMode is how a window frame's offsets count: in rows, in values of the
// one ORDER BY key, or in peer groups.
type FrameMode uint8

// Frame modes.
const (
	FrameRange FrameMode = iota
	FrameRows
	FrameGroups
)

// BoundKind is one end of a window frame.
type BoundKind uint8

// Frame bounds.
const (
	UnboundedPreceding BoundKind = iota
	OffsetPreceding
	CurrentRow
	OffsetFollowing
	UnboundedFollowing
)

// FrameBound is one end of a frame. Offset is the constant number of rows or
// groups (ROWS, GROUPS); for RANGE, Target computes the bound's key value
// from the current row's ORDER BY key (key - offset or key + offset, in the
// key's direction) and Key that key in Target's type, so rows compare with
// it; both read a one-column row holding the key (column 0), not the input
// row, so executors may lay rows out as they like.
type FrameBound struct {
	Kind   BoundKind
	Offset int64
	Target expr.Expr
	Key    expr.Expr
	Text   string // the offset as written, for EXPLAIN
}

// Frame is a window frame: rows from Start to End relative to the current
// row. In RANGE and GROUPS mode CURRENT ROW means the current row's peers.
// The zero Frame (ending UNBOUNDED PRECEDING, which no query can write)
// stands for DefaultFrame.
type Frame struct {
	Mode       FrameMode
	Start, End FrameBound
	Exclude    Exclusion
}

// Exclusion is a frame's EXCLUDE clause: rows around the current row taken
// out of its frame.
type Exclusion uint8

// Frame exclusions.
const (
	ExcludeNoOthers Exclusion = iota
	ExcludeCurrentRow
	ExcludeGroup // the current row and its peers
	ExcludeTies  // the current row's peers, not itself
)

// DefaultFrame is PostgreSQL's frame when none is written.
func DefaultFrame() Frame {
	return Frame{Mode: FrameRange, Start: FrameBound{Kind: UnboundedPreceding}, End: FrameBound{Kind: CurrentRow}}
}

// IsDefault reports whether f is DefaultFrame (or the zero Frame).
func (f Frame) IsDefault() bool {
	return f.Mode == FrameRange && f.Start.Kind == UnboundedPreceding && (f.End.Kind == CurrentRow || f.End.Kind == UnboundedPreceding) &&
		f.Exclude == ExcludeNoOthers
}

// Normal returns f, or DefaultFrame for the zero Frame.
func (f Frame) Normal() Frame {
	if f.IsDefault() {
		return DefaultFrame()
	}
	return f
}

func (f Frame) String() string {
	mode := [...]string{"range", "rows", "groups"}[f.Mode]
	s := mode + " between " + f.Start.String() + " and " + f.End.String()
	if f.Exclude != ExcludeNoOthers {
		s += " exclude " + [...]string{"", "current row", "group", "ties"}[f.Exclude]
	}
	return s
}

func (b FrameBound) String() string {
	switch b.Kind {
	case UnboundedPreceding:
		return "unbounded preceding"
	case OffsetPreceding:
		return b.Text + " preceding"
	case CurrentRow:
		return "current row"
	case OffsetFollowing:
		return b.Text + " following"
	}
	return "unbounded following"
}

// UsesFrame reports whether the function's value depends on its frame
// (aggregates and first_value, last_value, nth_value).
func (f *WindowFunc) UsesFrame() bool {
	if f.Agg != nil {
		return true
	}
	switch strings.ToLower(f.Name) {
	case "first_value", "last_value", "nth_value":
		return true
	}
	return false
}

// SameWindow reports whether two functions share their partitioning and
// order (so one over-window operator computes both).
func (f *WindowFunc) SameWindow(g *WindowFunc) bool {
	if len(f.PartitionBy) != len(g.PartitionBy) || len(f.OrderBy) != len(g.OrderBy) {
		return false
	}
	for i := range f.PartitionBy {
		if f.PartitionBy[i] != g.PartitionBy[i] {
			return false
		}
	}
	for i := range f.OrderBy {
		if f.OrderBy[i] != g.OrderBy[i] {
			return false
		}
	}
	return true
}
