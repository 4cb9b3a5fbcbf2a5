package parser

// CrossDBSep joins database and schema in the one quoted schema identifier
// a three-part table name db.schema.name is rewritten to (TiDB's grammar
// knows two-part names only); catalog.SplitSchema takes it apart.
const CrossDBSep = "\x1f"

// crossDBNames rewrites a three-part table name after FROM, JOIN, INTO or
// UPDATE, db.schema.name, to "db<CrossDBSep>schema".name.
func crossDBNames(c *rewriteCtx, seq []*node) ([]*node, error) {
	inFrom := false
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		switch {
		case n.kwIn("from", "join", "into", "update"):
			inFrom = true
			continue
		case n.kwIn("where", "group", "order", "having", "limit", "window", "union", "intersect", "except",
			"on", "using", "select", "set", "values", "returning", "offset", "fetch"):
			inFrom = false
			continue
		}
		if !inFrom || i+4 >= len(seq) || !n.isIdent() || i > 0 && seq[i-1].isPunct(".") {
			continue
		}
		if !seq[i+1].isPunct(".") || !seq[i+2].isIdent() || !seq[i+3].isPunct(".") || !seq[i+4].isIdent() {
			continue
		}
		if i+5 < len(seq) && seq[i+5].isPunct(".") {
			continue
		}
		schema := synth(tkQIdent, n.tok.val+CrossDBSep+seq[i+2].tok.val, n.tok, n.tok.sp)
		seq = splice(seq, i, i+3, schema)
	}
	return seq, nil
}
