package batch

import "math/bits"

// keyFilter is a scalable Bloom filter of 64-bit key hashes: MayContain is
// false only for a hash never added. It grows by adding a filter twice the
// size of the last once that one holds its capacity, so it needs no size up
// front and stays at about 10 bits a key (about 1% false positives per
// filter). COPY uses it to know a key new without a lookup.
type keyFilter struct {
	parts []bloomPart
}

type bloomPart struct {
	bits []uint64
	mask uint64 // len(bits)*64 - 1
	n, c int    // keys added, capacity
}

// keyFilterFirst is the capacity of the first part.
const keyFilterFirst = 1 << 16

// bloomProbes is how many bits a key sets per part.
const bloomProbes = 7

func newBloomPart(capacity int) bloomPart {
	// 10 bits a key rounded up to a power of two: at least 10 bits a key.
	words := 1 << bits.Len(uint(capacity*10/64))
	return bloomPart{bits: make([]uint64, words), mask: uint64(words*64 - 1), c: capacity}
}

// Add records hash h.
func (f *keyFilter) Add(h uint64) {
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].n >= f.parts[len(f.parts)-1].c {
		c := keyFilterFirst
		if len(f.parts) > 0 {
			c = 2 * f.parts[len(f.parts)-1].c
		}
		f.parts = append(f.parts, newBloomPart(c))
	}
	p := &f.parts[len(f.parts)-1]
	h1, h2 := h, bits.RotateLeft64(h, 32)|1
	for i := 0; i < bloomProbes; i++ {
		b := (h1 + uint64(i)*h2) & p.mask
		p.bits[b>>6] |= 1 << (b & 63)
	}
	p.n++
}

// MayContain reports whether h may have been added (false: it was not).
func (f *keyFilter) MayContain(h uint64) bool {
	h1, h2 := h, bits.RotateLeft64(h, 32)|1
	for k := range f.parts {
		p := &f.parts[k]
		hit := true
		for i := 0; i < bloomProbes; i++ {
			b := (h1 + uint64(i)*h2) & p.mask
			if p.bits[b>>6]&(1<<(b&63)) == 0 {
				hit = false
				break
			}
		}
		if hit {
			return true
		}
	}
	return false
}

// Bytes returns the filter's size.
func (f *keyFilter) Bytes() int {
	n := 0
	for _, p := range f.parts {
		n += 8 * len(p.bits)
	}
	return n
}
