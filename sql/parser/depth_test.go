package parser

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/sql/types"
)

func TestDepthLimits(t *testing.T) {
	n := types.MaxNesting
	for _, tc := range []struct {
		name string
		sql  string
		ok   bool
	}{
		{"plus chain at the limit", "SELECT 0" + strings.Repeat("+1", types.MaxExprDepth), true},
		{"plus chain past the limit", "SELECT 0" + strings.Repeat("+1", 400000), false},
		{"and chain past the limit", "SELECT 1 FROM t WHERE true" + strings.Repeat(" AND true", types.MaxExprDepth+1), false},
		{"casts past the limit", "SELECT 1" + strings.Repeat("::int", types.MaxExprDepth+1), false},
		{"many short items", "SELECT " + strings.Repeat("1+1, ", 50000) + "1", true},
		{"parentheses at the limit", "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n), true},
		{"parentheses past the limit", "SELECT " + strings.Repeat("(", 1000000) + "1" + strings.Repeat(")", 1000000), false},
		{"unbalanced past the limit", "SELECT " + strings.Repeat("(", 1000000), false},
		{"function calls past the limit", "SELECT " + strings.Repeat("abs(", n+1) + "1" + strings.Repeat(")", n+1), false},
		{"subqueries past the limit", "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", n+1) + "t" + strings.Repeat(") x", n+1), false},
		{"operators inside nested groups add up", "SELECT " + strings.Repeat("(1+1+1+1+1+1+1+1+1+1+1+", 999) + "1" + strings.Repeat(")", 999), false},
	} {
		start := time.Now()
		_, err := Parse(tc.sql)
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok {
			var te *types.Error
			if !errors.Is(err, types.ErrStackDepth) || !errors.As(err, &te) || te.Hint == "" {
				t.Errorf("%s: got %v, want ErrStackDepth with a hint", tc.name, err)
			}
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: parse took %v", tc.name, d)
		}
	}
}
