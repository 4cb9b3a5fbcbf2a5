package expr

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// Answers are PostgreSQL 15's (e2e/query/similar_to.slt checks more with -pg).
func TestSimilarTo(t *testing.T) {
	for _, c := range []struct {
		s, p, esc string
		want      bool
	}{
		{"abc", "abc", `\`, true},
		{"abc", "a", `\`, false},
		{"abc", "%(b|d)%", `\`, true},
		{"abc", "a_c", `\`, true},
		{"abc", "a.c", `\`, false},
		{"a]", "a[]x]", `\`, true},
		{"x", "[^]a]", `\`, true},
		{"]", "[^]a]", `\`, false},
		{"50%", `50\%`, `\`, true},
		{"50x", `50\%`, `\`, false},
		{"5_", "5#_", "#", true},
		{"5x", "5#_", "#", false},
		{`a\b`, `a\b`, "", true},
		{"a\nb", "a%b", `\`, true},
		{"aaa", "a{2,3}", `\`, true},
		{"a^$", "a^$", `\`, true},
	} {
		re, err := similarRegex(c.p, c.esc)
		if err != nil {
			t.Errorf("%q SIMILAR TO %q ESCAPE %q: %v", c.s, c.p, c.esc, err)
			continue
		}
		if got := re.MatchString(c.s); got != c.want {
			t.Errorf("%q SIMILAR TO %q ESCAPE %q = %v (regexp %s)", c.s, c.p, c.esc, got, re)
		}
	}
	if _, err := similarRegex("a", "xy"); !errors.Is(err, types.ErrInvalidEscape) {
		t.Errorf("two-character escape: %v, want ErrInvalidEscape", err)
	}
}
