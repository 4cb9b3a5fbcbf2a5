package expr

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// Expected values are PostgreSQL 15's (session time zone UTC).
func TestAtTimeZone(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"timezone('UTC', '2024-01-01 10:00'::timestamp)", "2024-01-01 10:00:00+00"},
		{"timezone('America/New_York', '2024-07-01 10:00'::timestamp)", "2024-07-01 14:00:00+00"},
		{"timezone('America/New_York', '2024-01-01 10:00'::timestamp)", "2024-01-01 15:00:00+00"},
		{"timezone('Europe/Berlin', '2024-07-01 10:00+00'::timestamptz)", "2024-07-01 12:00:00"},
		{"timezone('+02:00', '2024-01-01 10:00+00'::timestamptz)", "2024-01-01 08:00:00"},
		{"timezone('-05:30', '2024-01-01 10:00+00'::timestamptz)", "2024-01-01 15:30:00"},
		{"timezone('02:00'::interval, '2024-01-01 10:00+00'::timestamptz)", "2024-01-01 12:00:00"},
	} {
		got, err := evalText(c.expr, nil)
		if err != nil {
			t.Errorf("%s: error %v", c.expr, err)
		} else if got != c.want {
			t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
	for _, e := range []string{
		"timezone('Mars/Olympus', '2024-01-01'::timestamp)",
		"timezone('1 day'::interval, '2024-01-01'::timestamp)",
	} {
		if _, err := evalText(e, nil); !errors.Is(err, types.ErrInvalidParameter) {
			t.Errorf("%s: error %v, want ErrInvalidParameter", e, err)
		}
	}
}
