package parser

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
)

// parseGeneral parses one statement on the general path only.
func parseGeneral(sql string) (Statement, error) {
	toks, _, err := lexNotices(sql)
	if err != nil {
		return nil, err
	}
	st, err := parseTokens(sql, toks)
	if err != nil {
		return nil, err
	}
	st.(textSetter).setText(sql[toks[0].pos:toks[len(toks)-1].end])
	return st, nil
}

// takesFastPath reports whether sql (one statement) qualifies for the fast path.
func takesFastPath(t *testing.T, sql string) bool {
	toks, _, lexed, ok, err := lexRows(sql)
	if err != nil || !ok {
		return false
	}
	_, rows := splitLiteralRows(toks, lexed)
	return rows != nil
}

// spliceRows moves a fast path's literal rows into its statement's VALUES list as the TiDB
// expressions they stand for (Literal.Expr).
func spliceRows(st Statement) {
	q, ok := st.(*Query)
	if !ok || q.Rows == nil {
		return
	}
	ins := q.Node.(*ast.InsertStmt)
	for _, row := range q.Rows {
		exprs := make([]ast.ExprNode, len(row))
		for i, l := range row {
			exprs[i] = l.Expr()
		}
		ins.Lists = append(ins.Lists, exprs)
	}
	q.Rows = nil
}

// positionsCleared forgets what only TiDB's parse records (each expression's offset in the text
// TiDB read, and that text on the statement), which the two paths cannot share.
type positionsCleared struct{}

func (positionsCleared) Enter(n ast.Node) (ast.Node, bool) {
	if e, ok := n.(ast.ExprNode); ok {
		e.SetOriginTextPosition(0)
	}
	return n, false
}

func (positionsCleared) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func clearPositions(st Statement) {
	if q, ok := st.(*Query); ok && q.Node != nil {
		q.Node.SetText(nil, "")
		q.Node.Accept(positionsCleared{})
	}
}

// checkSamePaths parses sql on both paths and fails unless they give equal statements, or errors
// of the same kind, position and message.
func checkSamePaths(t *testing.T, sql string) {
	t.Helper()
	fast, ferr := Parse(sql)
	gen, gerr := parseGeneral(sql)
	if ferr != nil || gerr != nil {
		var fe, ge *types.Error
		if !errors.As(ferr, &fe) || !errors.As(gerr, &ge) || fe.Kind != ge.Kind || fe.Pos != ge.Pos || fe.Msg != ge.Msg {
			t.Errorf("%s:\nfast path error:    %v\ngeneral path error: %v", sql, ferr, gerr)
		}
		return
	}
	if len(fast) != 1 {
		t.Fatalf("%s: %d statements", sql, len(fast))
	}
	spliceRows(fast[0])
	clearPositions(fast[0])
	clearPositions(gen)
	if !reflect.DeepEqual(fast[0], gen) {
		t.Errorf("%s:\nthe fast path's tree differs from the general path's", sql)
	}
}

// TestLiteralRowsFastPath: INSERT ... VALUES of literal rows parses to the same tree (or the
// same error) with and without the fast path, and the fast path is taken where it should be.
func TestLiteralRowsFastPath(t *testing.T) {
	cases := []struct {
		sql  string
		fast bool
	}{
		{"INSERT INTO t VALUES (1, 'a', NULL), (2, 'b', NULL)", true},
		{"insert into t values (1,2),(3,4),(5,6)", true},
		{"INSERT INTO t VALUES (-1, -9223372036854775808, 9223372036854775807), (-2, 9223372036854775808, -18446744073709551615)", true},
		{"INSERT INTO t VALUES (1), (18446744073709551616), (99999999999999999999999999999999999999)", true},
		{"INSERT INTO t VALUES (1.5, -0.25), (3.000, 12345678901234567890.123456789)", true},
		{"INSERT INTO t VALUES (1, 'it''s'), (2, 'it''s'), (3, E'tab\\there'), (4, $$dollar$$), (5, '')", true},
		{"INSERT INTO t VALUES (1, 'a\\b'), (2, 'back\\slash'), (3, 'new\nline'), (4, 'héllo ☃')", true},
		{"INSERT INTO t VALUES (TRUE, FALSE, NULL), (false, true, null), (DEFAULT, default, 1)", true},
		{"INSERT INTO t (b, a) VALUES (1, 2), (3, 4)", true},
		{"INSERT INTO s.t AS x (a) VALUES (1), (2) RETURNING x.a, a + 1", true},
		{"INSERT INTO t VALUES (1, 2), (3, 4) ON CONFLICT (a) DO UPDATE SET b = excluded.b", true},
		{"INSERT INTO t VALUES (1, 2), (3, 4) ON CONFLICT DO NOTHING RETURNING *", true},
		{"INSERT INTO \"Quoted\" VALUES (1), (2)", true},
		{"INSERT INTO t OVERRIDING SYSTEM VALUE VALUES (1), (2)", true},
		{"INSERT INTO t VALUES ('1'), (1_000), (0001)", true},
		// The first row may be anything: the general path parses it.
		{"INSERT INTO t VALUES ('1'::int, now()), (1, '2024-01-01')", true},
		{"INSERT INTO t VALUES ($1, $2), (1, 2)", true},
		// Rows 2..n with anything but literals take the general path.
		{"INSERT INTO t VALUES (1), ('1'::int)", false},
		{"INSERT INTO t VALUES (1), (1 + 1)", false},
		{"INSERT INTO t VALUES (1), (+1)", false},
		{"INSERT INTO t VALUES (1), (- -1)", false},
		{"INSERT INTO t VALUES (1), (-'1')", false},
		{"INSERT INTO t VALUES (1), (1e3)", false},
		{"INSERT INTO t VALUES (1), (.5)", false},
		{"INSERT INTO t VALUES (1), ($1)", false},
		{"INSERT INTO t VALUES (1), (DATE '2024-01-01')", false},
		{"INSERT INTO t VALUES (1), (B'101')", false},
		{"INSERT INTO t VALUES (1), (X'ff')", false},
		{"INSERT INTO t VALUES (1), (\"null\")", false},
		{"INSERT INTO t VALUES (1), (ARRAY[1])", false},
		{"INSERT INTO t VALUES (1), ((1))", false},
		{"INSERT INTO t VALUES (1), ()", false},
		{"INSERT INTO t VALUES (1), (1,)", false},
		{"INSERT INTO t VALUES (1), (,1)", false},
		{"INSERT INTO t VALUES (1), ('a' 'b')", false},
		{"INSERT INTO t VALUES (1)", false},
		{"INSERT INTO t DEFAULT VALUES", false},
		{"INSERT INTO t SELECT 1 UNION VALUES (1), (2)", false},
		{"INSERT INTO t (VALUES (1), (2))", false},
		{"INSERT INTO t VALUES (1), (2) UNION SELECT 3", false},
		{"INSERT INTO t VALUES (1), (2) ORDER BY 1", false},
		{"WITH x AS (SELECT 1) INSERT INTO t VALUES (1), (2)", false},
		{"INSERT INTO t SET a = 1, b = 2", false},
		// Errors: the same on both paths.
		{"INSERT INTO t VALUES (1 +), (2)", true},
		{"INSERT INTO t VALUES (1), (2) RETURNING", true},
		{"INSERT INTO t VALUES (1), (2) ON CONFLICT", true},
		{"INSERT INTO VALUES (1), (2)", false},
		{"INSERT INTO t (a,) VALUES (1), (2)", true},
		{"INSERT INTO t VALUES (1), (2) garbage", false},
		{"INSERT INTO t VALUES (1), (2), 3", false},
		{"INSERT INTO t VALUES (1), ('unterminated)", false},
	}
	for _, c := range cases {
		if got := takesFastPath(t, c.sql); got != c.fast {
			t.Errorf("%s: fast path %v, want %v", c.sql, got, c.fast)
		}
		checkSamePaths(t, c.sql)
	}
}

// TestLiteralRowsStatements: a text of several statements, INSERTs with literal rows among
// them, parses each as the general path parses it alone; the INSERTs take the fast path
// unless another statement's rows (read by the lexer) turn out not to be literals, which
// sends the whole text down the general path. Comments and line breaks may sit between rows.
func TestLiteralRowsStatements(t *testing.T) {
	for _, c := range []struct {
		sql  string
		fast []bool
	}{
		{"INSERT INTO t VALUES (1, 'a'), (2, 'b'); SELECT 1; INSERT INTO u VALUES (3), (-4) RETURNING *;", []bool{true, false, true}},
		{"INSERT INTO t VALUES (1), /* two */ (2) -- three\n, (3);INSERT INTO t VALUES (4), (5)", []bool{true, true}},
		{"INSERT INTO t VALUES (1), (2); INSERT INTO t VALUES (3), (4 + 1)", []bool{false, false}},
		{"INSERT INTO t VALUES (1), (2); INSERT INTO t VALUES (3), (4) garbage", nil}, // a syntax error
		{"SELECT 1; INSERT INTO t VALUES ((1)), (2); INSERT INTO t VALUES (3), (4)", []bool{false, true, true}},
	} {
		stmts, err := Parse(c.sql)
		if c.fast == nil {
			if err == nil {
				t.Errorf("%s: no error", c.sql)
			}
			continue
		}
		if err != nil || len(stmts) != len(c.fast) {
			t.Errorf("%s: %d statements, error %v; want %d", c.sql, len(stmts), err, len(c.fast))
			continue
		}
		for i, st := range stmts {
			q, _ := st.(*Query)
			if fast := q != nil && q.Rows != nil; fast != c.fast[i] {
				t.Errorf("%s: statement %d fast path %v, want %v", c.sql, i+1, fast, c.fast[i])
			}
			gen, err := parseGeneral(st.Text())
			if err != nil {
				t.Fatalf("%s: statement %d alone: %v", c.sql, i+1, err)
			}
			spliceRows(st)
			clearPositions(st)
			clearPositions(gen)
			if !reflect.DeepEqual(st, gen) {
				t.Errorf("%s: statement %d differs from its general path's tree", c.sql, i+1)
			}
		}
	}
}

// TestLiteralRowsFastPathRandom compares the two paths on random statements of literal rows.
func TestLiteralRowsFastPathRandom(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	lit := func() string {
		switch rng.IntN(12) {
		case 0:
			return "NULL"
		case 1:
			return []string{"TRUE", "false", "DEFAULT"}[rng.IntN(3)]
		case 2:
			return fmt.Sprint(-rng.Int64())
		case 3:
			return fmt.Sprint(rng.Uint64())
		case 4:
			return strings.Repeat("9", 1+rng.IntN(70))
		case 5:
			return fmt.Sprintf("%d.%d", rng.IntN(1000), rng.IntN(100000))
		case 6:
			return "-" + fmt.Sprintf("%d.%0*d", rng.IntN(1e6), 1+rng.IntN(40), rng.IntN(1000))
		case 7:
			return "E'" + []string{`\t`, `\n`, `\\`, `\'`, `x`, `\x41`, `\u263a`}[rng.IntN(7)] + "'"
		default:
			const chars = "ab'\\ \t\n☃é\"$;()-"
			var b strings.Builder
			b.WriteByte('\'')
			for range rng.IntN(12) {
				r := []rune(chars)[rng.IntN(len([]rune(chars)))]
				if r == '\'' {
					b.WriteString("''")
				} else {
					b.WriteRune(r)
				}
			}
			b.WriteByte('\'')
			return b.String()
		}
	}
	for range 300 {
		var b strings.Builder
		b.WriteString("INSERT INTO t VALUES ")
		width := 1 + rng.IntN(4)
		for r := range 2 + rng.IntN(5) {
			if r > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for c := range width {
				if c > 0 {
					b.WriteByte(',')
				}
				b.WriteString(lit())
			}
			b.WriteByte(')')
		}
		sql := b.String()
		checkSamePaths(t, sql)
	}
}

// BenchmarkParseInsertValues parses a 1000-row INSERT of literals (the ingest bench's
// statement) on the fast path and on the general path; it reports ns per row.
func BenchmarkParseInsertValues(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("INSERT INTO t VALUES ")
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "(%d,%d,'row %d')", 1<<40+i, i%1000, i)
	}
	sql := sb.String()
	for _, path := range []struct {
		name  string
		parse func(string) error
	}{
		{"fast", func(s string) error { _, err := Parse(s); return err }},
		{"general", func(s string) error { _, err := parseGeneral(s); return err }},
	} {
		b.Run(path.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := path.parse(sql); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/row")
		})
	}
}

// FuzzLiteralRows: any text parses with the lexer reading literal rows (Parse) to the same
// statements, or the same error, as without it (the general path).
func FuzzLiteralRows(f *testing.F) {
	for _, s := range []string{
		"INSERT INTO t VALUES (1, 'a'), (2, 'b'); SELECT 1",
		"INSERT INTO t (a, b) VALUES (1, -2), (3, E'x\\ty'), (-4, $$z$$) RETURNING a",
		"INSERT INTO t VALUES (1), (- 2), (-.5), (1e3), ('it''s'), (N'n'), (X'ff')",
		"INSERT INTO t VALUES (1), (2) ON CONFLICT (a) DO NOTHING; INSERT INTO u VALUES ((1)), (NULL), (true)",
		"INSERT INTO t VALUES (1), /* c */ (2) -- d\n, (3)",
		"INSERT INTO t VALUES (1), ('unterminated",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		fast, _, ferr := ParseNotices(sql)
		gen, _, gerr := parseAll(sql, false)
		if ferr != nil || gerr != nil {
			var fe, ge *types.Error
			if !errors.As(ferr, &fe) || !errors.As(gerr, &ge) || fe.Kind != ge.Kind || fe.Pos != ge.Pos || fe.Msg != ge.Msg {
				t.Fatalf("%q:\nwith literal rows: %v\nwithout:           %v", sql, ferr, gerr)
			}
			return
		}
		if len(fast) != len(gen) {
			t.Fatalf("%q: %d statements, %d without literal rows", sql, len(fast), len(gen))
		}
		for i := range fast {
			gq, _ := gen[i].(*Query)
			if gq != nil && gq.Rows != nil {
				t.Fatalf("%q: statement %d has literal rows without the lexer's", sql, i+1)
			}
			spliceRows(fast[i])
			for _, st := range []Statement{fast[i], gen[i]} {
				clearPositions(st)
			}
			if !reflect.DeepEqual(fast[i], gen[i]) {
				t.Fatalf("%q: statement %d differs", sql, i+1)
			}
		}
	})
}

// TestLiteralStringsCopied: a literal row's string does not point into the statement's
// text, which a job keeping the value (a group's key, a cached join row) would keep whole.
func TestLiteralStringsCopied(t *testing.T) {
	sql := "INSERT INTO t VALUES (1, 'first'), (2, 'second'), (3, 'it''s')"
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	q := stmts[0].(*Query)
	lo := uintptr(unsafe.Pointer(unsafe.StringData(sql)))
	for _, row := range q.Rows {
		v := row[1].Val
		if p := uintptr(unsafe.Pointer(unsafe.StringData(v))); p >= lo && p < lo+uintptr(len(sql)) {
			t.Errorf("literal %q points into the statement's text", v)
		}
	}
}
