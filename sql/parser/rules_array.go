package parser

// Array forms TiDB's grammar lacks, rewritten into calls the binder knows.

// arrayConstructors turns ARRAY[a, b] into pg__array(a, b) (ARRAY[] into
// pg__array()), ARRAY(subquery) into pg__array_sub((subquery)) and
// cardinality(a) into pg__cardinality(a). Nested brackets (a
// multidimensional array) are refused.
func arrayConstructors(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		n := seq[i]
		if n.kw("cardinality") && seq[i+1].isParen() {
			// A keyword to TiDB: renamed, and named back by the binder.
			seq[i] = rawNode("pg__cardinality", n.tok, n.tok.sp)
			continue
		}
		if !n.kw("array") || (i > 0 && seq[i-1].isPunct(".")) {
			continue
		}
		g := seq[i+1]
		if g.isParen() {
			if len(g.kids) == 0 || !g.kids[0].kwIn("select", "with", "values", "table") && !g.kids[0].isParen() {
				return nil, c.syntax(g)
			}
			// ARRAY(subquery): pg__array_sub((subquery)), a scalar subquery
			// the binder aggregates.
			call := callNode("pg__array_sub", n.tok, n.tok.sp, one(g))
			seq = splice(seq, i, i+2, call...)
			i++
			continue
		}
		if !isBracket(g) {
			continue
		}
		var parts [][]*node
		if len(g.kids) > 0 {
			parts = splitCommas(g.kids)
		}
		for _, p := range parts {
			if len(p) == 0 {
				return nil, c.syntax(g)
			}
			if len(p) == 1 && isBracket(p[0]) || len(p) >= 2 && p[0].kw("array") && isBracket(p[1]) {
				return nil, c.unsupported(p[0].tok, "multidimensional arrays are not supported")
			}
		}
		call := callNode("pg__array", n.tok, n.tok.sp, parts...)
		seq = splice(seq, i, i+2, call...)
		i++
	}
	return seq, nil
}

// subscripts turns a[i] into pg__subscript(a, i) and a[i:j], a[:j], a[i:]
// into pg__slice(a, i, j) with NULL for an omitted bound. It runs after
// castOperators, so x::int[] has already lost its brackets.
func subscripts(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 1; i < len(seq); i++ {
		g := seq[i]
		if !isBracket(g) {
			continue
		}
		lo := primaryStart(seq, i)
		if lo == i {
			return nil, c.syntax(g)
		}
		if len(g.kids) == 0 {
			return nil, c.syntax(g)
		}
		if len(seq) > 0 && seq[0].kw("update") && i+1 < len(seq) && seq[i+1].isOp("=") && lo > 0 && (seq[lo-1].kw("set") || seq[lo-1].isPunct(",")) {
			return nil, c.unsupported(g.tok, "assignment to array elements is not supported")
		}
		if i+1 < len(seq) && isBracket(seq[i+1]) {
			// a[i][j] subscripts two dimensions in PostgreSQL.
			return nil, c.unsupported(seq[i+1].tok, "multidimensional subscripts are not supported")
		}
		base := clone(seq[lo:i])
		first := seq[lo].tok
		colon := -1
		for k, kid := range g.kids {
			if kid.isPunct(":") {
				colon = k
				break
			}
		}
		var call []*node
		if colon < 0 {
			call = callNode("pg__subscript", first, false, base, g.kids)
		} else {
			from, to := g.kids[:colon], g.kids[colon+1:]
			if len(from) == 0 {
				from = one(rawNode("NULL", g.tok, false))
			}
			if len(to) == 0 {
				to = one(rawNode("NULL", g.tok, false))
			}
			call = callNode("pg__slice", first, false, base, from, to)
		}
		seq[lo].tok.sp = false
		seq = splice(seq, lo, i+1, parenNode(call, first, first.sp))
		i = lo
	}
	return seq, nil
}

// quantifiedArrays turns x op ANY (array) and x op ALL (array) (SOME is
// ANY), where the parenthesis holds no subquery, into pg__any(x, 'op',
// array) and pg__all(x, 'op', array). ANY and ALL over a subquery stay for
// TiDB.
func quantifiedArrays(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 1; i+1 < len(seq); i++ {
		n := seq[i]
		g := seq[i+1]
		if !n.kwIn("any", "some", "all") || !g.isParen() || binaryPrec(seq[i-1]) != precCompare || seq[i-1].group || seq[i-1].tok.kind != tkOp {
			continue
		}
		if len(g.kids) > 0 && g.kids[0].kwIn("select", "with", "values", "table") || len(g.kids) == 0 {
			continue
		}
		op := seq[i-1].tok.val
		if op == "!=" {
			op = "<>"
		}
		lo := operandStart(seq, i-1, precCompare)
		if lo == i-1 {
			return nil, c.syntax(seq[i-1])
		}
		name := "pg__any"
		if n.kw("all") {
			name = "pg__all"
		}
		first := seq[lo].tok
		seq[lo].tok.sp = false
		call := callNode(name, first, false, clone(seq[lo:i-1]), one(strNode(op, seq[i-1].tok)), g.kids)
		seq = splice(seq, lo, i+2, parenNode(call, first, first.sp))
		i = lo
	}
	return seq, nil
}
