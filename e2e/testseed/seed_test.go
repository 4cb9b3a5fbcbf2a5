package testseed

import "testing"

func TestFor(t *testing.T) {
	t.Setenv("TEST_SEED", "")
	if got := For(t); got != Default {
		t.Errorf("For without TEST_SEED = %d, want %d", got, uint64(Default))
	}
	t.Setenv("TEST_SEED", "42")
	if got := Int64(t); got != 42 {
		t.Errorf("Int64 with TEST_SEED=42 = %d", got)
	}
}
