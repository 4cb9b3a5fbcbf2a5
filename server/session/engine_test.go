package session

import (
	"errors"
	"testing"
)

// TestWithoutDDLLock: the DDL lock is free while fn runs and held again after it, when fn
// returns and when it panics (the caller's deferred unlock then still finds it held).
func TestWithoutDDLLock(t *testing.T) {
	e := &Engine{}
	e.ddl.Lock()
	want := errors.New("from fn")
	err := e.withoutDDLLock(func() error {
		if !e.ddl.TryLock() {
			t.Error("the DDL lock is held while fn runs")
		} else {
			e.ddl.Unlock()
		}
		return want
	})
	if !errors.Is(err, want) {
		t.Fatalf("returned %v, want fn's error", err)
	}
	if e.ddl.TryLock() {
		t.Fatal("the DDL lock is free after fn returned")
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("fn's panic did not reach the caller")
			}
		}()
		_ = e.withoutDDLLock(func() error { panic("a bug") })
	}()
	if e.ddl.TryLock() {
		t.Fatal("the DDL lock is free after fn panicked")
	}
	e.ddl.Unlock() // the caller's deferred unlock
}
