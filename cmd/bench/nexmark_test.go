package main

import (
	"os"
	"testing"

	"github.com/tributary/tributary/connector/nexmark/queries"
)

func TestNexmarkHelpers(t *testing.T) {
	for n, want := range map[int64]int64{1000: 920, 2000: 1840, 3: 0, 4: 0, 5: 1, 51: 46} {
		if got := bidCount(n); got != want {
			t.Errorf("bidCount(%d) = %d; want %d", n, got, want)
		}
	}
	for _, q := range nexmarkPassing {
		if _, ok := queries.Lookup(q); !ok {
			t.Errorf("--all names unknown query %s", q)
		}
	}
	if s, err := procCPUSeconds(os.Getpid()); err != nil || s < 0 {
		t.Fatalf("procCPUSeconds: %v, %v", s, err)
	}
	if r, err := generatorRate(5000); err != nil || r <= 0 {
		t.Fatalf("generatorRate: %v, %v", r, err)
	}
}
