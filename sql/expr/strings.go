package expr

import (
	"crypto/md5"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tributary/tributary/sql/types"
)

func init() {
	s1 := func(f func(string) string) rowFn {
		return func(_ *Ctx, a []types.Datum) (types.Datum, error) { return types.DString(f(a[0].S)), nil }
	}
	def("length char_length character_length", tI4, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return types.DInt(int64(utf8.RuneCountInString(a[0].S))), nil
	})
	def("length octet_length", tI4, tBy).r(octetLength)
	def("octet_length", tI4, tS).r(octetLength)
	def("lower", tS, tS).v(mapStrings(asciiLower, strings.ToLower))
	def("upper", tS, tS).v(mapStrings(asciiUpper, strings.ToUpper))
	def("substr substring", tS, tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return substr(a[0].S, a[1].I, -1)
	})
	def("substr substring", tS, tS, tI4, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[2].I < 0 {
			return types.NullDatum, types.Errorf(types.ErrDataException, "negative substring length not allowed")
		}
		return substr(a[0].S, a[1].I, a[2].I)
	})
	def("position", tI4, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) { return strpos(a[1].S, a[0].S), nil })
	def("strpos", tI4, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) { return strpos(a[0].S, a[1].S), nil })
	def("replace", tS, tS, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[1].S == "" {
			return a[0], nil
		}
		return types.DString(strings.ReplaceAll(a[0].S, a[1].S, a[2].S)), nil
	})
	def("trim btrim", tS, tS).r(s1(func(s string) string { return strings.Trim(s, " ") }))
	def("ltrim", tS, tS).r(s1(func(s string) string { return strings.TrimLeft(s, " ") }))
	def("rtrim", tS, tS).r(s1(func(s string) string { return strings.TrimRight(s, " ") }))
	def("trim btrim", tS, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return types.DString(strings.Trim(a[0].S, a[1].S)), nil
	})
	def("ltrim", tS, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return types.DString(strings.TrimLeft(a[0].S, a[1].S)), nil
	})
	def("rtrim", tS, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return types.DString(strings.TrimRight(a[0].S, a[1].S)), nil
	})
	def("lpad", tS, tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) { return pad(a[0].S, a[1].I, " ", true) })
	def("rpad", tS, tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) { return pad(a[0].S, a[1].I, " ", false) })
	def("lpad", tS, tS, tI4, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) { return pad(a[0].S, a[1].I, a[2].S, true) })
	def("rpad", tS, tS, tI4, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) { return pad(a[0].S, a[1].I, a[2].S, false) })
	def("split_part", tS, tS, tS, tI4).r(splitPart)
	def("left", tS, tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		r := []rune(a[0].S)
		n := clampN(a[1].I, len(r))
		return types.DString(string(r[:n])), nil
	})
	def("right", tS, tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		r := []rune(a[0].S)
		n := clampN(a[1].I, len(r))
		return types.DString(string(r[len(r)-n:])), nil
	})
	def("reverse", tS, tS).r(s1(func(s string) string {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r)
	}))
	def("repeat", tS, tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[1].I <= 0 {
			return types.DString(""), nil
		}
		if int64(len(a[0].S))*a[1].I > 1<<30 {
			return types.NullDatum, types.Errorf(types.ErrInsufficientRes, "requested length too large")
		}
		return types.DString(strings.Repeat(a[0].S, int(a[1].I))), nil
	})
	def("starts_with", tB, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return types.DBool(strings.HasPrefix(a[0].S, a[1].S)), nil
	})
	def("md5", tS, tS).r(s1(func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }))
	def("md5", tS, tBy).r(s1(func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }))
	def("initcap", tS, tS).r(s1(initcap))
	def("ascii", tI4, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		r, _ := utf8.DecodeRuneInString(a[0].S)
		if a[0].S == "" {
			r = 0
		}
		return types.DInt(int64(r)), nil
	})
	def("chr", tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		switch {
		case a[0].I == 0:
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "null character not permitted")
		case a[0].I < 0 || a[0].I > unicode.MaxRune || (a[0].I >= 0xD800 && a[0].I <= 0xDFFF):
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "requested character too large for encoding: %d", a[0].I)
		}
		return types.DString(string(rune(a[0].I))), nil
	})
	def("to_hex", tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return types.DString(strconv.FormatUint(uint64(uint32(a[0].I)), 16)), nil
	})
	def("to_hex", tS, tI8).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return types.DString(strconv.FormatUint(uint64(a[0].I), 16)), nil
	})
	for _, name := range []string{"like", "not_like", "ilike", "not_ilike"} {
		neg, fold := strings.HasPrefix(name, "not_"), strings.HasSuffix(name, "ilike")
		def(name, tB, tS, tS).r(likeFn(neg, fold, false))
		def(name, tB, tS, tS, tS).r(likeFn(neg, fold, true))
	}
	for _, name := range []string{"regexp", "not_regexp", "regexp_i", "not_regexp_i"} {
		neg, fold := strings.HasPrefix(name, "not_"), strings.HasSuffix(name, "_i")
		def(name, tB, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			re, err := compileRegex(a[1].S, fold)
			if err != nil {
				return types.NullDatum, err
			}
			return types.DBool(re.MatchString(a[0].S) != neg), nil
		})
	}
	def("regexp_replace", tS, tS, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return regexpReplace(a[0].S, a[1].S, a[2].S, "")
	})
	def("regexp_replace", tS, tS, tS, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return regexpReplace(a[0].S, a[1].S, a[2].S, a[3].S)
	})
	// regexp_match(s, pattern)[n], rewritten by the parser: the n-th capture
	// group of the first match (the whole match when the pattern has no
	// group and n is 1), NULL without a match or beyond the groups.
	def("pg__regexp_match_group", tS, tS, tS, tI4).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		re, err := compileRegex(a[1].S, false)
		if err != nil {
			return types.NullDatum, err
		}
		m := re.FindStringSubmatchIndex(a[0].S)
		if m == nil {
			return types.NullDatum, nil
		}
		n := int(a[2].I)
		if re.NumSubexp() == 0 {
			n-- // no groups: the array holds the whole match
		}
		if n < 0 || n > re.NumSubexp() || (re.NumSubexp() > 0 && n == 0) || m[2*n] < 0 {
			return types.NullDatum, nil
		}
		return types.DString(a[0].S[m[2*n]:m[2*n+1]]), nil
	})
	def("translate", tS, tS, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		from, to := []rune(a[1].S), []rune(a[2].S)
		var b strings.Builder
		for _, r := range a[0].S {
			k := strings.IndexRune(a[1].S, r)
			if k < 0 {
				b.WriteRune(r)
				continue
			}
			idx := utf8.RuneCountInString(a[1].S[:k])
			if idx < len(to) {
				b.WriteRune(to[idx])
			}
			_ = from
		}
		return types.DString(b.String()), nil
	})
	def("quote_ident", tS, tS).r(s1(quoteIdent))
	def("quote_literal", tS, tS).r(s1(quote))

	specials["||"] = resolveConcatOp
	specials["concat"] = resolveConcat
	specials["concat_ws"] = resolveConcat
	specials["format"] = resolveConcat
}

func octetLength(_ *Ctx, a []types.Datum) (types.Datum, error) {
	return types.DInt(int64(len(a[0].S))), nil
}

// mapStrings applies a per-string function, with an allocation-free ASCII path
// that returns the input unchanged when nothing changes.
func mapStrings(ascii func(string) (string, bool), full func(string) string) vecFn {
	return func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
		a := &args[0]
		for i := 0; i < n; i++ {
			j := a.idx(i)
			s := a.v.Str[j]
			if !a.v.Nulls[j] {
				if r, ok := ascii(s); ok {
					s = r
				} else {
					s = full(s)
				}
			}
			out.Nulls = append(out.Nulls, a.v.Nulls[j])
			out.Str = append(out.Str, s)
		}
		return nil
	}
}

func asciiUpper(s string) (string, bool) { return asciiMap(s, 'a', 'z') }
func asciiLower(s string) (string, bool) { return asciiMap(s, 'A', 'Z') }

// asciiMap flips the case of bytes in [lo, hi]; ok is false for non-ASCII input.
func asciiMap(s string, lo, hi byte) (string, bool) {
	first := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return "", false
		}
		if first < 0 && c >= lo && c <= hi {
			first = i
		}
	}
	if first < 0 {
		return s, true
	}
	b := []byte(s)
	for i := first; i < len(b); i++ {
		if b[i] >= lo && b[i] <= hi {
			b[i] ^= 0x20
		}
	}
	return string(b), true
}

// substr is PostgreSQL's substring(s from start for count); count < 0 means to the end.
func substr(s string, start, count int64) (types.Datum, error) {
	end := int64(1) << 62
	if count >= 0 {
		end = start + count
		if start > 0 && end < start { // overflow
			end = int64(1) << 62
		}
	}
	if start < 1 {
		start = 1
	}
	if end <= start {
		return types.DString(""), nil
	}
	pos := int64(1)
	bstart, bend := len(s), len(s)
	for i := range s {
		if pos == start {
			bstart = i
		}
		if pos == end {
			bend = i
			break
		}
		pos++
	}
	if bstart > bend {
		bstart = bend
	}
	return types.DString(s[bstart:bend]), nil
}

func strpos(s, sub string) types.Datum {
	k := strings.Index(s, sub)
	if k < 0 {
		return types.DInt(0)
	}
	return types.DInt(int64(utf8.RuneCountInString(s[:k]) + 1))
}

func pad(s string, n int64, fill string, left bool) (types.Datum, error) {
	if n <= 0 {
		return types.DString(""), nil
	}
	if n > 1<<28 {
		return types.NullDatum, types.Errorf(types.ErrInsufficientRes, "requested length too large")
	}
	r := []rune(s)
	if int64(len(r)) >= n {
		return types.DString(string(r[:n])), nil
	}
	f := []rune(fill)
	if len(f) == 0 {
		return types.DString(s), nil
	}
	need := int(n) - len(r)
	padding := make([]rune, need)
	for i := range padding {
		padding[i] = f[i%len(f)]
	}
	if left {
		return types.DString(string(padding) + s), nil
	}
	return types.DString(s + string(padding)), nil
}

// clampN turns left/right's n (negative: all but |n|) into a count within [0, l].
func clampN(n int64, l int) int {
	if n < 0 {
		n += int64(l)
		if n < 0 {
			n = 0
		}
	}
	if n > int64(l) {
		n = int64(l)
	}
	return int(n)
}

func splitPart(_ *Ctx, a []types.Datum) (types.Datum, error) {
	s, delim, n := a[0].S, a[1].S, a[2].I
	if n == 0 {
		return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "field position must not be zero")
	}
	var parts []string
	if delim == "" {
		parts = []string{s}
		if s == "" {
			parts = nil
		}
	} else {
		parts = strings.Split(s, delim)
	}
	if n < 0 {
		n += int64(len(parts)) + 1
	}
	if n < 1 || n > int64(len(parts)) {
		return types.DString(""), nil
	}
	return types.DString(parts[n-1]), nil
}

func initcap(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inWord := false
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if inWord {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToUpper(r))
			}
			inWord = true
		} else {
			b.WriteRune(r)
			inWord = false
		}
	}
	return b.String()
}

func quoteIdent(s string) string {
	plain := s != ""
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c == '_' || (i > 0 && c >= '0' && c <= '9')) {
			plain = false
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// ---- LIKE ----

func likeFn(neg, fold, hasEscape bool) rowFn {
	return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		s, p := a[0].S, a[1].S
		esc := '\\'
		if hasEscape {
			switch utf8.RuneCountInString(a[2].S) {
			case 0:
				esc = -1
			case 1:
				esc, _ = utf8.DecodeRuneInString(a[2].S)
			default:
				return types.NullDatum, types.Errorf(types.ErrInvalidEscape, "invalid escape string")
			}
		}
		if fold {
			s, p = strings.ToLower(s), strings.ToLower(p)
		}
		m, err := likeMatch(s, p, esc)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(m != neg), nil
	}
}

// likeMatch matches s against a LIKE pattern (% any run, _ one character,
// esc quotes the next character; esc < 0 disables escaping).
func likeMatch(s, p string, esc rune) (bool, error) {
	si, pi := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			pc, pw := utf8.DecodeRuneInString(p[pi:])
			switch {
			case pc == '%':
				for pi < len(p) && p[pi] == '%' {
					pi++
				}
				if pi == len(p) {
					return true, nil
				}
				starP, starS = pi, si
				continue
			case pc == '_':
				_, sw := utf8.DecodeRuneInString(s[si:])
				si += sw
				pi += pw
				continue
			case pc == esc:
				if pi+pw >= len(p) {
					return false, types.Errorf(types.ErrInvalidEscape, "LIKE pattern must not end with escape character")
				}
				pc2, pw2 := utf8.DecodeRuneInString(p[pi+pw:])
				sc, sw := utf8.DecodeRuneInString(s[si:])
				if sc == pc2 {
					si += sw
					pi += pw + pw2
					continue
				}
			default:
				sc, sw := utf8.DecodeRuneInString(s[si:])
				if sc == pc {
					si += sw
					pi += pw
					continue
				}
			}
		}
		if starP < 0 {
			return false, nil
		}
		_, sw := utf8.DecodeRuneInString(s[starS:])
		starS += sw
		si, pi = starS, starP
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	if pi < len(p) && rune(p[pi]) == esc && pi+1 == len(p) {
		return false, types.Errorf(types.ErrInvalidEscape, "LIKE pattern must not end with escape character")
	}
	return pi == len(p), nil
}

// ---- regular expressions ----

var regexCache struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

// compileRegex compiles a PostgreSQL-style (ARE) pattern as a Go regexp, cached.
func compileRegex(p string, fold bool) (*regexp.Regexp, error) {
	key := p
	if fold {
		key = "(?i)" + p
	}
	regexCache.Lock()
	re := regexCache.m[key]
	regexCache.Unlock()
	if re != nil {
		return re, nil
	}
	re, err := regexp.Compile(key)
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidRegex, "invalid regular expression: %v", err)
	}
	regexCache.Lock()
	if regexCache.m == nil || len(regexCache.m) > 512 {
		regexCache.m = map[string]*regexp.Regexp{}
	}
	regexCache.m[key] = re
	regexCache.Unlock()
	return re, nil
}

func regexpReplace(s, p, repl, flags string) (types.Datum, error) {
	re, err := compileRegex(p, strings.Contains(flags, "i"))
	if err != nil {
		return types.NullDatum, err
	}
	// PostgreSQL writes back-references as \1; Go as ${1}.
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9':
			b.WriteString("${" + string(repl[i+1]) + "}")
			i++
		case c == '\\' && i+1 < len(repl) && repl[i+1] == '&':
			b.WriteString("${0}")
			i++
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	r := b.String()
	if strings.Contains(flags, "g") {
		return types.DString(re.ReplaceAllString(s, r)), nil
	}
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil {
		return types.DString(s), nil
	}
	out := re.ExpandString(nil, r, s, loc)
	return types.DString(s[:loc[0]] + string(out) + s[loc[1]:]), nil
}

// ---- concatenation ----

// toText coerces an argument to text (anything has a text form).
func toText(e Expr) (Expr, error) {
	if e.Type().ID == types.Varchar {
		return e, nil
	}
	return castExpr(e, tS, castAssign)
}

func resolveConcatOp(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, noFunction(name, exprTypes(args))
	}
	t0, t1 := args[0].Type().ID, args[1].Type().ID
	if t0 == types.Array || t1 == types.Array {
		return resolveArrayConcat(name, args)
	}
	if t0 == types.Jsonb && (t1 == types.Jsonb || t1 == types.Unknown) || t1 == types.Jsonb && t0 == types.Unknown {
		// jsonb || '{"b":2}': the unknown literal is jsonb, as in PostgreSQL.
		cargs := make([]Expr, 2)
		for i, a := range args {
			c, err := ImplicitCast(a, tJ)
			if err != nil {
				return nil, err
			}
			cargs[i] = c
		}
		return bind(name, jsonbConcat, cargs)
	}
	if t0 == types.Bytea && (t1 == types.Bytea || t1 == types.Unknown) || t1 == types.Bytea && t0 == types.Unknown {
		cargs := make([]Expr, 2)
		for i, a := range args {
			c, err := ImplicitCast(a, types.TBytea)
			if err != nil {
				return nil, err
			}
			cargs[i] = c
		}
		return &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: types.TBytea, strict: true,
			row: func(_ *Ctx, a []types.Datum) (types.Datum, error) { return types.DString(a[0].S + a[1].S), nil },
		}, nil
	}
	str := func(id types.ID) bool { return id == types.Varchar || id == types.Unknown }
	if !str(t0) && !str(t1) {
		return nil, noFunction(name, exprTypes(args))
	}
	cargs := make([]Expr, 2)
	for i, a := range args {
		c, err := toText(a)
		if err != nil {
			return nil, err
		}
		cargs[i] = c
	}
	return &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: tS, strict: true,
		vec: func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
			a, b := &args[0], &args[1]
			for i := 0; i < n; i++ {
				ia, ib := a.idx(i), b.idx(i)
				null := a.v.Nulls[ia] || b.v.Nulls[ib]
				s := ""
				if !null {
					s = a.v.Str[ia] + b.v.Str[ib]
				}
				out.Nulls = append(out.Nulls, null)
				out.Str = append(out.Str, s)
			}
			return nil
		},
		row: func(_ *Ctx, a []types.Datum) (types.Datum, error) { return types.DString(a[0].S + a[1].S), nil },
	}, nil
}

// resolveConcat handles concat, concat_ws and format: variadic "any" arguments
// converted to text, NULLs skipped.
func resolveConcat(name string, args []Expr) (Expr, error) {
	if len(args) == 0 || (name != "concat" && len(args) < 1) {
		return nil, noFunction(name, nil)
	}
	cargs := make([]Expr, len(args))
	for i, a := range args {
		var c Expr
		var err error
		if a.Type().ID == types.Bool {
			// concat() prints values with their output function: t/f, not true/false.
			c = &FuncExpr{Name: "text", Args: []Expr{a}, depth: argDepth([]Expr{a}), Ret: tS, strict: true,
				row: func(_ *Ctx, d []types.Datum) (types.Datum, error) {
					return types.DString(types.FormatText(types.TBool, &d[0])), nil
				}}
		} else if c, err = toText(a); err != nil {
			return nil, err
		}
		cargs[i] = c
	}
	f := &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: tS}
	switch name {
	case "concat":
		f.row = func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			var b strings.Builder
			for i := range a {
				if !a[i].Null {
					b.WriteString(a[i].S)
				}
			}
			return types.DString(b.String()), nil
		}
	case "concat_ws":
		f.row = func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			if a[0].Null {
				return types.NullDatum, nil
			}
			var b strings.Builder
			first := true
			for i := 1; i < len(a); i++ {
				if a[i].Null {
					continue
				}
				if !first {
					b.WriteString(a[0].S)
				}
				b.WriteString(a[i].S)
				first = false
			}
			return types.DString(b.String()), nil
		}
	case "format":
		f.row = formatFn
	}
	return f, nil
}

// formatFn implements format(fmt, args...) with %s, %I, %L and %%.
func formatFn(_ *Ctx, a []types.Datum) (types.Datum, error) {
	if a[0].Null {
		return types.NullDatum, nil
	}
	f := a[0].S
	var b strings.Builder
	next := 1
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(f) {
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "unterminated format() type specifier")
		}
		i++
		spec := f[i]
		if spec == '%' {
			b.WriteByte('%')
			continue
		}
		if next >= len(a) {
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "too few arguments for format()")
		}
		v := a[next]
		next++
		switch spec {
		case 's':
			if !v.Null {
				b.WriteString(v.S)
			}
		case 'I':
			if v.Null {
				return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "null values cannot be formatted as an SQL identifier")
			}
			b.WriteString(quoteIdent(v.S))
		case 'L':
			if v.Null {
				b.WriteString("NULL")
			} else {
				b.WriteString(quote(v.S))
			}
		default:
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "unrecognized format() type specifier %q", string(spec))
		}
	}
	return types.DString(b.String()), nil
}
