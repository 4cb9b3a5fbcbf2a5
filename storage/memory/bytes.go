package memory

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// ErrBadSize is returned by ParseBytes for a size it cannot read.
var ErrBadSize = errors.New("invalid memory size")

// units are the suffixes ParseBytes accepts, lower-cased. As PostgreSQL's
// memory settings, kB, MB, GB and TB are powers of 1024; the IEC spellings
// (KiB, MiB, GiB, TiB) mean the same.
var units = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// ParseBytes reads a size in bytes with an optional unit: "2GB", "512MiB",
// "1.5 GiB", "65536". Units are powers of 1024 whatever their spelling, as in
// PostgreSQL's memory settings.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mul, ok := units[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("%w %q: want a number of bytes with an optional unit (kB, MB, GB, TB; KiB, MiB, GiB, TiB)", ErrBadSize, s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w %q: want a number of bytes with an optional unit (kB, MB, GB, TB; KiB, MiB, GiB, TiB)", ErrBadSize, s)
	}
	b := v * float64(mul)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("%w %q: too large", ErrBadSize, s)
	}
	return int64(b), nil
}

// FormatBytes writes n in the largest unit that divides it exactly, as
// PostgreSQL shows memory settings: 2147483648 is "2GB", 3072 is "3kB",
// 1000 is "1000B".
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
