package parser

import (
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// node is a leaf token or a bracketed group: "(" kids ")" or "[" kids "]".
type node struct {
	tok   token // the leaf, or the opening bracket of a group
	kids  []*node
	close token
	group bool
}

// buildTree nests tokens by brackets.
func buildTree(src string, toks []token) ([]*node, error) {
	type frame struct {
		open *node
		kids []*node
	}
	var stack []frame
	var cur []*node
	// One allocation for every node (a bulk INSERT has thousands).
	slab := make([]node, len(toks))
	for i, t := range toks {
		if t.kind == tkPunct {
			switch t.val {
			case "(", "[":
				slab[i] = node{tok: t, group: true}
				stack = append(stack, frame{open: &slab[i], kids: cur})
				cur = nil
				continue
			case ")", "]":
				want := "("
				if t.val == "]" {
					want = "["
				}
				if len(stack) == 0 || stack[len(stack)-1].open.tok.val != want {
					return nil, syntaxErrAt(src, t)
				}
				f := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				f.open.kids = cur
				f.open.close = t
				cur = append(f.kids, f.open)
				continue
			}
		}
		slab[i] = node{tok: t}
		cur = append(cur, &slab[i])
	}
	if len(stack) > 0 {
		return nil, syntaxErrEnd(src)
	}
	return cur, nil
}

func syntaxErrAt(src string, t token) error {
	return types.ErrorAt(types.ErrSyntax, charPos(src, t.pos), "syntax error at or near %q", src[t.pos:t.end])
}

func syntaxErrEnd(src string) error {
	return types.ErrorAt(types.ErrSyntax, charPos(src, len(src)), "syntax error at end of input")
}

// Leaf and group constructors for rewrite rules. Synthetic tokens take their
// source position from at.

func synth(kind tokKind, val string, at token, sp bool) *node {
	return &node{tok: token{kind: kind, val: val, pos: at.pos, end: at.end, sp: sp, synth: true}}
}

func rawNode(val string, at token, sp bool) *node { return synth(tkRaw, val, at, sp) }

func strNode(val string, at token) *node { return synth(tkString, val, at, true) }

// callNode builds name(args...) where args are comma-separated argument node
// lists.
func callNode(name string, at token, sp bool, args ...[]*node) []*node {
	g := &node{group: true, tok: token{kind: tkPunct, val: "(", pos: at.pos, end: at.end, synth: true},
		close: token{kind: tkPunct, val: ")", pos: at.pos, end: at.end, synth: true}}
	for i, a := range args {
		if i > 0 {
			g.kids = append(g.kids, synth(tkPunct, ",", at, false))
		}
		if len(a) > 0 {
			a[0].tok.sp = i > 0
		}
		g.kids = append(g.kids, a...)
	}
	return []*node{rawNode(name, at, sp), g}
}

// parenNode wraps kids in a synthetic "(" ")" group.
func parenNode(kids []*node, at token, sp bool) *node {
	return &node{group: true, kids: kids,
		tok:   token{kind: tkPunct, val: "(", pos: at.pos, end: at.end, sp: sp, synth: true},
		close: token{kind: tkPunct, val: ")", pos: at.pos, end: at.end, synth: true}}
}

func (n *node) isParen() bool { return n.group && n.tok.val == "(" }

// kw reports whether n is the unquoted word w (lower case).
func (n *node) kw(w string) bool {
	return !n.group && n.tok.kind == tkIdent && !n.tok.synth && n.tok.val == w
}

func (n *node) kwIn(ws ...string) bool {
	for _, w := range ws {
		if n.kw(w) {
			return true
		}
	}
	return false
}

func (n *node) isPunct(p string) bool { return !n.group && n.tok.kind == tkPunct && n.tok.val == p }

func (n *node) isOp(op string) bool { return !n.group && n.tok.kind == tkOp && n.tok.val == op }

func (n *node) isIdent() bool { return !n.group && (n.tok.kind == tkIdent || n.tok.kind == tkQIdent) }

// first and last give a node's outermost tokens.
func (n *node) first() token { return n.tok }

func (n *node) last() token {
	if n.group {
		return n.close
	}
	return n.tok
}

// splitCommas splits a node list at top-level commas.
// The commas inside a struct<name type, ...> type are not split on.
func splitCommas(seq []*node) [][]*node {
	var out [][]*node
	start := 0
	depth := 0 // inside struct<...>
	for i, n := range seq {
		if !n.group && n.tok.kind == tkOp && (depth > 0 || i > 0 && seq[i-1].kw("struct") && n.tok.val[0] == '<') {
			for _, c := range n.tok.val {
				switch c {
				case '<':
					depth++
				case '>':
					depth--
				}
			}
			depth = max(depth, 0)
			continue
		}
		if n.isPunct(",") && depth == 0 {
			out = append(out, seq[start:i])
			start = i + 1
		}
	}
	return append(out, seq[start:])
}

// joinCommas is the inverse of splitCommas (with synthetic commas).
func joinCommas(parts [][]*node, at token) []*node {
	var out []*node
	for i, p := range parts {
		if i > 0 {
			out = append(out, synth(tkPunct, ",", at, false))
		}
		out = append(out, p...)
	}
	return out
}

// srcText returns the original text spanned by a node list.
func srcText(src string, seq []*node) string {
	if len(seq) == 0 {
		return ""
	}
	lo, hi := len(src), 0
	var walk func([]*node)
	walk = func(s []*node) {
		for _, n := range s {
			lo, hi = min(lo, n.tok.pos), max(hi, n.tok.end)
			if n.group {
				walk(n.kids)
				lo, hi = min(lo, n.close.pos), max(hi, n.close.end)
			}
		}
	}
	walk(seq)
	if lo >= hi {
		return ""
	}
	return src[lo:hi]
}

// rendered is rewritten SQL text with a map back to the original.
type rendered struct {
	text string
	toks []renderedTok
}

type renderedTok struct {
	start, end int // in text
	tok        token
}

func render(seq []*node) rendered {
	var b strings.Builder
	var r rendered
	var walk func([]*node)
	emit := func(t token) {
		if t.sp && b.Len() > 0 {
			b.WriteByte(' ')
		}
		start := b.Len()
		t.render(&b)
		r.toks = append(r.toks, renderedTok{start: start, end: b.Len(), tok: t})
	}
	walk = func(s []*node) {
		for _, n := range s {
			emit(n.tok)
			if n.group {
				walk(n.kids)
				emit(n.close)
			}
		}
	}
	walk(seq)
	r.text = b.String()
	return r
}

// renderString renders a node list (for tests and sub-parses).
func renderString(seq []*node) string { return render(seq).text }

func syntaxErrMsg(src string, t token, msg string) error {
	return types.ErrorAt(types.ErrSyntax, charPos(src, t.pos), "%s", msg)
}
