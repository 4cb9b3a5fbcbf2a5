package main

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestDMLMemorySmall runs the dml-memory workload on a small statement staged in several pieces:
// the rows must all be there (dmlMemoryRun checks) and the memory figures read.
func TestDMLMemorySmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := &env{dir: t.TempDir(), bin: testserver.Build(t)}
	r, err := dmlMemoryRun(ctx, e, []string{"--dml-spill-rows", "5000"}, 30000, true, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Seconds <= 0 || r.BeforeKB <= 0 || r.PeakKB < r.AfterKB || r.PeakAnonKB <= 0 || r.IdleKB <= 0 {
		t.Errorf("%+v", r)
	}
}
