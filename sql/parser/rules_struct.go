package parser

// Struct forms TiDB's grammar lacks.

// fieldAccess turns (s).name into pg__field((s), 'name'), repeatedly for
// (t.s).a.b; the parenthesis must not be a call's argument list. Names are
// folded to lower case unless quoted, as identifiers are. (s).* becomes
// pg__field_star((s)).
func fieldAccess(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+2 < len(seq); i++ {
		g := seq[i]
		if !g.isParen() || !seq[i+1].isPunct(".") || len(g.kids) == 0 {
			continue
		}
		if i > 0 && (seq[i-1].isIdent() && isAtom(seq[i-1]) || !seq[i-1].group && seq[i-1].tok.kind == tkRaw || seq[i-1].isPunct(".")) {
			continue // f(x).a: not a field access of ours
		}
		base := []*node{g}
		j := i + 1
		at, sp := g.tok, g.tok.sp
		for j+1 < len(seq) && seq[j].isPunct(".") && seq[j+1].isIdent() {
			name := seq[j+1].tok.val
			call := callNode("pg__field", at, false, base, one(strNode(name, seq[j+1].tok)))
			base = []*node{parenNode(call, at, false)}
			j += 2
		}
		if j+1 < len(seq) && seq[j].isPunct(".") && seq[j+1].isOp("*") {
			// (s).*: every field, which the binder expands in a SELECT list.
			base = callNode("pg__field_star", at, false, base)
			j += 2
		}
		if j == i+1 {
			continue
		}
		base[0].tok.sp = sp
		seq = splice(seq, i, j, base...)
	}
	return seq, nil
}

// rowConstructors turns ROW(a) into pg__row(a): TiDB's grammar wants at
// least two values in ROW(...). ROW(a, b) and (a, b) stay TiDB's row
// expression (which row-valued IN and comparisons with subqueries read).
func rowConstructors(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if !seq[i].kw("row") || seq[i].tok.kind != tkIdent || !seq[i+1].isParen() || (i > 0 && seq[i-1].isPunct(".")) {
			continue
		}
		if len(seq[i+1].kids) == 0 {
			return nil, c.unsupported(seq[i].tok, "empty row constructors are not supported")
		}
		if len(splitCommas(seq[i+1].kids)) > 1 {
			continue
		}
		call := callNode("pg__row", seq[i].tok, seq[i].tok.sp, splitCommas(seq[i+1].kids)...)
		seq = splice(seq, i, i+2, call...)
		i++
	}
	return seq, nil
}
