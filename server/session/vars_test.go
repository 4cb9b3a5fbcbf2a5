package session

import (
	"errors"
	"testing"
	"time"

	"github.com/tributary/tributary/sql/types"
)

func TestDurationSettings(t *testing.T) {
	v := newVars()
	for in, want := range map[string]string{
		"0": "0", "100": "100ms", "1500": "1500ms", "1000": "1s", "100ms": "100ms", "2s": "2s",
		"1.5s": "1500ms", "5min": "5min", "60s": "1min", "1h": "1h", "1d": "1d", "500us": "1ms", " 3 s": "3s",
	} {
		if _, err := v.set("statement_timeout", in, false); err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got, _ := v.get("statement_timeout"); got != want {
			t.Errorf("%q: shown as %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"soon", "-1", "5 parsecs", "3000000000"} {
		if _, err := v.set("statement_timeout", bad, false); !errors.Is(err, types.ErrInvalidParameter) {
			t.Errorf("%q: %v, want 22023", bad, err)
		}
	}
	if _, err := v.set("idle_in_transaction_session_timeout", "1.5s", false); err != nil {
		t.Fatal(err)
	}
	if d := v.millisSetting("idle_in_transaction_session_timeout"); d != 1500*time.Millisecond {
		t.Errorf("idle timeout %v", d)
	}
}

// TestIgnoredSettingsSaySo: a value Tributary accepts but does not honour
// comes back with a notice; an honoured one without.
func TestIgnoredSettingsSaySo(t *testing.T) {
	v := newVars()
	for _, c := range []struct {
		name, value string
		notice      bool
	}{
		{"lock_timeout", "0", false}, {"lock_timeout", "1s", true},
		{"transaction_isolation", "repeatable read", false}, {"transaction_isolation", "serializable", true},
		{"transaction_isolation", "read committed", true}, {"default_transaction_isolation", "repeatable  read", false},
		{"transaction_read_only", "off", false}, {"transaction_read_only", "on", true},
		{"synchronous_commit", "on", false}, {"synchronous_commit", "off", true},
		{"client_min_messages", "notice", false}, {"client_min_messages", "warning", true},
		{"datestyle", "ISO, MDY", false}, {"datestyle", "iso", false}, {"datestyle", "German, DMY", true},
		{"search_path", `"$user", public`, false}, {"search_path", "public", false}, {"search_path", "myschema, public", false},
		{"extra_float_digits", "3", false}, {"extra_float_digits", "0", true},
		{"query_mode", "auto", false}, {"query_mode", "distributed", true},
		{"statement_timeout", "1s", false}, {"idle_in_transaction_session_timeout", "1s", false},
	} {
		notice, err := v.set(c.name, c.value, false)
		if err != nil {
			t.Errorf("%s = %q: %v", c.name, c.value, err)
		} else if (notice != "") != c.notice {
			t.Errorf("%s = %q: notice %q", c.name, c.value, notice)
		}
	}
	for _, c := range [][2]string{{"transaction_isolation", "chaos"}, {"synchronous_commit", "maybe"}, {"client_min_messages", "loud"}, {"extra_float_digits", "4"}} {
		if _, err := v.set(c[0], c[1], false); !errors.Is(err, types.ErrInvalidParameter) {
			t.Errorf("%s = %q: %v, want 22023", c[0], c[1], err)
		}
	}
}
