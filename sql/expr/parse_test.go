package expr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/tributary/tributary/sql/types"
)

// A tiny expression reader for tests: literals (1, 1.5, 'text', NULL, true),
// $N columns of a test row, calls name(args), infix operators with usual
// precedence, unary -, and postfix ::type.
type testParser struct {
	s    string
	cols []types.T
}

var binPrec = map[string]int{
	"or": 1, "and": 2, "=": 4, "<>": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "<=>": 4, "like": 4, "ilike": 4,
	"~": 4, "~*": 4, "^": 8, "->": 7, "->>": 7, "||": 5, "+": 6, "-": 6, "*": 7, "/": 7, "%": 7,
}

var binName = map[string]string{"~": "regexp", "~*": "regexp_i"}

func (p *testParser) skip() { p.s = strings.TrimLeftFunc(p.s, unicode.IsSpace) }

func (p *testParser) peekOp() string {
	p.skip()
	for _, op := range []string{"<=>", "->>", "->", "<=", ">=", "<>", "||", "~*", "=", "<", ">", "+", "-", "*", "/", "%", "~", "^"} {
		if strings.HasPrefix(p.s, op) {
			return op
		}
	}
	for _, w := range []string{"or", "and", "like", "ilike"} {
		if len(p.s) > len(w) && strings.EqualFold(p.s[:len(w)], w) && p.s[len(w)] == ' ' {
			return w
		}
	}
	return ""
}

func (p *testParser) expr(minPrec int) (Expr, error) {
	lhs, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		p.skip()
		if minPrec <= 4 && len(p.s) > 3 && strings.EqualFold(p.s[:3], "in ") {
			p.s = p.s[3:]
			p.skip()
			p.s = p.s[1:] // (
			args := []Expr{lhs}
			for {
				a, err := p.expr(0)
				if err != nil {
					return nil, err
				}
				args = append(args, a)
				p.skip()
				c := p.s[0]
				p.s = p.s[1:]
				if c == ')' {
					break
				}
			}
			if lhs, err = Call("in", args); err != nil {
				return nil, err
			}
			continue
		}
		if minPrec <= 4 && len(p.s) > 8 && strings.EqualFold(p.s[:8], "between ") {
			p.s = p.s[8:]
			lo, err := p.expr(5)
			if err != nil {
				return nil, err
			}
			p.skip()
			p.s = p.s[4:] // and
			hi, err := p.expr(5)
			if err != nil {
				return nil, err
			}
			if lhs, err = Call("between", []Expr{lhs, lo, hi}); err != nil {
				return nil, err
			}
			continue
		}
		op := p.peekOp()
		prec, ok := binPrec[op]
		if !ok || prec < minPrec {
			return lhs, nil
		}
		p.s = p.s[len(op):]
		rhs, err := p.expr(prec + 1)
		if err != nil {
			return nil, err
		}
		name := op
		if n, ok := binName[op]; ok {
			name = n
		}
		if lhs, err = Call(name, []Expr{lhs, rhs}); err != nil {
			return nil, err
		}
	}
}

func (p *testParser) unary() (Expr, error) {
	p.skip()
	if strings.HasPrefix(p.s, "-") && !strings.HasPrefix(p.s, "->") {
		p.s = p.s[1:]
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return Call("neg", []Expr{e})
	}
	if len(p.s) > 4 && strings.EqualFold(p.s[:4], "not ") {
		p.s = p.s[4:]
		e, err := p.expr(3)
		if err != nil {
			return nil, err
		}
		return Call("not", []Expr{e})
	}
	e, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		p.skip()
		if !strings.HasPrefix(p.s, "::") {
			return e, nil
		}
		p.s = p.s[2:]
		i := 0
		for i < len(p.s) && (unicode.IsLetter(rune(p.s[i])) || unicode.IsDigit(rune(p.s[i])) || p.s[i] == '_') {
			i++
		}
		if i < len(p.s) && p.s[i] == '(' {
			for i < len(p.s) && p.s[i] != ')' {
				i++
			}
			i++
		}
		name := p.s[:i]
		p.s = p.s[i:]
		var args []int
		if k := strings.IndexByte(name, '('); k >= 0 {
			for _, a := range strings.Split(strings.Trim(name[k:], "()"), ",") {
				n, _ := strconv.Atoi(a)
				args = append(args, n)
			}
			name = name[:k]
		}
		t, err := types.FromName(name, args)
		if err != nil {
			return nil, err
		}
		if e, err = Cast(e, t); err != nil {
			return nil, err
		}
	}
}

func (p *testParser) primary() (Expr, error) {
	p.skip()
	if p.s == "" {
		return nil, fmt.Errorf("unexpected end")
	}
	c := p.s[0]
	switch {
	case c == '(':
		p.s = p.s[1:]
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		p.skip()
		if !strings.HasPrefix(p.s, ")") {
			return nil, fmt.Errorf("missing ) at %q", p.s)
		}
		p.s = p.s[1:]
		return e, nil
	case c == '\'':
		var b strings.Builder
		i := 1
		for ; i < len(p.s); i++ {
			if p.s[i] == '\'' {
				if i+1 < len(p.s) && p.s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			b.WriteByte(p.s[i])
		}
		p.s = p.s[i+1:]
		return Literal(types.DString(b.String()), types.TUnknown), nil
	case c == '$':
		i := 1
		for i < len(p.s) && unicode.IsDigit(rune(p.s[i])) {
			i++
		}
		n, _ := strconv.Atoi(p.s[1:i])
		p.s = p.s[i:]
		return Column(n, p.cols[n]), nil
	case unicode.IsDigit(rune(c)) || c == '.':
		i := 0
		for i < len(p.s) && (unicode.IsDigit(rune(p.s[i])) || p.s[i] == '.') {
			i++
		}
		num := p.s[:i]
		p.s = p.s[i:]
		if strings.Contains(num, ".") {
			d, err := types.ParseText(types.TNumeric, num)
			return Literal(d, types.TNumeric), err
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			d, err := types.ParseText(types.TNumeric, num)
			return Literal(d, types.TNumeric), err
		}
		if v > 1<<31-1 {
			return Literal(types.DInt(v), types.TInt64), nil
		}
		return Literal(types.DInt(v), types.TInt32), nil
	}
	i := 0
	for i < len(p.s) && (unicode.IsLetter(rune(p.s[i])) || unicode.IsDigit(rune(p.s[i])) || p.s[i] == '_') {
		i++
	}
	if i == 0 {
		return nil, fmt.Errorf("unexpected %q", p.s)
	}
	word := p.s[:i]
	p.s = p.s[i:]
	switch strings.ToLower(word) {
	case "null":
		return Literal(types.NullDatum, types.TUnknown), nil
	case "true", "false":
		return Literal(types.DBool(strings.EqualFold(word, "true")), types.TBool), nil
	}
	p.skip()
	if !strings.HasPrefix(p.s, "(") {
		return Call(word, nil) // now, current_date, ...
	}
	p.s = p.s[1:]
	var args []Expr
	p.skip()
	if strings.HasPrefix(p.s, ")") {
		p.s = p.s[1:]
		return Call(word, nil)
	}
	for {
		a, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		p.skip()
		if strings.HasPrefix(p.s, ",") {
			p.s = p.s[1:]
			continue
		}
		if strings.HasPrefix(p.s, ")") {
			p.s = p.s[1:]
			break
		}
		return nil, fmt.Errorf("expected , or ) at %q", p.s)
	}
	if strings.EqualFold(word, "case") {
		// case(cond, then, ..., [else])
		var whens, thens []Expr
		var els Expr
		for len(args) >= 2 {
			whens, thens, args = append(whens, args[0]), append(thens, args[1]), args[2:]
		}
		if len(args) == 1 {
			els = args[0]
		}
		return Case(nil, whens, thens, els)
	}
	return Call(word, args)
}

// parseExpr reads a test expression over columns of the given types.
func parseExpr(s string, cols ...types.T) (Expr, error) {
	p := &testParser{s: s, cols: cols}
	e, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.s != "" {
		return nil, fmt.Errorf("trailing %q", p.s)
	}
	return e, nil
}

// evalText evaluates a constant test expression and formats it as psql does (NULL as "NULL").
func evalText(s string, ctx *Ctx) (string, error) {
	e, err := parseExpr(s)
	if err != nil {
		return "", err
	}
	d, err := e.EvalRow(ctx, nil)
	if err != nil {
		return "", err
	}
	if d.Null {
		return "NULL", nil
	}
	return types.FormatText(e.Type(), &d), nil
}
