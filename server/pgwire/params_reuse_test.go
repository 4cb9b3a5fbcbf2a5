package pgwire

import (
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestParamsReuse: an unnamed portal of a statement without result columns
// reuses the parameters' memory of the last such portal only once that one
// ran to completion and was closed; one closed before completing gives its
// memory up, and a named portal, or one of a statement with columns, never
// takes it.
func TestParamsReuse(t *testing.T) {
	c := &conn{portals: map[string]*portal{}}
	same := func(a, b []types.Datum) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }
	bind := func(name string, reuse bool, n int) (*portal, bool) {
		params, reused := c.paramsFor(reuse, n)
		p := &portal{name: name, params: params}
		c.portals[name] = p
		if reused {
			c.paramOwner = p
		}
		return p, reused
	}
	first, reused := bind("", true, 3000)
	if !reused {
		t.Fatal("the first portal did not take the buffer")
	}
	// Still open: the next portal gets its own memory.
	named, reused := bind("n", true, 10)
	if reused || same(named.params, first.params) {
		t.Fatal("an open owner's parameters were handed out again")
	}
	// Completed and closed: reused.
	first.done = true
	delete(c.portals, "")
	second, reused := bind("", true, 1000)
	if !reused || !same(second.params, first.params) {
		t.Fatal("a completed, closed owner's memory was not reused")
	}
	// A statement with columns takes none of it.
	delete(c.portals, "")
	second.done = true
	if _, reused := c.paramsFor(false, 10); reused {
		t.Fatal("a statement with columns reused the buffer")
	}
	// Closed before completing: its memory is given up.
	third, _ := bind("", true, 10)
	delete(c.portals, "")
	fourth, reused := bind("", true, 10)
	if same(fourth.params, third.params) {
		t.Fatal("a portal closed before completing had its parameters reused")
	}
	if !reused {
		t.Fatal("a new buffer was not started after the old one was given up")
	}
}
