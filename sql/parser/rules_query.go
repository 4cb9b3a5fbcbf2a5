package parser

import (
	"strconv"

	"github.com/tributary/tributary/sql/types"
)

// maxLimit stands in for "no limit" when only OFFSET is given.
const maxLimit = "18446744073709551615"

// isNegativeNumber reports whether seq is "-" followed by a nonzero number.
func isNegativeNumber(seq []*node) bool {
	if len(seq) != 2 || !seq[0].isOp("-") || seq[1].group || seq[1].tok.kind != tkNumber {
		return false
	}
	f, err := strconv.ParseFloat(seq[1].tok.val, 64)
	return err == nil && f != 0
}

// limitOffset normalises the row-limiting tail: LIMIT ALL is dropped,
// OFFSET n [ROW|ROWS] and FETCH {FIRST|NEXT} [n] {ROW|ROWS} ONLY become
// TiDB's LIMIT n OFFSET m (with an unbounded LIMIT when only OFFSET is given).
// FETCH ... WITH TIES, which needs an ORDER BY (42601 without one), also adds
// a last ORDER BY item pg__with_ties(), a marker the binder takes out.
func limitOffset(c *rewriteCtx, seq []*node) ([]*node, error) {
	start := -1
	for i, n := range seq {
		if n.kwIn("limit", "offset", "fetch") {
			start = i
			break
		}
	}
	if start < 0 {
		return seq, nil
	}
	var limit, offset []*node
	var ties *node
	changed := false
	i := start
	for i < len(seq) {
		n := seq[i]
		switch {
		case n.kw("limit"):
			if i+1 < len(seq) && seq[i+1].kw("all") {
				changed = true
				i += 2
				continue
			}
			end := operandEnd(seq, i+1, precLowest)
			if end == i+1 {
				return nil, c.syntax(nodeAt(seq, i+1))
			}
			if end < len(seq) && seq[end].isPunct(",") { // MySQL's LIMIT m, n
				return nil, &types.Error{Kind: types.ErrSyntax, Pos: charPos(c.src, n.tok.pos),
					Msg: "LIMIT #,# syntax is not supported", Hint: "Use separate LIMIT and OFFSET clauses."}
			}
			limit = seq[i+1 : end]
			i = end
		case n.kw("offset"):
			end := operandEnd(seq, i+1, precLowest)
			if end == i+1 {
				return nil, c.syntax(nodeAt(seq, i+1))
			}
			offset = seq[i+1 : end]
			i = end
			if i < len(seq) && seq[i].kwIn("row", "rows") {
				i++
			}
			changed = true
		case n.kw("fetch"):
			if i+1 >= len(seq) || !seq[i+1].kwIn("first", "next") {
				return nil, c.syntax(nodeAt(seq, i+1))
			}
			end := i + 2
			if end < len(seq) && !seq[end].kwIn("row", "rows") {
				end = operandEnd(seq, i+2, precLowest)
				limit = seq[i+2 : end]
			} else {
				limit = one(synth(tkNumber, "1", n.tok, true))
			}
			if end >= len(seq) || !seq[end].kwIn("row", "rows") {
				return nil, c.syntax(nodeAt(seq, end))
			}
			end++
			if end < len(seq) && seq[end].kw("only") {
				end++
			} else if end+1 < len(seq) && seq[end].kw("with") && seq[end+1].kw("ties") {
				ties = seq[end]
				end += 2
			} else {
				return nil, c.syntax(nodeAt(seq, end))
			}
			i = end
			changed = true
		default:
			goto done
		}
	}
done:
	// A negative constant count is PostgreSQL's run-time error (TiDB's
	// grammar would call it a syntax error).
	if isNegativeNumber(limit) {
		return nil, types.Errorf(types.ErrInvalidLimit, "LIMIT must not be negative")
	}
	if isNegativeNumber(offset) {
		return nil, types.Errorf(types.ErrInvalidOffset, "OFFSET must not be negative")
	}
	if !changed {
		return seq, nil
	}
	at := seq[start].tok
	var tail []*node
	if ties != nil {
		ordered := false
		for k := 0; k+1 < start; k++ {
			if seq[k].kw("order") && seq[k+1].kw("by") {
				ordered = true
			}
		}
		if !ordered {
			return nil, types.ErrorAt(types.ErrSyntax, charPos(c.src, ties.tok.pos), "WITH TIES cannot be specified without ORDER BY clause")
		}
		tail = cat(one(synth(tkPunct, ",", at, false)), callNode("pg__with_ties", at, true))
	}
	if limit == nil && offset != nil {
		limit = one(synth(tkNumber, maxLimit, at, true))
	}
	if limit != nil {
		limit[0].tok.sp = true
		tail = cat(tail, one(rawNode("LIMIT", at, true)), limit)
	}
	if offset != nil {
		offset[0].tok.sp = true
		tail = cat(tail, one(rawNode("OFFSET", at, true)), offset)
	}
	return splice(seq, start, i, tail...), nil
}

// distinctOn turns SELECT DISTINCT ON (a, b) items into
// SELECT pg__distinct_on(a, b), items.
func distinctOn(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+2 < len(seq); i++ {
		if !seq[i].kw("distinct") || !seq[i+1].kw("on") || !seq[i+2].isParen() {
			continue
		}
		g := seq[i+2]
		if len(g.kids) == 0 {
			return nil, c.syntax(g.close.node())
		}
		call := callNode("pg__distinct_on", seq[i].tok, seq[i].tok.sp, g.kids)
		seq = splice(seq, i, i+3, append(call, synth(tkPunct, ",", g.close, false))...)
	}
	return seq, nil
}

// defaultValues turns INSERT ... DEFAULT VALUES into INSERT ... () VALUES ().
func defaultValues(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		if seq[i].kw("default") && seq[i+1].kw("values") {
			at := seq[i].tok
			seq = splice(seq, i, i+2, parenNode(nil, at, true), rawNode("VALUES", at, true), parenNode(nil, at, true))
		}
	}
	return seq, nil
}

// quoteWords are reserved in TiDB (MySQL) but plain column names in
// PostgreSQL; used as identifiers (not followed by "(") they are quoted.
var quoteWords = map[string]bool{}

func init() {
	for _, w := range []string{
		"add", "alter", "call", "cascade", "change", "continue", "cursor", "database", "databases",
		"day_hour", "day_microsecond", "day_minute", "day_second", "delayed", "describe", "distinctrow",
		"div", "drop", "dual", "elseif", "enclosed", "escaped", "exit", "explain", "force", "fulltext",
		"generated", "high_priority", "hour_microsecond", "hour_minute", "hour_second", "if", "ignore",
		"index", "infile", "inout", "iterate", "key", "keys", "kill", "leave", "linear", "lines", "load",
		"lock", "long", "low_priority", "match", "maxvalue", "minute_microsecond", "minute_second",
		"mod", "no_write_to_binlog", "optimize", "option", "optionally", "out", "outfile", "procedure",
		"rank", "dense_rank", "row_number", "percent_rank", "cume_dist", "ntile", "lag", "lead",
		"first_value", "last_value", "nth_value", "read", "release", "rename", "repeat", "replace",
		"require", "restrict", "revoke", "rlike", "regexp", "second_microsecond", "show", "spatial",
		"sql", "sqlexception", "sqlstate", "sqlwarning", "ssl", "starting", "stored", "straight_join",
		"terminated", "trigger", "unlock", "unsigned", "until", "usage", "use", "utc_date", "utc_time",
		"utc_timestamp", "virtual", "while", "write", "xor", "year_month", "zerofill", "tidb_current_tso",
		"blob", "tinyblob", "mediumblob", "longblob", "tinytext", "mediumtext", "longtext", "middleint",
		"mediumint", "tinyint", "int1", "int2", "int3", "int4", "int8", "float4", "float8", "varbinary",
		"varcharacter", "sql_big_result", "sql_calc_found_rows", "sql_small_result",
	} {
		quoteWords[w] = true
	}
}

// contextWords are TiDB-reserved words that are keywords in PostgreSQL
// queries only in some positions; elsewhere they are column names.
var contextWords = map[string]func(seq []*node, i int) bool{
	"partition": func(seq []*node, i int) bool { return nodeIs(seq, i+1, "by") },
	"range":     frameKeyword,
	"rows":      frameKeyword,
	"groups":    frameKeyword,
	"row": func(seq []*node, i int) bool {
		return nodeIs(seq, i-1, "current") || nodeIs(seq, i+1, "only") || (i+1 < len(seq) && seq[i+1].isParen())
	},
	"over": func(seq []*node, i int) bool { return i > 0 && seq[i-1].isParen() },
	// BY is a keyword after GROUP, ORDER and PARTITION only: PostgreSQL
	// takes it as a column name elsewhere.
	"by": func(seq []*node, i int) bool { return i > 0 && seq[i-1].kwIn("group", "order", "partition") },
	"window": func(seq []*node, i int) bool {
		return i+2 < len(seq) && seq[i+1].isIdent() && seq[i+2].kw("as")
	},
}

// typeWords are TiDB-reserved type names PostgreSQL also takes as column
// names (its col_name_keywords): casts and typed literals are rewritten
// before quoteReserved, so one is a type name only before a string
// (a typed literal) or, for double, before PRECISION.
var typeWords = []string{"real", "dec", "double", "float", "numeric", "decimal", "integer", "bigint", "smallint", "varchar", "char", "interval"}

func init() {
	for _, w := range typeWords {
		contextWords[w] = func(seq []*node, i int) bool {
			return i+1 < len(seq) && !seq[i+1].group && (seq[i+1].tok.kind == tkString || seq[i+1].kw("precision"))
		}
	}
}

func nodeIs(seq []*node, i int, w string) bool { return i >= 0 && i < len(seq) && seq[i].kw(w) }

// frameKeyword reports whether RANGE/ROWS/GROUPS at seq[i] starts a window
// frame or ends a FETCH clause.
func frameKeyword(seq []*node, i int) bool {
	if nodeIs(seq, i+1, "between") || nodeIs(seq, i+1, "unbounded") || nodeIs(seq, i+1, "current") || nodeIs(seq, i+1, "only") {
		return true
	}
	if nodeIs(seq, i+2, "preceding") || nodeIs(seq, i+2, "following") {
		return true
	}
	return i > 0 && !seq[i-1].group && (seq[i-1].tok.kind == tkNumber || seq[i-1].kwIn("first", "next"))
}

// quoteReserved quotes TiDB-reserved words used as identifiers.
func quoteReserved(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i, n := range seq {
		if n.group || n.tok.kind != tkIdent || n.tok.synth {
			continue
		}
		if isKw, ok := contextWords[n.tok.val]; ok {
			if !isKw(seq, i) && !(i+1 < len(seq) && seq[i+1].isParen()) {
				n.tok.quote = true
			}
			continue
		}
		if !quoteWords[n.tok.val] {
			continue
		}
		if i+1 < len(seq) && seq[i+1].isParen() && !(i > 0 && seq[i-1].kwIn("as", "into", "table", "update")) {
			continue // a function call
		}
		n.tok.quote = true
	}
	return seq, nil
}

// valuesLists turns a VALUES list used as a query (a top-level statement or
// a parenthesised subquery, optionally aliased "AS v(a, b)") into
// SELECT ... AS a, ... UNION ALL SELECT ...; INSERT's VALUES is left alone.
func valuesLists(c *rewriteCtx, seq []*node) ([]*node, error) {
	var err error
	if c.depth == 0 && len(seq) > 0 && seq[0].kw("values") {
		if seq, err = valuesToSelect(c, seq, nil); err != nil {
			return nil, err
		}
	}
	for i := 0; i < len(seq); i++ {
		g := seq[i]
		if !g.isParen() || len(g.kids) == 0 || !g.kids[0].kw("values") || (i > 0 && isAtom(seq[i-1])) {
			continue
		}
		if i > 0 && (seq[i-1].isParen() || seq[i-1].kwIn("into", "table")) {
			continue // INSERT INTO t (cols) (VALUES ...) is not ours to touch
		}
		var cols []string
		j := i + 1
		if j < len(seq) && seq[j].kw("as") {
			j++
		}
		if j+1 < len(seq) && seq[j].isIdent() && seq[j+1].isParen() {
			for _, part := range splitCommas(seq[j+1].kids) {
				if len(part) != 1 || !part[0].isIdent() {
					return nil, c.syntax(nodeAt(part, 0))
				}
				cols = append(cols, part[0].tok.val)
			}
			seq = splice(seq, j+1, j+2)
		}
		if g.kids, err = valuesToSelect(c, g.kids, cols); err != nil {
			return nil, err
		}
	}
	return seq, nil
}

func valuesToSelect(c *rewriteCtx, seq []*node, cols []string) ([]*node, error) {
	at := seq[0].tok
	var rows [][][]*node
	i := 1
	for i < len(seq) {
		if !seq[i].isParen() {
			return nil, c.syntax(seq[i])
		}
		rows = append(rows, splitCommas(seq[i].kids))
		i++
		if i < len(seq) && seq[i].isPunct(",") {
			i++
			continue
		}
		break
	}
	if len(rows) == 0 {
		return nil, c.syntax(nodeAt(seq, 1))
	}
	width := len(rows[0])
	var out []*node
	for r, row := range rows {
		if len(row) != width {
			return nil, syntaxErrMsg(c.src, seq[1+2*r].tok, "VALUES lists must all be the same length")
		}
		if r > 0 {
			out = append(out, rawNode("UNION", at, true), rawNode("ALL", at, true))
		}
		out = append(out, rawNode("SELECT", at, r > 0 || at.sp))
		for k, item := range row {
			if len(item) == 0 {
				return nil, c.syntax(seq[1+2*r])
			}
			if k > 0 {
				out = append(out, synth(tkPunct, ",", item[0].tok, false))
			}
			item[0].tok.sp = true
			out = append(out, item...)
			if r == 0 {
				name := "column" + strconv.Itoa(k+1)
				if k < len(cols) {
					name = cols[k]
				}
				out = append(out, rawNode("AS", item[0].tok, true), synth(tkQIdent, name, item[0].tok, true))
			}
		}
	}
	return append(out, seq[i:]...), nil
}

// fromFunctions replaces a function call in FROM (generate_series, tumble,
// hop, unnest, ...) with a placeholder table pg__tablefunc_<n> keeping the
// alias; the call is recorded for Query.TableFuncs.
func fromFunctions(c *rewriteCtx, seq []*node) ([]*node, error) {
	inFrom := false
	itemStart := false
	query := false // FROM inside a call's arguments (EXTRACT, TRIM) is no FROM clause
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		if n.kwIn("select", "delete") {
			query = true
		}
		switch {
		case n.kw("from") && query:
			inFrom, itemStart = true, true
			continue
		case n.kwIn("where", "group", "having", "order", "limit", "offset", "window", "union", "intersect",
			"except", "on", "using", "returning", "set", "fetch", "for", "select", "values"):
			inFrom, itemStart = false, false
			continue
		case inFrom && (n.isPunct(",") || n.kwIn("join", "lateral")):
			itemStart = true
			continue
		}
		if !inFrom || !itemStart {
			continue
		}
		itemStart = false
		if !n.isIdent() {
			continue
		}
		j := i
		for j+2 < len(seq) && seq[j+1].isPunct(".") && seq[j+2].isIdent() {
			j += 2
		}
		if j+1 >= len(seq) || !seq[j+1].isParen() {
			continue
		}
		g := seq[j+1]
		pf := &pendingFunc{placeholder: placeholderName(len(c.funcs) + 1), name: seq[j].tok.val}
		if len(g.kids) > 0 {
			pf.args = splitCommas(g.kids)
		}
		c.funcs = append(c.funcs, pf)
		repl := []*node{rawNode(pf.placeholder, n.tok, n.tok.sp)}
		k := j + 2
		if k+1 < len(seq) && seq[k].kw("with") && seq[k+1].kw("ordinality") {
			pf.ordinality = true
			seq = splice(seq, k, k+2)
		}
		hasAs := k < len(seq) && seq[k].kw("as")
		if hasAs {
			k++
		}
		if k < len(seq) && seq[k].isIdent() && (hasAs || !clauseWords[seq[k].tok.val] || seq[k].tok.kind == tkQIdent) {
			if k+1 < len(seq) && seq[k+1].isParen() {
				for _, part := range splitCommas(seq[k+1].kids) {
					if len(part) != 1 || !part[0].isIdent() {
						return nil, c.syntax(nodeAt(part, 0))
					}
					pf.aliases = append(pf.aliases, part[0].tok.val)
				}
				seq = splice(seq, k+1, k+2)
			}
		} else if hasAs {
			return nil, c.syntax(nodeAt(seq, k))
		} else {
			repl = append(repl, rawNode("AS", n.tok, true), synth(tkQIdent, pf.name, n.tok, true))
		}
		lo := i
		if i > 0 && seq[i-1].kw("lateral") { // calls in FROM are implicitly LATERAL
			lo = i - 1
		}
		seq = splice(seq, lo, j+2, repl...)
		i = lo
	}
	return seq, nil
}

// corresponding turns RisingWave's "UNION [ALL] CORRESPONDING [BY (a, b)]
// SELECT ..." into "UNION [ALL] SELECT pg__corresponding(a, b), ...": the
// marker, first in the right-hand SELECT list, tells the binder to match the
// two sides' columns by name.
func corresponding(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		if !seq[i].kw("corresponding") || i == 0 || !seq[i-1].kwIn("union", "all", "distinct", "intersect", "except") {
			continue
		}
		at := seq[i]
		end := i + 1
		var cols []*node
		if nodeIs(seq, end, "by") {
			if end+1 >= len(seq) || !seq[end+1].isParen() || len(seq[end+1].kids) == 0 {
				return nil, c.syntax(seq[end])
			}
			cols = seq[end+1].kids
			end += 2
		}
		call := callNode("pg__corresponding", at.tok, true)
		if cols != nil {
			call = callNode("pg__corresponding", at.tok, true, cols)
		}
		call = append(call, synth(tkPunct, ",", at.tok, false))
		rest, ok := markSelect(seq[end:], call)
		if !ok {
			return nil, types.Errorf(types.ErrUnsupported, "CORRESPONDING must be followed by a SELECT")
		}
		seq = append(seq[:i:i], rest...)
		i--
	}
	return seq, nil
}

// markSelect inserts marker after the SELECT [DISTINCT|ALL] that starts seq,
// looking inside leading parentheses.
func markSelect(seq []*node, marker []*node) ([]*node, bool) {
	if len(seq) == 0 {
		return nil, false
	}
	if seq[0].isParen() {
		kids, ok := markSelect(seq[0].kids, marker)
		if ok {
			seq[0].kids = kids
		}
		return seq, ok
	}
	if !seq[0].kw("select") {
		return nil, false
	}
	k := 1
	if k < len(seq) && seq[k].kwIn("distinct", "all") {
		k++
	}
	return splice(seq, k, k, marker...), true
}

// changelogCTE turns RisingWave's "WITH c AS changelog FROM t" into
// "WITH c AS (SELECT pg__changelog(), * FROM t)": the marker tells the binder
// that the query is the relation's stream of changes. It also quotes the
// WITH list's names, which may be words TiDB reserves.
func changelogCTE(c *rewriteCtx, seq []*node) ([]*node, error) {
	for w := 0; w < len(seq); w++ {
		if !seq[w].kw("with") {
			continue
		}
		// The CTE list: name [(cols)] AS {(query) | changelog FROM rel}, ...
		i := w + 1
		if nodeIs(seq, i, "recursive") {
			i++
		}
		for i < len(seq) {
			if n := seq[i]; !n.group && n.tok.kind == tkIdent && !n.tok.synth {
				n.tok.quote = true // a name, even a word TiDB reserves (update, add)
			}
			i++
			if i < len(seq) && seq[i].isParen() {
				i++
			}
			if !nodeIs(seq, i, "as") {
				break
			}
			i++
			if nodeIs(seq, i, "changelog") && nodeIs(seq, i+1, "from") {
				end := i + 2
				for end < len(seq) && !seq[end].isPunct(",") && !seq[end].kw("select") {
					end++
				}
				if end == i+2 {
					return nil, c.syntax(seq[i+1])
				}
				at := seq[i].tok
				kids := []*node{rawNode("select", at, false)}
				kids = append(kids, callNode("pg__changelog", at, true)...)
				kids = append(kids, synth(tkPunct, ",", at, false), rawNode("*", at, true), rawNode("from", at, true))
				name := seq[i+2 : end]
				name[0].tok.sp = true
				kids = append(kids, name...)
				seq = splice(seq, i, end, parenNode(kids, at, true))
			}
			i++ // the query
			if i >= len(seq) || !seq[i].isPunct(",") {
				break
			}
			i++
		}
	}
	return seq, nil
}
