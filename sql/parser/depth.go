package parser

import "github.com/tributary/tributary/sql/types"

// depthWords are the keywords that, like operators, add a level to the
// expression tree TiDB builds from them.
var depthWords = map[string]bool{
	"and": true, "or": true, "not": true, "is": true, "like": true, "ilike": true, "between": true,
}

// checkDepth refuses, before anything recursive sees them, statements nested
// deeper than types.MaxNesting brackets or whose expressions could be deeper
// than types.MaxExprDepth: TiDB's parser builds one tree level per operator of
// a chain such as 0+1+1+..., and the stages after it recurse over that tree.
// The estimate of a comma-separated item is the operators it contains plus the
// deepest bracketed group in it; it is an upper bound of the tree's depth and
// is computed in one iterative pass.
func checkDepth(toks []token) error {
	type frame struct {
		ops, child int // in the current item: operators, deepest group
		best       int // deepest item so far
	}
	stack := []frame{{}}
	for _, t := range toks {
		f := &stack[len(stack)-1]
		switch {
		case t.kind == tkPunct && (t.val == "(" || t.val == "["):
			if len(stack) > types.MaxNesting {
				return types.StackDepthError(types.MaxNesting, "brackets")
			}
			stack = append(stack, frame{})
			continue
		case t.kind == tkPunct && (t.val == ")" || t.val == "]"):
			if len(stack) == 1 {
				continue // unbalanced: buildTree reports it
			}
			d := max(f.best, f.ops+f.child) + 1
			stack = stack[:len(stack)-1]
			f = &stack[len(stack)-1]
			f.child = max(f.child, d)
		case t.kind == tkPunct && (t.val == "," || t.val == ";"):
			f.best = max(f.best, f.ops+f.child)
			f.ops, f.child = 0, 0
			continue
		case t.kind == tkOp || (t.kind == tkIdent && depthWords[t.val]):
			f.ops++
		default:
			continue
		}
		if f.ops+f.child > types.MaxExprDepth {
			return types.StackDepthError(types.MaxExprDepth, "operators")
		}
	}
	return nil
}
