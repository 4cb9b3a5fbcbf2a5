// Package keyfilter is a scalable Bloom filter of 64-bit key hashes: it tells a key that was
// never added from one that may have been, in about 10 bits a key, without a size given up
// front. COPY uses one to know a key new without a lookup; a state table (storage/state,
// TrackPrefixes) keeps one per vnode to read nothing for a group it never held.
package keyfilter

import "math/bits"

// Filter is a scalable Bloom filter: MayContain is false only for a hash never added. It grows
// by adding a part twice the size of the last once that one holds its capacity, at about 10
// bits a key (about 1% false positives per part). The zero value is an empty filter whose
// first part holds DefaultFirst keys.
type Filter struct {
	// First is the capacity of the first part (0: DefaultFirst); set it before the first Add.
	First int
	parts []part
}

type part struct {
	bits []uint64
	mask uint64 // len(bits)*64 - 1
	n, c int    // keys added, capacity
}

// DefaultFirst is the capacity of a filter's first part unless First says otherwise.
const DefaultFirst = 1 << 16

// probes is how many bits a key sets per part.
const probes = 7

func newPart(capacity int) part {
	// 10 bits a key rounded up to a power of two: at least 10 bits a key.
	words := 1 << bits.Len(uint(capacity*10/64))
	return part{bits: make([]uint64, words), mask: uint64(words*64 - 1), c: capacity}
}

// Add records hash h.
func (f *Filter) Add(h uint64) {
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].n >= f.parts[len(f.parts)-1].c {
		c := f.First
		if c <= 0 {
			c = DefaultFirst
		}
		if len(f.parts) > 0 {
			c = 2 * f.parts[len(f.parts)-1].c
		}
		f.parts = append(f.parts, newPart(c))
	}
	p := &f.parts[len(f.parts)-1]
	h1, h2 := h, bits.RotateLeft64(h, 32)|1
	for i := 0; i < probes; i++ {
		b := (h1 + uint64(i)*h2) & p.mask
		p.bits[b>>6] |= 1 << (b & 63)
	}
	p.n++
}

// MayContain reports whether h may have been added (false: it was not).
func (f *Filter) MayContain(h uint64) bool {
	h1, h2 := h, bits.RotateLeft64(h, 32)|1
	for k := range f.parts {
		p := &f.parts[k]
		hit := true
		for i := 0; i < probes; i++ {
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
func (f *Filter) Bytes() int {
	n := 0
	for _, p := range f.parts {
		n += 8 * len(p.bits)
	}
	return n
}
