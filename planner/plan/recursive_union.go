package plan

import "fmt"

// RecursiveUnion is a WITH RECURSIVE query Name: Base's rows, then Recursive
// evaluated over and over, each time reading (through the WorkTableScan
// with the same ID) the rows the previous round added, until a round adds
// none. Without All, rows already produced are not added again (UNION).
type RecursiveUnion struct {
	Name      string
	ID        int
	Base      Node
	Recursive Node
	All       bool
	Out       []Field
}

// WorkTableScan reads the rows the last round of the RecursiveUnion with
// the same ID added.
type WorkTableScan struct {
	Name string
	ID   int
	Out  []Field
}

func (n *RecursiveUnion) Schema() []Field  { return n.Out }
func (n *RecursiveUnion) Children() []Node { return []Node{n.Base, n.Recursive} }
func (n *RecursiveUnion) Describe() string {
	if n.All {
		return fmt.Sprintf("RecursiveUnion all %s", n.Name)
	}
	return fmt.Sprintf("RecursiveUnion %s", n.Name)
}

func (n *WorkTableScan) Schema() []Field  { return n.Out }
func (n *WorkTableScan) Children() []Node { return nil }
func (n *WorkTableScan) Describe() string { return fmt.Sprintf("WorkTableScan %s", n.Name) }
