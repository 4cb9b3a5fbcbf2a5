package parser

// fullJoin rewrites "a FULL [OUTER] JOIN b ON cond" - which TiDB would read as
// a table aliased "full" - into "a JOIN b ON pg__full_join(cond)", which the
// binder plans as a full outer join. FULL JOIN ... USING is refused.
func fullJoin(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		if !seq[i].kw("full") {
			continue
		}
		j := i + 1
		if j < len(seq) && seq[j].kw("outer") {
			j++
		}
		if j >= len(seq) || !seq[j].kw("join") {
			continue
		}
		fullTok := seq[i].tok
		// Drop FULL [OUTER], keep JOIN.
		seq = splice(seq, i, j)
		on := -1
		for k := i + 1; k < len(seq); k++ {
			if seq[k].kw("on") {
				on = k
				break
			}
			if seq[k].kwIn("using", "join", "where", "natural") {
				break
			}
		}
		if on < 0 {
			return nil, c.unsupported(fullTok, "FULL JOIN is supported only with an ON condition")
		}
		end := on + 1
		for end < len(seq) && !seq[end].kwIn(joinEnders...) && !seq[end].isPunct(";") {
			end++
		}
		if end == on+1 {
			return nil, c.syntax(nodeAt(seq, end))
		}
		first := seq[on+1].tok
		call := callNode("pg__full_join", first, true, clone(seq[on+1:end]))
		seq = splice(seq, on+1, end, call...)
	}
	return seq, nil
}

// joinEnders are the keywords that end a join condition at the same nesting level.
var joinEnders = []string{"join", "inner", "left", "right", "full", "cross", "natural", "where", "group",
	"having", "order", "limit", "offset", "fetch", "union", "intersect", "except", "window", "returning", "on"}

// renamedFuncs are calls TiDB would misread: a || b (PIPES_AS_CONCAT) arrives
// as concat(a, b) and the two differ on NULL (|| yields NULL, concat() skips
// it), and div and mod are operator keywords in TiDB (mod(a, b) would be read
// as a % b, and named so).
var renamedFuncs = map[string]string{"concat": "pg__concat_fn", "div": "pg__div", "mod": "pg__mod"}

// concatFunction renames the calls in renamedFuncs so the binder can tell
// them from TiDB's readings.
func concatFunction(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+1 < len(seq); i++ {
		n := seq[i]
		if n.group || n.tok.kind != tkIdent || renamedFuncs[n.tok.val] == "" || !seq[i+1].isParen() {
			continue
		}
		if i > 0 && seq[i-1].isPunct(".") {
			continue
		}
		seq[i] = rawNode(renamedFuncs[n.tok.val], n.tok, n.tok.sp)
	}
	for i := 0; i+1 < len(seq); i++ {
		// TiDB reads NEXTVAL(seq) and its kin as its own sequence syntax
		// (a table name argument); quoted, they are ordinary calls.
		if n := seq[i]; !n.group && n.tok.kind == tkIdent && quotedFuncs[n.tok.val] && seq[i+1].isParen() && !(i > 0 && seq[i-1].isPunct(".")) {
			n.tok.quote = true
		}
	}
	return seq, nil
}

// quotedFuncs are PostgreSQL functions TiDB's grammar reserves.
var quotedFuncs = map[string]bool{"nextval": true, "currval": true, "setval": true, "lastval": true}

// aliasColumns removes the column list of "FROM (subquery) AS a(x, y)" and
// "FROM t AS a(x, y)" - TiDB accepts neither - recording it for
// Query.AliasColumns, which the binder applies to the FROM item named a.
func aliasColumns(c *rewriteCtx, seq []*node) ([]*node, error) {
	inFrom := false
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		switch {
		case n.kw("from"):
			inFrom = true
			continue
		case n.kwIn("where", "group", "having", "order", "limit", "offset", "window", "union", "intersect",
			"except", "returning", "set", "fetch", "for", "select", "values"):
			inFrom = false
			continue
		}
		if !inFrom || !n.kw("as") || i+2 >= len(seq) || !seq[i+1].isIdent() || !seq[i+2].isParen() {
			continue
		}
		var cols []string
		for _, part := range splitCommas(seq[i+2].kids) {
			if len(part) != 1 || !part[0].isIdent() {
				return nil, c.syntax(nodeAt(part, 0))
			}
			cols = append(cols, part[0].tok.val)
		}
		if c.aliasCols == nil {
			c.aliasCols = map[string][]string{}
		}
		c.aliasCols[seq[i+1].tok.val] = cols
		seq = splice(seq, i+2, i+3)
	}
	return seq, nil
}

// otherOperators maps PostgreSQL operators of the "any other operator" level
// to calls: TiDB gives || the wrong precedence ('a' || 1 + 2 must concatenate
// 3) and takes -> only after a column name.
var otherOperators = map[string]string{"||": "pg__concat_op", "->": "jsonb_get", "->>": "jsonb_get_text",
	"@>": "pg__contains", "<@": "pg__contained", "&&": "pg__overlap", "?": "jsonb_exists", "?|": "jsonb_exists_any",
	"?&": "jsonb_exists_all", "#>": "pg__json_path", "#>>": "pg__json_path_text", "#-": "pg__json_delete_path"}

// pgOperators rewrites a || b, a -> b and a ->> b (left-associative, binding
// looser than + and tighter than comparisons) into function calls.
func pgOperators(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i < len(seq); i++ {
		n := seq[i]
		if n.group || n.tok.kind != tkOp {
			continue
		}
		name, ok := otherOperators[n.tok.val]
		if !ok {
			continue
		}
		lo := operandStart(seq, i, precOther)
		hi := operandEnd(seq, i+1, precOther)
		if lo == i || hi == i+1 {
			return nil, c.syntax(n)
		}
		first := seq[lo].tok
		call := callNode(name, first, first.sp, clone(seq[lo:i]), clone(seq[i+1:hi]))
		seq = splice(seq, lo, hi, call...)
		i = lo
	}
	return seq, nil
}

// ProcTimeMarker is the function the systemTime rule puts in TiDB's AS OF
// TIMESTAMP clause for FOR SYSTEM_TIME AS OF PROCTIME(): the binder reads a
// table scanned with it as the lookup side of a temporal join.
const ProcTimeMarker = "pg__proctime"

// systemTime rewrites RisingWave's "t FOR SYSTEM_TIME AS OF PROCTIME() [[AS]
// alias]" (a temporal join's table, read as of processing time) into TiDB's
// "t [AS alias] AS OF TIMESTAMP pg__proctime()". Any other AS OF (time
// travel) is refused.
func systemTime(c *rewriteCtx, seq []*node) ([]*node, error) {
	for i := 0; i+3 < len(seq); i++ {
		if !seq[i].kw("for") || !seq[i+1].kw("system_time") || !seq[i+2].kw("as") || !seq[i+3].kw("of") {
			continue
		}
		forTok := seq[i].tok
		if i == 0 || !seq[i-1].isIdent() {
			return nil, c.syntax(seq[i])
		}
		j := i + 4
		if j+1 >= len(seq) || !seq[j].isIdent() || seq[j].tok.kind != tkIdent || seq[j].tok.val != "proctime" ||
			!seq[j+1].isParen() || len(seq[j+1].kids) > 0 {
			return nil, c.unsupported(forTok, "FOR SYSTEM_TIME AS OF supports only PROCTIME() (a temporal join); time travel is not supported")
		}
		seq = splice(seq, i, j+2)
		// After the alias (and its column list), if any.
		k := i
		if k < len(seq) && seq[k].kw("as") {
			k++
			if k >= len(seq) || !seq[k].isIdent() {
				return nil, c.syntax(nodeAt(seq, k))
			}
			k++
		} else if k < len(seq) && seq[k].isIdent() && (seq[k].tok.kind == tkQIdent || !clauseWords[seq[k].tok.val]) {
			k++
		}
		if k > i && k < len(seq) && seq[k].isParen() {
			k++
		}
		marker := append([]*node{rawNode("AS OF TIMESTAMP", forTok, true)}, callNode(ProcTimeMarker, forTok, true)...)
		seq = splice(seq, k, k, marker...)
		i = k + len(marker) - 1
	}
	return seq, nil
}
