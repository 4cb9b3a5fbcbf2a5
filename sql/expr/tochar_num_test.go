package expr

import "testing"

// Expected values are PostgreSQL 15's (e2e/query/to_char_number.slt has more, checked with -pg).
func TestToCharNumber(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"to_char(12.5, '999.99')", "  12.50"},
		{"to_char(-12.5, '999.99')", " -12.50"},
		{"to_char(0.5, '999.99')", "    .50"},
		{"to_char(0.5, 'FM999.99')", ".5"},
		{"to_char(0, 'FM999.99')", "0."},
		{"to_char(-12, '0999')", "-0012"},
		{"to_char(1234567.891, '9,999,999.99')", " 1,234,567.89"},
		{"to_char(12345, '999')", " ###"},
		{"to_char(-12, 'S999')", " -12"},
		{"to_char(-485, '999PR')", "<485>"},
		{"to_char(12345.678, '9.99EEEE')", " 1.23e+04"},
		{"to_char(2.5::float8, '9')", " 2"},
		{"to_char(1.005, '9.99')", " 1.01"},
	} {
		got, err := evalText(c.expr, nil)
		if err != nil {
			t.Errorf("%s: error %v", c.expr, err)
		} else if got != c.want {
			t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
}
