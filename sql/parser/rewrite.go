package parser

import (
	"fmt"

	"github.com/tributary/tributary/sql/types"
)

// rewriteCtx is the state one statement's rewrite shares between rules.
type rewriteCtx struct {
	src   string
	depth int            // 0 while a rule runs on the statement's top-level list
	funcs []*pendingFunc // table functions found in FROM, in order
	// aliasCols holds "AS alias(col, ...)" column lists removed from FROM items.
	aliasCols map[string][]string
}

// pendingFunc is a table function whose arguments TiDB parses after the
// rewrite.
type pendingFunc struct {
	placeholder string
	name        string
	args        [][]*node
	aliases     []string
	ordinality  bool // WITH ORDINALITY
}

// rule is one named rewrite over a node list. The driver applies each rule to
// every nested group first, then to the enclosing list.
type rule struct {
	name string
	fn   func(c *rewriteCtx, seq []*node) ([]*node, error)
}

// rules is the ordered PostgreSQL-compatibility pass.
var rules = []rule{
	{"aggregateWrap", aggregateWrap},
	{"regexpMatchSubscript", regexpMatchSubscript},
	{"rejectUnsupported", rejectUnsupported},
	{"systemTime", systemTime},
	{"crossDBNames", crossDBNames},
	{"groupingSets", groupingSets},
	{"dollarParams", dollarParams},
	{"typedLiterals", typedLiterals},
	{"castCalls", castCalls},
	{"operatorKeyword", operatorKeyword},
	{"rowConstructors", rowConstructors},
	{"fieldAccess", fieldAccess},
	{"castOperators", castOperators},
	{"arrayConstructors", arrayConstructors},
	{"subscripts", subscripts},
	{"powerOperator", powerOperator},
	{"xorOperator", xorOperator},
	{"pgOperators", pgOperators},
	{"quantifiedArrays", quantifiedArrays},
	{"atTimeZone", atTimeZone},
	{"extractField", extractField},
	{"dropCollate", dropCollate},
	{"regexOperators", regexOperators},
	{"similarTo", similarTo},
	{"distinctFrom", distinctFrom},
	{"filterClause", filterClause},
	{"withinGroup", withinGroup},
	{"stringAgg", stringAgg},
	{"firstLastValue", firstLastValue},
	{"windowArgs", windowArgs},
	{"windowExclude", windowExclude},
	{"nullsOrdering", nullsOrdering},
	{"limitOffset", limitOffset},
	{"distinctOn", distinctOn},
	{"corresponding", corresponding},
	{"changelogCTE", changelogCTE},
	{"defaultValues", defaultValues},
	{"quoteReserved", quoteReserved},
	{"valuesLists", valuesLists},
	{"fromFunctions", fromFunctions},
	{"fullJoin", fullJoin},
	{"aliasColumns", aliasColumns},
	{"concatFunction", concatFunction},
}

func ruleByName(name string) (rule, bool) {
	for _, r := range rules {
		if r.name == name {
			return r, true
		}
	}
	return rule{}, false
}

// rewrite runs every rule in order over seq.
func (c *rewriteCtx) rewrite(seq []*node) ([]*node, error) {
	var err error
	for _, r := range rules {
		if seq, err = c.applyRule(r, seq); err != nil {
			return nil, err
		}
	}
	return seq, nil
}

func (c *rewriteCtx) applyRule(r rule, seq []*node) ([]*node, error) {
	for _, n := range seq {
		if n.group {
			c.depth++
			kids, err := c.applyRule(r, n.kids)
			c.depth--
			if err != nil {
				return nil, err
			}
			n.kids = kids
		}
	}
	return r.fn(c, seq)
}

func (c *rewriteCtx) unsupported(at token, format string, args ...any) error {
	return types.ErrorAt(types.ErrUnsupported, charPos(c.src, at.pos), format, args...)
}

func (c *rewriteCtx) syntax(n *node) error { return syntaxErrAtNode(c.src, n) }

// splice returns seq with seq[lo:hi] replaced by repl.
func splice(seq []*node, lo, hi int, repl ...*node) []*node {
	out := make([]*node, 0, len(seq)-(hi-lo)+len(repl))
	out = append(out, seq[:lo]...)
	out = append(out, repl...)
	return append(out, seq[hi:]...)
}

func cat(parts ...[]*node) []*node {
	var out []*node
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(n *node) []*node { return []*node{n} }

// clone copies a node list shallowly so the original may be reused.
func clone(seq []*node) []*node { return append([]*node(nil), seq...) }

// Internal names (functions the binder recognises, placeholder tables) start
// with "pg__", not with "_": TiDB's scanner reads an identifier starting
// with "_" as a possible charset introducer and builds an error with a stack
// trace for each one that is not (some microseconds per $n or cast).
func placeholderName(n int) string { return fmt.Sprintf("pg__tablefunc_%d", n) }
