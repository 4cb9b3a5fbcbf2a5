// Package testseed gives randomized tests their seed: the same on every run, so a test that fails fails
// again, and TEST_SEED=<n> to explore other runs or replay one another machine logged. Every test
// that draws random numbers logs the seed it used.
package testseed

import (
	"os"
	"strconv"
	"testing"
)

// Default is the seed of every run without TEST_SEED.
const Default = 20261204

// For returns the seed of t's run (TEST_SEED, else Default) and logs it.
func For(t testing.TB) uint64 {
	t.Helper()
	s := uint64(Default)
	if v := os.Getenv("TEST_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("TEST_SEED=%q: %v", v, err)
		}
		s = n
	}
	t.Logf("seed %d (rerun with TEST_SEED=%d)", s, s)
	return s
}

// Int64 is For as an int64, for math/rand's NewSource.
func Int64(t testing.TB) int64 {
	t.Helper()
	return int64(For(t))
}
