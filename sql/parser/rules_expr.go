package parser

import (
	"slices"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// rejectUnsupported reports forms we recognise but do not support:
// SELECT ... FOR UPDATE.
func rejectUnsupported(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i, n := range seq {
		next := func(k int) *node {
			if i+k < len(seq) {
				return seq[i+k]
			}
			return nil
		}
		switch {
		case n.kw("for") && next(1) != nil && next(1).kwIn("update", "share", "no", "key"):
			return nil, c.unsupported(n.tok, "SELECT ... FOR UPDATE is not supported")
		}
	}
	return seq, nil
}

// regexpMatchSubscript turns regexp_match(s, p)[n] (also parenthesized) into
// pg__regexp_match_group(s, p, n): the one use of an array Nexmark's q21 makes,
// served without an array type. Any other subscript stays an array (refused).
func regexpMatchSubscript(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		sub := seq[i+1]
		if !(sub.group && sub.tok.val == "[") || len(sub.kids) != 1 || sub.kids[0].group || sub.kids[0].tok.kind != tkNumber {
			continue
		}
		// seq[i] is the call's argument group after "regexp_match", or a
		// parenthesized "regexp_match(...)".
		var fn, args *node
		lo := i // the first node replaced
		switch {
		case i > 0 && seq[i].isParen() && seq[i-1].isIdent() && strings.EqualFold(seq[i-1].tok.val, "regexp_match"):
			fn, args, lo = seq[i-1], seq[i], i-1
		case seq[i].isParen() && len(seq[i].kids) == 2 && seq[i].kids[0].isIdent() &&
			strings.EqualFold(seq[i].kids[0].tok.val, "regexp_match") && seq[i].kids[1].isParen():
			fn, args = seq[i].kids[0], seq[i].kids[1]
		default:
			continue
		}
		parts := splitCommas(args.kids)
		if len(parts) != 2 {
			continue // regexp_match with flags: left to be refused
		}
		call := callNode("pg__regexp_match_group", fn.tok, seq[lo].tok.sp, parts[0], parts[1], one(sub.kids[0]))
		seq = splice(seq, lo, i+2, call...)
		i = lo
	}
	return seq, nil
}

// dollarParams turns $n into pg__param(n).
func dollarParams(c *rewriteCtx, seq []*node) ([]*node, error) {
	var out []*node // built in one pass: splicing each $n was quadratic
	for i, n := range seq {
		if n.group || n.tok.kind != tkParam {
			if out != nil {
				out = append(out, n)
			}
			continue
		}
		if out == nil {
			out = append(make([]*node, 0, len(seq)+3*(len(seq)-i)), seq[:i]...)
		}
		num := synth(tkNumber, strings.TrimLeft(n.tok.val, "0"), n.tok, false)
		if num.tok.val == "" {
			num.tok.val = "0"
		}
		out = append(out, callNode("pg__param", n.tok, n.tok.sp, one(num))...)
	}
	if out == nil {
		return seq, nil
	}
	return out, nil
}

var intervalUnits = map[string]string{
	"year": "year", "years": "year", "month": "month", "months": "month", "week": "week", "weeks": "week",
	"day": "day", "days": "day", "hour": "hour", "hours": "hour", "minute": "minute", "minutes": "minute",
	"second": "second", "seconds": "second", "millisecond": "millisecond", "microsecond": "microsecond",
}

// typeLiteralWords start a "type 'literal'" form.
var typeLiteralWords = map[string]bool{"double": true, "national": true, "bit": true}

// typedLiterals turns INTERVAL '1 hour', INTERVAL '1' HOUR and INTERVAL 1 HOUR
// into pg__interval('1 hour'), and T 'text' (TIMESTAMP '...', DATE '...')
// into pg__cast('text', 'T').
func typedLiterals(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		if n.group || n.tok.kind != tkIdent || n.tok.synth || (i > 0 && (seq[i-1].isPunct(".") || seq[i-1].isOp("::"))) {
			continue
		}
		if n.tok.val == "interval" && i+1 < len(seq) && !seq[i+1].group &&
			(seq[i+1].tok.kind == tkString || seq[i+1].tok.kind == tkNumber) {
			val := seq[i+1].tok.val
			j := i + 2
			if j < len(seq) && !seq[j].group && seq[j].tok.kind == tkIdent {
				if u, ok := intervalUnits[seq[j].tok.val]; ok {
					val += " " + u
					j++
					// A "X TO Y" field restriction keeps the literal as written.
					if j+1 < len(seq) && seq[j].kw("to") && intervalUnits[seq[j+1].tok.val] != "" {
						val = seq[i+1].tok.val
						j += 2
					}
				}
			}
			if j < len(seq) && seq[j].kwIn("preceding", "following") {
				// A window frame offset: TiDB's grammar takes only INTERVAL
				// expr unit there. The whole text goes in the literal and the
				// binder reads it as PostgreSQL's interval, not the unit.
				seq = splice(seq, i, j, n, strNode(val, seq[i+1].tok), rawNode("MICROSECOND", n.tok, true))
				i += 2
				continue
			}
			call := callNode("pg__interval", n.tok, n.tok.sp, one(strNode(val, seq[i+1].tok)))
			seq = splice(seq, i, j, call...)
			i++
			continue
		}
		if _, ok := typeAliases[n.tok.val]; !ok && !typeLiteralWords[n.tok.val] {
			continue
		}
		t, j, err := parseTypeName(c.src, seq, i)
		if err != nil || j >= len(seq) || seq[j].group || seq[j].tok.kind != tkString {
			continue
		}
		call := callNode("pg__cast", n.tok, n.tok.sp, one(seq[j]), one(strNode(t.String(), n.tok)))
		seq[j].tok.sp = false
		seq = splice(seq, i, j+1, call...)
		i++
	}
	return seq, nil
}

// castCalls turns CAST(x AS T) into pg__cast(x, 'T').
func castCalls(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		n := seq[i]
		if !n.kw("cast") || !seq[i+1].isParen() {
			continue
		}
		g := seq[i+1]
		as := -1
		for k, kid := range g.kids {
			if kid.kw("as") {
				as = k
				break
			}
		}
		if as <= 0 {
			return nil, c.syntax(g.close.node())
		}
		t, end, err := parseTypeName(c.src, g.kids, as+1)
		if err != nil {
			return nil, err
		}
		if end != len(g.kids) {
			return nil, c.syntax(g.kids[end])
		}
		call := callNode("pg__cast", n.tok, n.tok.sp, g.kids[:as], one(strNode(t.String(), g.kids[as+1].tok)))
		seq = splice(seq, i, i+2, call...)
		i++
	}
	return seq, nil
}

func (t token) node() *node { return &node{tok: t} }

// operatorKeyword turns OPERATOR(pg_catalog.~) into the bare operator.
func operatorKeyword(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if !seq[i].kw("operator") || !seq[i+1].isParen() {
			continue
		}
		kids := seq[i+1].kids
		if len(kids) == 3 && kids[0].isIdent() && kids[1].isPunct(".") {
			kids = kids[2:]
		}
		if len(kids) != 1 || kids[0].group || kids[0].tok.kind != tkOp {
			return nil, c.syntax(seq[i+1])
		}
		op := kids[0].tok
		op.sp = true
		seq = splice(seq, i, i+2, op.node())
	}
	return seq, nil
}

// castOperators turns x::T into pg__cast(x, 'T'); :: binds tighter than
// any other operator, so x is the primary expression just before it.
func castOperators(c *rewriteCtx, seq []*node) ([]*node, error) {
	var out []*node // built in one pass (primaryStart only looks back): splicing each cast was quadratic
	for i := 0; i < len(seq); i++ {
		if !seq[i].isOp("::") {
			if out != nil {
				out = append(out, seq[i])
			}
			continue
		}
		if out == nil {
			out = append(make([]*node, 0, len(seq)), seq[:i]...)
		}
		start := primaryStart(out, len(out))
		if start == len(out) {
			return nil, c.syntax(seq[i])
		}
		t, end, err := parseTypeName(c.src, seq, i+1)
		if err != nil {
			return nil, err
		}
		first := out[start].tok
		call := callNode("pg__cast", first, first.sp, clone(out[start:]), one(strNode(t.String(), seq[i+1].tok)))
		out[start].tok.sp = false
		out = append(out[:start], call...)
		i = end - 1
	}
	if out == nil {
		return seq, nil
	}
	return out, nil
}

// dropCollate removes COLLATE name clauses (pg_catalog.default, "C", ...).
func dropCollate(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		if !seq[i].kw("collate") {
			continue
		}
		j := i + 1
		if j >= len(seq) || !(seq[j].isIdent() || (!seq[j].group && seq[j].tok.kind == tkString)) {
			return nil, c.syntax(nodeAt(seq, j))
		}
		j++
		for j+1 < len(seq) && seq[j].isPunct(".") && seq[j+1].isIdent() {
			j += 2
		}
		seq = splice(seq, i, j)
		i--
	}
	return seq, nil
}

func nodeAt(seq []*node, i int) *node {
	if i >= 0 && i < len(seq) {
		return seq[i]
	}
	return nil
}

// regexOperators turns a ~ b into a REGEXP b, a !~ b into a NOT REGEXP b,
// and the case-insensitive ~* and !~* into [NOT] pg__regexp_i(a, b).
func regexOperators(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		if n.group || n.tok.kind != tkOp || !endsOperand(seq, i-1) {
			continue
		}
		switch n.tok.val {
		case "~":
			seq = splice(seq, i, i+1, rawNode("REGEXP", n.tok, true))
		case "!~":
			seq = splice(seq, i, i+1, rawNode("NOT", n.tok, true), rawNode("REGEXP", n.tok, true))
			i++
		case "~*", "!~*":
			lo := operandStart(seq, i, precOther)
			hi := operandEnd(seq, i+1, precOther)
			if lo == i || hi == i+1 {
				return nil, c.syntax(n)
			}
			first := seq[lo].tok
			call := callNode("pg__regexp_i", first, false, clone(seq[lo:i]), clone(seq[i+1:hi]))
			if n.tok.val == "!~*" {
				call[0].tok.sp = true
				call = cat(one(rawNode("NOT", n.tok, false)), call)
			}
			seq[lo].tok.sp = false
			seq = splice(seq, lo, hi, parenNode(call, first, first.sp))
			i = lo
		}
	}
	return seq, nil
}

// distinctFrom turns a IS [NOT] DISTINCT FROM b into (NOT (a <=> b)) or
// ((a) <=> (b)).
func distinctFrom(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		if !seq[i].kw("is") {
			continue
		}
		k := i + 1
		not := k < len(seq) && seq[k].kw("not")
		if not {
			k++
		}
		if k+1 >= len(seq) || !seq[k].kw("distinct") || !seq[k+1].kw("from") {
			continue
		}
		lo := operandStart(seq, i, precIs)
		hi := operandEnd(seq, k+2, precIs)
		if lo == i {
			return nil, c.syntax(seq[i])
		}
		if hi == k+2 {
			return nil, c.syntax(nodeAt(seq, hi))
		}
		first := seq[lo].tok
		seq[lo].tok.sp = false
		seq[k+2].tok.sp = false
		cmp := []*node{parenNode(clone(seq[lo:i]), first, false), rawNode("<=>", seq[i].tok, true), parenNode(clone(seq[k+2:hi]), seq[k+2].tok, true)}
		var repl *node
		if not {
			repl = parenNode(cmp, first, first.sp)
		} else {
			repl = parenNode([]*node{rawNode("NOT", seq[i].tok, false), parenNode(cmp, first, true)}, first, first.sp)
		}
		seq = splice(seq, lo, hi, repl)
		i = lo
	}
	return seq, nil
}

// withinGroup turns the ordered-set aggregates percentile_cont(f) WITHIN
// GROUP (ORDER BY x [ASC | DESC] [NULLS ...]), percentile_disc(f) likewise
// and mode() WITHIN GROUP (ORDER BY x) into GROUP_CONCAT(pg__percentile_cont(x,
// f) ORDER BY x ... SEPARATOR ""), as firstLastValue does; the binder unwraps it.
func withinGroup(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+4 < len(seq); i++ {
		if !seq[i].kwIn("percentile_cont", "percentile_disc", "mode", "approx_percentile") || !seq[i+1].isParen() ||
			!seq[i+2].kw("within") || !seq[i+3].kw("group") || !seq[i+4].isParen() || (i > 0 && seq[i-1].isPunct(".")) {
			continue
		}
		if i+5 < len(seq) && seq[i+5].kw("over") {
			return nil, types.ErrorAt(types.ErrWrongObjectType, charPos(c.src, seq[i+5].tok.pos),
				"OVER is not supported for ordered-set aggregate %s", strings.ToLower(seq[i].tok.val))
		}
		order := seq[i+4].kids
		if len(order) < 3 || !order[0].kw("order") || !order[1].kw("by") {
			return nil, c.syntax(nodeAt(order, 0))
		}
		if len(splitCommas(order[2:])) != 1 {
			continue // several sort keys: no such function, as PostgreSQL says
		}
		k := 2
		for k < len(order) && !order[k].kwIn("asc", "desc", "nulls", "using") {
			k++
		}
		at := seq[i].tok
		key := clone(order[2:k])
		key[0] = &node{group: key[0].group, kids: key[0].kids, tok: key[0].tok, close: key[0].close}
		key[0].tok.sp = false
		args := [][]*node{key}
		if direct := seq[i+1].kids; len(direct) > 0 {
			direct = clone(direct)
			direct[0] = &node{group: direct[0].group, kids: direct[0].kids, tok: direct[0].tok, close: direct[0].close}
			direct[0].tok.sp = true
			args = append(args, direct)
		}
		inner := callNode("pg__"+strings.ToLower(at.val), at, false, args...)
		order[0].tok.sp = true
		kids := cat(inner, order, one(rawNode("SEPARATOR", at, true)), one(strNode("", at)))
		call := []*node{rawNode("GROUP_CONCAT", at, at.sp), parenNode(kids, seq[i+1].tok, false)}
		seq = splice(seq, i, i+5, call...)
	}
	return seq, nil
}

// filterClause turns agg(...) FILTER (WHERE c) into pg__filter(agg(...), c),
// agg(...) WITHIN GROUP (...) included.
func filterClause(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 2; i+1 < len(seq); i++ {
		if !seq[i].kw("filter") || !seq[i+1].isParen() || !seq[i-1].isParen() || !seq[i-2].isIdent() {
			continue
		}
		g := seq[i+1]
		if len(g.kids) < 2 || !g.kids[0].kw("where") {
			return nil, c.syntax(nodeAt(g.kids, 0))
		}
		name := i - 2
		if i >= 5 && seq[i-2].kw("group") && seq[i-3].kw("within") && seq[i-4].isParen() && seq[i-5].isIdent() {
			name = i - 5 // agg(f) WITHIN GROUP (ORDER BY x) FILTER (...), which withinGroup rewrites next
		}
		start := nameChainStart(seq, name)
		first := seq[start].tok
		seq[start].tok.sp = false
		g.kids[1].tok.sp = true
		call := callNode("pg__filter", first, first.sp, clone(seq[start:i]), g.kids[1:])
		seq = splice(seq, start, i+2, call...)
		i = start
	}
	return seq, nil
}

// stringAgg turns string_agg(a, 'sep' [ORDER BY ...]) into
// GROUP_CONCAT(a [ORDER BY ...] SEPARATOR 'sep'), and string_agg(a, sep
// ORDER BY ...) with a separator other than a literal into
// GROUP_CONCAT(pg__string_agg(a, sep) ORDER BY ... SEPARATOR "") (an empty separator).
func stringAgg(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if !seq[i].kw("string_agg") || !seq[i+1].isParen() || (i > 0 && seq[i-1].isPunct(".")) {
			continue
		}
		g := seq[i+1]
		body := g.kids
		var order []*node
		for k := 0; k+1 < len(body); k++ {
			if body[k].kw("order") && body[k+1].kw("by") {
				order = body[k:]
				body = body[:k]
				break
			}
		}
		args := splitCommas(body)
		if len(args) == 2 && len(order) > 0 && (len(args[1]) != 1 || args[1][0].group || args[1][0].tok.kind != tkString) {
			// A separator that is not a literal: as firstLastValue does.
			at := seq[i].tok
			order[0].tok.sp = true
			g.kids = cat(callNode("pg__string_agg", body[0].tok, false, clone(body)), order,
				one(rawNode("SEPARATOR", at, true)), one(strNode("", at)))
			seq[i] = rawNode("GROUP_CONCAT", at, at.sp)
			continue
		}
		if len(args) != 2 || len(args[1]) != 1 || args[1][0].group || args[1][0].tok.kind != tkString {
			continue
		}
		sep := args[1][0]
		sep.tok.sp = true
		g.kids = cat(args[0], order, one(rawNode("SEPARATOR", sep.tok, true)), one(sep))
		seq[i] = rawNode("GROUP_CONCAT", seq[i].tok, seq[i].tok.sp)
	}
	return seq, nil
}

// firstLastValue turns the aggregates first_value(a [ORDER BY ...]) and
// last_value(...) (RisingWave's; without OVER), and array_agg(a ORDER BY
// ...) and array_agg(DISTINCT a), into
// GROUP_CONCAT(pg__first_value(a) [ORDER BY ...] SEPARATOR ""), the one
// aggregate form TiDB's grammar gives an ORDER BY; the binder unwraps it.
func firstLastValue(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if !seq[i].kwIn("first_value", "last_value", "array_agg", "jsonb_agg", "json_agg", "jsonb_object_agg", "json_object_agg") || !seq[i+1].isParen() || (i > 0 && seq[i-1].isPunct(".")) {
			continue
		}
		if i+2 < len(seq) && seq[i+2].kw("over") {
			if seq[i].kw("array_agg") && len(seq[i+1].kids) > 0 && !seq[i+1].kids[0].kw("distinct") {
				// array_agg(x) OVER (...): max(pg__array_agg(x)) OVER (...), which TiDB parses.
				at := seq[i].tok
				seq[i+1].kids = callNode("pg__array_agg", seq[i+1].kids[0].tok, false, clone(seq[i+1].kids))
				seq[i] = rawNode("MAX", at, at.sp)
			}
			continue // the window function
		}
		g := seq[i+1]
		body := g.kids
		var order []*node
		for k := 0; k+1 < len(body); k++ {
			if body[k].kw("order") && body[k+1].kw("by") {
				order = body[k:]
				body = body[:k]
				break
			}
		}
		listAgg := !seq[i].kwIn("first_value", "last_value")
		if len(body) == 0 || listAgg && len(order) == 0 && !body[0].kw("distinct") {
			continue
		}
		at := seq[i].tok
		var distinct []*node
		if body[0].kw("distinct") && len(body) > 1 {
			distinct, body = one(body[0]), body[1:]
		}
		inner := callNode("pg__"+strings.ToLower(seq[i].tok.val), body[0].tok, len(distinct) > 0, clone(body))
		if len(order) > 0 {
			order[0].tok.sp = true
		}
		g.kids = cat(distinct, inner, order, one(rawNode("SEPARATOR", at, true)), one(strNode("", at)))
		seq[i] = rawNode("GROUP_CONCAT", at, at.sp)
	}
	return seq, nil
}

// windowArgs turns lag, lead, nth_value and ntile calls with OVER whose
// offset or count is an expression, not a number (TiDB's grammar takes only
// a number or a parameter there), into max(pg__lag(...)) OVER ...: an
// aggregate with a window, which the binder unwraps.
func windowArgs(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+2 < len(seq); i++ {
		if !seq[i].kwIn("lag", "lead", "nth_value", "ntile") || !seq[i+1].isParen() || !seq[i+2].kw("over") ||
			(i > 0 && seq[i-1].isPunct(".")) {
			continue
		}
		args := splitCommas(seq[i+1].kids)
		k := 1 // the argument TiDB needs to be a number
		if seq[i].kw("ntile") {
			k = 0
		}
		if len(args) <= k || len(args[k]) == 1 && !args[k][0].group && args[k][0].tok.kind == tkNumber {
			continue
		}
		at := seq[i].tok
		inner := callNode("pg__"+strings.ToLower(at.val), at, false, args...)
		seq[i] = rawNode("MAX", at, at.sp)
		seq[i+1] = parenNode(inner, seq[i+1].tok, seq[i+1].tok.sp)
	}
	return seq, nil
}

// windowExclude moves a window frame's EXCLUDE CURRENT ROW | GROUP | TIES
// (which TiDB's grammar lacks) into a marker partition key,
// pg__exclude('group'), that the binder takes out again; EXCLUDE NO OTHERS
// is the default and is dropped.
func windowExclude(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if !seq[i].kwIn("over", "as") || !seq[i+1].isParen() {
			continue
		}
		g := seq[i+1]
		kids := g.kids
		at, n := -1, 0
		var mode string
		for k := 0; k+1 < len(kids); k++ {
			if !kids[k].kw("exclude") {
				continue
			}
			switch {
			case kids[k+1].kw("current") && k+2 < len(kids) && kids[k+2].kw("row"):
				mode, n = "current row", 3
			case kids[k+1].kw("group"):
				mode, n = "group", 2
			case kids[k+1].kw("ties"):
				mode, n = "ties", 2
			case kids[k+1].kw("no") && k+2 < len(kids) && kids[k+2].kw("others"):
				mode, n = "", 3
			default:
				continue // a column named exclude
			}
			at = k
			break
		}
		if at < 0 {
			continue
		}
		kids = append(slices.Clone(kids[:at]), kids[at+n:]...)
		if mode != "" {
			tok := g.tok
			marker := callNode("pg__exclude", tok, true, one(strNode(mode, tok)))
			pos := -1
			for k := 0; k+1 < len(kids); k++ {
				if kids[k].kw("partition") && kids[k+1].kw("by") {
					pos = k + 2
					for pos < len(kids) && !kids[pos].kwIn("order", "rows", "range", "groups") {
						pos++
					}
					marker = cat(one(synth(tkPunct, ",", tok, false)), marker)
					break
				}
			}
			if pos < 0 {
				// After a window name the spec starts with, else first.
				pos = 0
				if len(kids) > 0 && kids[0].isIdent() && !kids[0].kwIn("partition", "order", "rows", "range", "groups") {
					pos = 1
				}
				marker = cat(one(rawNode("PARTITION BY", tok, true)), marker)
			}
			kids = append(kids[:pos:pos], append(marker, kids[pos:]...)...)
		}
		g.kids = kids
	}
	return seq, nil
}

// nullsOrdering turns "e [ASC|DESC] NULLS FIRST|LAST" in ORDER BY into
// "pg__nulls_first(e) [ASC|DESC]" / "pg__nulls_last(e) [ASC|DESC]".
func nullsOrdering(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if !seq[i].kw("nulls") || !seq[i+1].kwIn("first", "last") {
			continue
		}
		s := i - 1
		for s >= 0 && !seq[s].isPunct(",") && !(seq[s].kw("by") && s > 0 && seq[s-1].kw("order")) {
			s--
		}
		s++
		end := i
		var dir []*node
		if end > s && seq[end-1].kwIn("asc", "desc") {
			dir = one(seq[end-1])
			end--
		}
		if end == s {
			return nil, c.syntax(seq[i])
		}
		name := "pg__nulls_first"
		if seq[i+1].kw("last") {
			name = "pg__nulls_last"
		}
		first := seq[s].tok
		seq[s].tok.sp = false
		call := callNode(name, first, first.sp, clone(seq[s:end]))
		seq = splice(seq, s, i+2, cat(call, dir)...)
		i = s
	}
	return seq, nil
}

// powerOperator turns a ^ b (PostgreSQL's exponentiation; MySQL's XOR) into
// pg__pow(a, b): power(a, b), told apart from a call of power so the column
// is named ?column? as an operator's.
func powerOperator(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		if !n.isOp("^") {
			continue
		}
		lo := operandStart(seq, i, precPow+1)
		hi := operandEnd(seq, i+1, precPow)
		if lo == i || hi == i+1 {
			return nil, c.syntax(n)
		}
		first := seq[lo].tok
		call := callNode("pg__pow", first, first.sp, clone(seq[lo:i]), clone(seq[i+1:hi]))
		seq = splice(seq, lo, hi, call...)
		i = lo
	}
	return seq, nil
}

// xorOperator turns a # b (PostgreSQL's bitwise XOR, of "any other
// operator" precedence; a comment to TiDB) into ((a) ^ (b)), TiDB's XOR,
// parenthesized to keep PostgreSQL's precedence. It runs after
// powerOperator, which turns PostgreSQL's own ^ into power().
func xorOperator(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		if !n.isOp("#") {
			continue
		}
		lo := operandStart(seq, i, precOther+1)
		hi := operandEnd(seq, i+1, precOther+1)
		if lo == i || hi == i+1 {
			return nil, c.syntax(n)
		}
		first := seq[lo].tok
		x := cat(one(rawNode("((", first, first.sp)), clone(seq[lo:i]), one(rawNode(") ^ (", n.tok, true)),
			clone(seq[i+1:hi]), one(rawNode("))", n.tok, false)))
		seq = splice(seq, lo, hi, x...)
		i = lo + len(x) - 1
	}
	return seq, nil
}

// atTimeZone turns x AT TIME ZONE z into PostgreSQL's equivalent call
// timezone(z, x).
func atTimeZone(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+2 < len(seq); i++ {
		if !seq[i].kw("at") || !seq[i+1].kw("time") || !seq[i+2].kw("zone") {
			continue
		}
		lo := primaryStart(seq, i)
		hi := operandEnd(seq, i+3, precUnary)
		if lo == i {
			return nil, c.syntax(seq[i])
		}
		if hi == i+3 {
			return nil, c.syntax(nodeAt(seq, hi))
		}
		first := seq[lo].tok
		call := callNode("timezone", first, first.sp, clone(seq[i+3:hi]), clone(seq[lo:i]))
		seq = splice(seq, lo, hi, call...)
		i = lo
	}
	return seq, nil
}

// extractField turns EXTRACT(field FROM x) into date_part('field', x), which
// also covers the fields MySQL lacks (epoch, dow, doy, ...).
func extractField(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if !seq[i].kw("extract") || !seq[i+1].isParen() || (i > 0 && seq[i-1].isPunct(".")) {
			continue
		}
		kids := seq[i+1].kids
		if len(kids) < 3 || !kids[1].kw("from") || !(kids[0].isIdent() || (!kids[0].group && kids[0].tok.kind == tkString)) {
			return nil, c.syntax(nodeAt(kids, 0))
		}
		field := strNode(strings.ToLower(kids[0].tok.val), kids[0].tok)
		call := callNode("pg__extract", seq[i].tok, seq[i].tok.sp, one(field), kids[2:])
		seq = splice(seq, i, i+2, call...)
		i++
	}
	return seq, nil
}

// similarTo turns x [NOT] SIMILAR TO p [ESCAPE e] into
// [NOT] pg__similar(x, p [, e]) (TiDB's grammar has no SIMILAR TO).
func similarTo(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if !seq[i].kw("similar") || !seq[i+1].kw("to") {
			continue
		}
		start := i
		not := i > 0 && seq[i-1].kw("not")
		if not {
			start = i - 1
		}
		lo := operandStart(seq, start, precLike)
		hi := operandEnd(seq, i+2, precLike)
		if lo == start || hi == i+2 {
			return nil, c.syntax(nodeAt(seq, hi))
		}
		args := [][]*node{clone(seq[lo:start]), clone(seq[i+2 : hi])}
		end := hi
		if hi < len(seq) && seq[hi].kw("escape") {
			end = operandEnd(seq, hi+1, precLike)
			if end == hi+1 {
				return nil, c.syntax(nodeAt(seq, end))
			}
			args = append(args, clone(seq[hi+1:end]))
		}
		first := seq[lo].tok
		call := callNode("pg__similar", first, false, args...)
		if not {
			call[0].tok.sp = true
			call = cat(one(rawNode("NOT", first, false)), call)
		}
		seq = splice(seq, lo, end, parenNode(call, first, first.sp))
		i = lo
	}
	return seq, nil
}

// aggregateWrap turns RisingWave's aggregate:f(args [ORDER BY ...]), a
// scalar function over an array used as an aggregate, into
// f(array_agg(args [ORDER BY ...])).
func aggregateWrap(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+3 < len(seq); i++ {
		if !seq[i].kw("aggregate") || !seq[i+1].isPunct(":") || !seq[i+2].isIdent() || !seq[i+3].isParen() || (i > 0 && seq[i-1].isPunct(".")) {
			continue
		}
		at := seq[i].tok
		name, g := seq[i+2], seq[i+3]
		// A plain (not synthetic) word, so the ordered-aggregate rules see array_agg.
		agg := &node{tok: token{kind: tkIdent, val: "array_agg", pos: name.tok.pos, end: name.tok.end}}
		inner := []*node{agg, parenNode(g.kids, g.tok, false)}
		name.tok.sp = at.sp
		repl := []*node{name, parenNode(inner, g.tok, false)}
		seq = append(seq[:i], append(repl, seq[i+4:]...)...)
	}
	return seq, nil
}
