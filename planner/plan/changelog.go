package plan

import "github.com/tributary/tributary/sql/types"

// Changelog is RisingWave's "WITH c AS changelog FROM t": the input's changes
// as rows, each with its op in changelog_op (1 insert, 2 delete, 3 the new
// row of an update, 4 the old one) and a hidden, increasing
// _changelog_row_id. In a batch query the input's rows are all inserts.
type Changelog struct {
	Input Node
	Out   []Field
}

// Changelog op codes, as RisingWave numbers them.
const (
	ChangelogInsert       = 1
	ChangelogDelete       = 2
	ChangelogUpdateInsert = 3
	ChangelogUpdateDelete = 4
)

// NewChangelog returns the Changelog of input: its visible columns, then
// changelog_op and _changelog_row_id.
func NewChangelog(input Node) *Changelog {
	out := append([]Field(nil), input.Schema()...)
	for i := range out {
		out[i].Rel, out[i].Col = 0, 0
	}
	out = append(out,
		Field{Name: "changelog_op", Type: types.TInt16},
		Field{Name: "_changelog_row_id", Type: types.TInt64, Hidden: true})
	return &Changelog{Input: input, Out: out}
}

func (n *Changelog) Schema() []Field  { return n.Out }
func (n *Changelog) Children() []Node { return []Node{n.Input} }
func (n *Changelog) Describe() string { return "Changelog" }

// StreamChangelog turns every change of its input into an insert of the
// changed row with its op code and a fresh row id (the stream key): an
// append-only stream.
type StreamChangelog struct {
	Input StreamNode
	Out   []Field // the input's first len(Out)-2 columns, changelog_op, _changelog_row_id
}

func (n *StreamChangelog) Schema() []Field      { return n.Out }
func (n *StreamChangelog) StreamKey() []int     { return []int{len(n.Out) - 1} }
func (n *StreamChangelog) Inputs() []StreamNode { return []StreamNode{n.Input} }
func (n *StreamChangelog) Describe() string     { return "StreamChangelog" }
