package parser

// groupingSets rewrites GROUP BY's ROLLUP (...), CUBE (...) and GROUPING SETS
// (...) - TiDB knows only MySQL's WITH ROLLUP - into calls of pg__rollup,
// pg__cube and pg__grouping_sets whose parenthesized elements are pg__set(...)
// calls (pg__set() for the empty set), and grouping(...) anywhere into
// pg__grouping(...). The binder expands the calls into grouping sets.
func groupingSets(c *rewriteCtx, seq []*node) ([]*node, error) {
	inGroupBy := false
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		switch {
		case n.kw("group") && i+1 < len(seq) && seq[i+1].kw("by"):
			inGroupBy = true
			i++
			continue
		case n.kwIn("having", "window", "order", "limit", "offset", "fetch", "union", "intersect", "except", "select", "from", "where"):
			inGroupBy = false
		case n.kw("grouping") && i+1 < len(seq) && seq[i+1].isParen():
			paren := *seq[i+1]
			paren.tok.sp = false
			seq[i], seq[i+1] = rawNode("pg__grouping", n.tok, n.tok.sp), &paren
			i++
			continue
		}
		if !inGroupBy {
			continue
		}
		if call, width := setCall(seq[i:]); call != nil {
			seq = splice(seq, i, i+width, call...)
			i += len(call) - 1
		}
	}
	return seq, nil
}

// setCall turns a grouping-set construct at the start of seq into its call;
// width is how many nodes it took (nil when seq starts with none).
func setCall(seq []*node) (call []*node, width int) {
	n := seq[0]
	var name string
	var args *node
	switch {
	case n.kwIn("rollup", "cube") && len(seq) > 1 && seq[1].isParen():
		name, args, width = "pg__"+n.tok.val, seq[1], 2
	case n.kw("grouping") && len(seq) > 2 && seq[1].kw("sets") && seq[2].isParen():
		name, args, width = "pg__grouping_sets", seq[2], 3
	default:
		return nil, 0
	}
	var parts [][]*node
	if len(args.kids) > 0 {
		parts = splitCommas(args.kids)
	}
	for k, p := range parts {
		switch {
		case len(p) == 1 && p[0].isParen():
			var inner [][]*node
			if len(p[0].kids) > 0 {
				inner = splitCommas(p[0].kids)
			}
			parts[k] = callNode("pg__set", p[0].tok, false, inner...)
		case len(p) > 0:
			if sub, w := setCall(p); sub != nil && w == len(p) {
				parts[k] = sub
			}
		}
	}
	return callNode(name, n.tok, n.tok.sp, parts...), width
}
