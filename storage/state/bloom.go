package state

// bloom is a Bloom filter of 64-bit key hashes with two probes: one bit each from the hash's
// low and high halves. At 16 bits a key it answers about 1.4% of absent keys wrongly (has:
// true); a present key always has.
type bloom []uint64

func (f bloom) add(h uint64) {
	n := uint64(len(f)) * 64
	a, b := uint64(uint32(h))%n, (h>>32)%n
	f[a/64] |= 1 << (a % 64)
	f[b/64] |= 1 << (b % 64)
}

func (f bloom) has(h uint64) bool {
	n := uint64(len(f)) * 64
	a, b := uint64(uint32(h))%n, (h>>32)%n
	return f[a/64]&(1<<(a%64)) != 0 && f[b/64]&(1<<(b%64)) != 0
}
