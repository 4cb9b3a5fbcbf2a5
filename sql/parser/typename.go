package parser

import (
	"strconv"

	"github.com/tributary/tributary/sql/types"
)

// typeAliases maps a PostgreSQL type spelling (one word) to its canonical
// name.
var typeAliases = map[string]string{
	"int2": "smallint", "smallint": "smallint",
	"int": "integer", "int4": "integer", "integer": "integer",
	"int8": "bigint", "bigint": "bigint",
	"float4": "real", "real": "real",
	"float8": "double precision", "float": "double precision",
	"numeric": "numeric", "decimal": "numeric", "dec": "numeric",
	"bool": "boolean", "boolean": "boolean",
	"varchar": "varchar", "string": "varchar",
	"char": "varchar", "character": "varchar", "bpchar": "varchar",
	"text": "text", "bytea": "bytea", "date": "date",
	"time": "time", "timestamp": "timestamp", "timestamptz": "timestamptz",
	"interval": "interval", "jsonb": "jsonb", "json": "json",
	"regclass": "regclass", "regtype": "regtype", "regproc": "regproc",
	"regprocedure": "regprocedure", "regnamespace": "regnamespace", "regrole": "regrole",
	"oid": "oid", "name": "name", "uuid": "uuid", "timetz": "timetz",
}

// intervalFields are the words of INTERVAL's optional field restriction.
var intervalFields = map[string]bool{"year": true, "month": true, "day": true, "hour": true, "minute": true, "second": true, "to": true}

// parseTypeName reads a type name starting at seq[i] and returns it with the
// index just after it. ok is false when seq[i] does not start a type name.
func parseTypeName(src string, seq []*node, i int) (t TypeName, next int, err error) {
	at := func(j int) *node {
		if j < len(seq) {
			return seq[j]
		}
		return nil
	}
	if i >= len(seq) {
		return t, i, syntaxErrEnd(src)
	}
	// Strip a pg_catalog. (or any schema) qualifier.
	if seq[i].isIdent() && at(i+1) != nil && at(i+1).isPunct(".") && at(i+2) != nil && at(i+2).isIdent() {
		i += 2
	}
	n := seq[i]
	if !n.isIdent() {
		return t, i, syntaxErrAt(src, n.first())
	}
	word := n.tok.val
	i++
	if n.tok.kind == tkQIdent {
		if word == "char" {
			return TypeName{Name: "char"}, i, nil
		}
		t.Name = word
		return finishType(src, seq, i, t)
	}
	next2 := func(w string) bool { return at(i) != nil && at(i).kw(w) }
	if word == "struct" && at(i) != nil && !at(i).group && at(i).tok.kind == tkOp && at(i).tok.val[0] == '<' {
		return structTypeName(src, seq, i-1)
	}
	switch word {
	case "double":
		// "double" alone is RisingWave's name for double precision.
		if next2("precision") {
			i++
		}
		t.Name = "double precision"
	case "character", "char", "national":
		if word == "national" {
			if !next2("character") && !next2("char") {
				return t, i, syntaxErrAtNode(src, at(i))
			}
			i++
		}
		if next2("varying") {
			i++
		}
		t.Name = "varchar"
	case "timestamp", "time":
		t.Name = word
		var err error
		if at(i) != nil && at(i).isParen() {
			if t.Args, err = typeArgs(src, at(i)); err != nil {
				return t, i, err
			}
			i++
		}
		if (next2("with") || next2("without")) && at(i+1) != nil && at(i+1).kw("time") && at(i+2) != nil && at(i+2).kw("zone") {
			if at(i).kw("with") {
				t.Name += "tz"
			}
			i += 3
		}
		return finishType(src, seq, i, t)
	case "interval":
		t.Name = "interval"
		for at(i) != nil && !at(i).group && at(i).tok.kind == tkIdent && intervalFields[at(i).tok.val] {
			i++
		}
	case "bit":
		if next2("varying") {
			i++
			t.Name = "varbit"
		} else {
			t.Name = "bit"
		}
	case "float":
		t.Name = "double precision"
		if at(i) != nil && at(i).isParen() {
			args, err := typeArgs(src, at(i))
			if err != nil {
				return t, i, err
			}
			if len(args) == 1 && args[0] <= 24 {
				t.Name = "real"
			}
			i++
		}
		return finishType(src, seq, i, t)
	default:
		if c, ok := typeAliases[word]; ok {
			t.Name = c
		} else {
			t.Name = word
		}
	}
	return finishType(src, seq, i, t)
}

// structTypeName reads RisingWave's struct<name type, ...> starting at
// seq[i] (the word struct), nested structs included (their closing >> is one
// operator token), and names it by its canonical spelling.
func structTypeName(src string, seq []*node, i int) (TypeName, int, error) {
	start := seq[i].tok.pos
	depth := 0
	for j := i + 1; j < len(seq); j++ {
		n := seq[j]
		if n.group || n.tok.kind != tkOp {
			if depth == 0 {
				return TypeName{}, j, syntaxErrAtNode(src, n)
			}
			continue
		}
		for _, c := range n.tok.val {
			switch c {
			case '<':
				depth++
			case '>':
				depth--
			default:
				return TypeName{}, j, syntaxErrAtNode(src, n)
			}
			if depth < 0 {
				return TypeName{}, j, syntaxErrAtNode(src, n)
			}
		}
		if depth == 0 {
			t, err := types.FromName(src[start:n.tok.end], nil)
			if err != nil {
				return TypeName{}, j, err
			}
			return finishType(src, seq, j+1, TypeName{Name: t.String()})
		}
	}
	return TypeName{}, len(seq), syntaxErrEnd(src)
}

// finishType reads optional (args) and an array suffix: [], [n] or ARRAY
// [ '[' n ']' ]; a second dimension is refused (0A000).
func finishType(src string, seq []*node, i int, t TypeName) (TypeName, int, error) {
	if i < len(seq) && seq[i].isParen() && t.Args == nil {
		args, err := typeArgs(src, seq[i])
		if err != nil {
			return t, i, err
		}
		t.Args = args
		i++
	}
	if t.Name == "time" || t.Name == "timestamp" {
		if i+2 < len(seq) && (seq[i].kw("with") || seq[i].kw("without")) && seq[i+1].kw("time") && seq[i+2].kw("zone") {
			if seq[i].kw("with") {
				t.Name += "tz"
			}
			i += 3
		}
	}
	dims := 0
	for i < len(seq) {
		switch {
		case isBracket(seq[i]) && (len(seq[i].kids) == 0 || len(seq[i].kids) == 1 && seq[i].kids[0].tok.kind == tkNumber && !seq[i].kids[0].group):
			i++
		case seq[i].kw("array"):
			i++
			if i < len(seq) && isBracket(seq[i]) && len(seq[i].kids) == 1 && seq[i].kids[0].tok.kind == tkNumber && !seq[i].kids[0].group {
				i++
			}
		default:
			if dims > 1 {
				return t, i, types.ErrorAt(types.ErrUnsupported, charPos(src, seq[i-1].tok.pos), "multidimensional arrays are not supported")
			}
			t.Array = dims == 1
			return t, i, nil
		}
		dims++
	}
	if dims > 1 {
		return t, i, types.ErrorAt(types.ErrUnsupported, charPos(src, seq[i-1].tok.pos), "multidimensional arrays are not supported")
	}
	t.Array = dims == 1
	return t, i, nil
}

func isBracket(n *node) bool { return n.group && n.tok.val == "[" }

func typeArgs(src string, g *node) ([]int, error) {
	var args []int
	for _, part := range splitCommas(g.kids) {
		if len(part) != 1 || part[0].group || part[0].tok.kind != tkNumber {
			if len(part) == 0 {
				return nil, syntaxErrAt(src, g.close)
			}
			return nil, syntaxErrAtNode(src, part[0])
		}
		v, err := strconv.Atoi(part[0].tok.val)
		if err != nil {
			return nil, syntaxErrAtNode(src, part[0])
		}
		args = append(args, v)
	}
	return args, nil
}

// syntaxErrAtNode reports a syntax error at n, or at the end of input when n
// is nil.
func syntaxErrAtNode(src string, n *node) error {
	if n == nil {
		return syntaxErrEnd(src)
	}
	return syntaxErrAt(src, n.first())
}
