package pgwire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestSQLStateTableMatchesTypes checks the SQLSTATE table against the codes written
// next to each kind in sql/types/errors.go, so a new kind cannot be forgotten.
func TestSQLStateTableMatchesTypes(t *testing.T) {
	src, err := os.ReadFile("../../sql/types/errors.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*Err\w+\s*=\s*errors\.New\("([^"]*)"\)\s*//\s*([0-9A-Z]{5})`)
	kinds := re.FindAllStringSubmatch(string(src), -1)
	if len(kinds) == 0 {
		t.Fatal("no kinds found in sql/types/errors.go")
	}
	byText := map[string]string{}
	for _, s := range sqlStates {
		byText[s.kind.Error()] = s.code
	}
	for _, k := range kinds {
		code, ok := byText[k[1]]
		if !ok {
			t.Errorf("kind %q (%s) missing from the SQLSTATE table", k[1], k[2])
		} else if code != k[2] {
			t.Errorf("kind %q maps to %s, errors.go says %s", k[1], code, k[2])
		}
	}
	if len(kinds) != len(sqlStates)-2 { // + context.Canceled, syscall.ENOSPC
		t.Errorf("errors.go has %d kinds, the table %d entries", len(kinds), len(sqlStates))
	}
}

func TestToPgError(t *testing.T) {
	inner := &types.Error{Kind: types.ErrNumericOutOfRange, Msg: "numeric field overflow", Pos: 7,
		Detail: "A field with precision 3", Hint: "use a wider type"}
	for _, tc := range []struct {
		err  error
		want pgError
	}{
		{fmt.Errorf("insert into t: %w", inner),
			pgError{Code: "22003", Message: "numeric field overflow", Detail: "A field with precision 3", Hint: "use a wider type", Position: 7}},
		{&types.Error{Kind: &types.Error{Kind: types.ErrSyntax, Msg: "inner"}, Msg: "outer"},
			pgError{Code: "42601", Message: "inner"}},
		{errors.New("disk on fire"), pgError{Code: "XX000", Message: "disk on fire"}},
		{fmt.Errorf("scan: %w", context.Canceled), pgError{Code: "57014", Message: "canceling statement due to user request"}},
		{wireErrorf(codeUndefinedPortal, "portal %q does not exist", "p"), pgError{Code: "34000", Message: `portal "p" does not exist`}},
	} {
		if got := toPgError(tc.err); got != tc.want {
			t.Errorf("%v: got %+v, want %+v", tc.err, got, tc.want)
		}
	}
}

// TestCheckText: invalid UTF-8 and NUL are PostgreSQL's 22021 naming the
// bytes of the bad character (as many as its first byte announces).
func TestCheckText(t *testing.T) {
	for in, want := range map[string]string{
		"abc":            "",
		"café 😀":         "",
		"a\xffb":         "0xff",
		"a\x00b":         "0x00",
		"caf\xc3(":       "0xc3 0x28",
		"\xe2\x82":       "0xe2 0x82",
		"x\xed\xa0\x80y": "0xed 0xa0 0x80",
		"\xf0\x9f\x98":   "0xf0 0x9f 0x98",
		"\xc0\xaf":       "0xc0 0xaf",
	} {
		err := checkText(in)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", in, err)
			}
			continue
		}
		pe := toPgError(err)
		if pe.Code != "22021" || pe.Message != `invalid byte sequence for encoding "UTF8": `+want {
			t.Errorf("%q: %s %q", in, pe.Code, pe.Message)
		}
		if err2 := checkText([]byte(in)); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%q as bytes: %v", in, err2)
		}
	}
}

// TestDiskFull: a full disk met in storage (its ErrDiskFull wraps ENOSPC, as
// a failed write does) is 53100 without the storage error's epochs and paths.
func TestDiskFull(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("commit epoch 7234: data dir /var/lib/tributary has 1024 bytes free, below the minimum 67108864: %w",
			fmt.Errorf("storage: not enough free disk space: %w", syscall.ENOSPC)),
		fmt.Errorf("commit epoch 9: write /data/000012.vlog: %w", &os.PathError{Op: "write", Path: "/data/000012.vlog", Err: syscall.ENOSPC}),
	} {
		pe := toPgError(err)
		if pe.Code != "53100" || strings.Contains(pe.Message, "epoch") || strings.Contains(pe.Message, "/") ||
			!strings.Contains(pe.Message, "No space left on device") {
			t.Errorf("%v: %s %q", err, pe.Code, pe.Message)
		}
	}
}
