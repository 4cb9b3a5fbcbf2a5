package main

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/storage/memory"
)

// TestMemoryLimit: --memory-limit takes sizes with units, refuses bad ones
// and ones under the least budget, and defaults to 3/4 of the RAM.
func TestMemoryLimit(t *testing.T) {
	if n, from, err := memoryLimit("2GB"); err != nil || n != 2<<30 || from != "--memory-limit" {
		t.Errorf("2GB: %d from %q, %v", n, from, err)
	}
	if _, _, err := memoryLimit("lots"); !errors.Is(err, memory.ErrBadSize) {
		t.Errorf("lots: %v, want ErrBadSize", err)
	}
	if _, _, err := memoryLimit("1MB"); err == nil {
		t.Error("1MB accepted, below the least budget")
	}
	ram, _ := memory.SystemRAM()
	if n, from, err := memoryLimit(""); err != nil || n != max(ram/4*3, minMemoryLimit) || from == "" {
		t.Errorf("default: %d from %q, %v; RAM %d", n, from, err, ram)
	}
}
