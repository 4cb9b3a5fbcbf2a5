package parser

// Operand boundary scanning over a node list, following PostgreSQL's operator
// precedence (high to low): unary +/-, ^, * / %, binary + -, any other
// operator, BETWEEN/IN/LIKE, comparison, IS, NOT, AND/OR.
const (
	precLowest  = 0 // NOT, AND, OR
	precIs      = 1
	precCompare = 2
	precLike    = 3
	precOther   = 4
	precAdd     = 5
	precMul     = 6
	precPow     = 7
	precUnary   = 8
)

// clauseWords never belong to an operand.
var clauseWords = map[string]bool{
	"select": true, "from": true, "where": true, "group": true, "having": true, "order": true,
	"limit": true, "offset": true, "fetch": true, "window": true, "union": true, "intersect": true,
	"except": true, "returning": true, "on": true, "using": true, "as": true, "when": true,
	"then": true, "else": true, "and": true, "or": true, "not": true, "set": true, "values": true,
	"into": true, "join": true, "inner": true, "left": true, "right": true, "full": true,
	"cross": true, "natural": true, "lateral": true, "by": true, "asc": true, "desc": true,
	"nulls": true, "with": true, "distinct": true, "all": true, "any": true, "some": true,
	"in": true, "is": true, "like": true, "ilike": true, "similar": true, "between": true,
	"escape": true, "over": true, "filter": true, "partition": true, "rows": true, "range": true,
	"groups": true, "case": true, "end": true, "for": true, "collate": true, "do": true,
	"separator": true, "regexp": true, "rlike": true, "to": true, "symmetric": true,
}

// wordPrec gives the precedence of keyword operators.
var wordPrec = map[string]int{
	"and": precLowest, "or": precLowest, "not": precLowest, "is": precIs,
	"like": precLike, "ilike": precLike, "similar": precLike, "between": precLike, "in": precLike,
	"regexp": precCompare, "rlike": precCompare, "escape": precLike,
}

func opPrec(op string) int {
	switch op {
	case "<", ">", "=", "<=", ">=", "<>", "!=", "<=>":
		return precCompare
	case "+", "-":
		return precAdd
	case "*", "/", "%":
		return precMul
	case "^":
		return precPow
	}
	return precOther
}

// isAtom reports whether n can be (part of) an operand by itself: a literal,
// identifier, parameter, synthetic text, or a bracketed group.
func isAtom(n *node) bool {
	if n.group {
		return true
	}
	switch n.tok.kind {
	case tkQIdent, tkString, tkBits, tkNumber, tkParam, tkRaw:
		return true
	case tkIdent:
		return n.tok.synth || !clauseWords[n.tok.val]
	}
	return false
}

// binaryPrec returns the precedence of n as a binary operator, or -1.
func binaryPrec(n *node) int {
	if n.group {
		return -1
	}
	if n.tok.kind == tkOp && n.tok.val != "::" {
		return opPrec(n.tok.val)
	}
	if n.tok.kind == tkIdent && !n.tok.synth {
		if p, ok := wordPrec[n.tok.val]; ok {
			return p
		}
	}
	return -1
}

// endsOperand reports whether seq[j] can end an operand (so a following +/-
// is binary).
func endsOperand(seq []*node, j int) bool {
	if j < 0 {
		return false
	}
	n := seq[j]
	return isAtom(n) || n.kw("end") || n.kwIn("null", "true", "false")
}

// matchCaseBack returns the index of the CASE matching the END at j.
func matchCaseBack(seq []*node, j int) int {
	depth := 0
	for k := j; k >= 0; k-- {
		switch {
		case seq[k].kw("end"):
			depth++
		case seq[k].kw("case"):
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// matchCaseFwd returns the index of the END matching the CASE at j.
func matchCaseFwd(seq []*node, j int) int {
	depth := 0
	for k := j; k < len(seq); k++ {
		switch {
		case seq[k].kw("case"):
			depth++
		case seq[k].kw("end"):
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// operandStart returns where the left operand of a binary operator of
// precedence level at seq[i] begins (the operand is seq[start:i]).
func operandStart(seq []*node, i, level int) int {
	j := i - 1
	for j >= 0 {
		n := seq[j]
		switch {
		case n.kw("end"):
			k := matchCaseBack(seq, j)
			if k < 0 {
				return j + 1
			}
			j = k - 1
		case isAtom(n) || n.isPunct(".") || n.isOp("::") || n.kwIn("null", "true", "false"):
			j--
		default:
			p := binaryPrec(n)
			if p < 0 {
				return j + 1
			}
			if (n.isOp("-") || n.isOp("+")) && !endsOperand(seq, j-1) {
				p = precUnary
			}
			if p < level || (p == level && level <= precIs) {
				return j + 1
			}
			j--
		}
	}
	return 0
}

// operandEnd returns where the right operand of a binary operator of
// precedence level, starting at seq[i], ends (exclusive).
func operandEnd(seq []*node, i, level int) int {
	j := i
	expect := true
	for j < len(seq) {
		n := seq[j]
		if expect {
			switch {
			case n.isOp("-") || n.isOp("+") || n.isOp("~"):
				j++
			case n.kw("not") && level < precLowest:
				j++
			case n.kw("case"):
				k := matchCaseFwd(seq, j)
				if k < 0 {
					return len(seq)
				}
				j = k + 1
				expect = false
			case isAtom(n) || n.kwIn("null", "true", "false"):
				j++
				expect = false
			default:
				return j
			}
			continue
		}
		switch {
		case n.group || n.isOp("::") || (n.isIdent() && j > 0 && seq[j-1].isOp("::")):
			j++
		case n.isPunct("."):
			j++
			expect = true
		default:
			p := binaryPrec(n)
			if p <= level {
				return j
			}
			j++
			expect = true
		}
	}
	return j
}

// primaryStart returns where the primary expression ending at seq[i-1]
// begins: a literal, a (possibly qualified) name, a function call, a group,
// or CASE ... END. It returns i when there is none.
func primaryStart(seq []*node, i int) int {
	j := i - 1
	if j < 0 {
		return i
	}
	n := seq[j]
	switch {
	case n.kw("end"):
		if k := matchCaseBack(seq, j); k >= 0 {
			return k
		}
		return i
	case n.group:
		// A call: name ( ... ) or schema.name ( ... ).
		if j > 0 && seq[j-1].isIdent() && isAtom(seq[j-1]) {
			return nameChainStart(seq, j-1)
		}
		if j > 0 && !seq[j-1].group && seq[j-1].tok.kind == tkRaw {
			return j - 1
		}
		return j
	case isAtom(n) || n.kwIn("null", "true", "false"):
		if n.isIdent() {
			return nameChainStart(seq, j)
		}
		return j
	}
	return i
}

// nameChainStart extends a name at seq[j] leftwards over "a.b." qualifiers.
func nameChainStart(seq []*node, j int) int {
	for j >= 2 && seq[j-1].isPunct(".") && seq[j-2].isIdent() {
		j -= 2
	}
	return j
}
