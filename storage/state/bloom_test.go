package state

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// TestLayerFilter: a layer big enough for its filter finds every key it holds, and answers
// absent keys as absent; the filter says "maybe" for few of them (about 1.4% at 16 bits a key).
func TestLayerFilter(t *testing.T) {
	const n = 1000
	l := &layer{}
	for i := range n {
		l.entries = append(l.entries, entry{key: fmt.Sprintf("k%06d", 2*i), value: []byte{byte(i)}})
	}
	for i := range n {
		e, ok := l.find(fmt.Sprintf("k%06d", 2*i))
		if !ok || e.value[0] != byte(i) {
			t.Fatalf("key %d: found %v", 2*i, ok)
		}
		if _, ok := l.find(fmt.Sprintf("k%06d", 2*i+1)); ok {
			t.Fatalf("absent key %d found", 2*i+1)
		}
	}
	if l.filter == nil {
		t.Fatal("the layer's finds did not build its filter")
	}
	maybe := 0
	for i := range 10 * n {
		if l.filter.has(maphash.String(prefixSeed, fmt.Sprintf("absent%d", i))) {
			maybe++
		}
	}
	if maybe > 10*n*3/100 {
		t.Fatalf("the filter said maybe for %d of %d absent keys", maybe, 10*n)
	}
}
