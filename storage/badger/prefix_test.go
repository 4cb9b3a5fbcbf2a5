package badger

import (
	"bytes"
	"testing"

	"github.com/tributary/tributary/storage/codec"
)

// TestRangePrefix: every key of [lower, upper) starts with rangePrefix's
// answer (checked over every key of up to four bytes from a small alphabet),
// and a vnode's range gets the vnode's whole prefix.
func TestRangePrefix(t *testing.T) {
	alphabet := []byte{0x00, 0x01, 0xfe, 0xff}
	var keys [][]byte
	var gen func(k []byte)
	gen = func(k []byte) {
		keys = append(keys, bytes.Clone(k))
		if len(k) == 4 {
			return
		}
		for _, b := range alphabet {
			gen(append(k, b))
		}
	}
	gen(nil)
	for _, lower := range keys {
		for _, upper := range keys {
			if bytes.Compare(lower, upper) >= 0 {
				continue
			}
			p := rangePrefix(lower, upper)
			if !bytes.HasPrefix(lower, p) {
				t.Fatalf("rangePrefix(%x, %x) = %x, not a prefix of lower", lower, upper, p)
			}
			for _, k := range keys {
				if bytes.Compare(k, lower) >= 0 && bytes.Compare(k, upper) < 0 && !bytes.HasPrefix(k, p) {
					t.Fatalf("rangePrefix(%x, %x) = %x, but %x is in the range", lower, upper, p, k)
				}
			}
		}
	}
	for _, v := range []uint16{0, 1, 0x7f, 0xff, 0x100, 0xffff} {
		prefix := codec.AppendTablePrefix(nil, 0x01ff, v)
		for _, lower := range [][]byte{prefix, append(bytes.Clone(prefix), 0x42, 0xff)} {
			if got := rangePrefix(lower, codec.PrefixEnd(prefix)); !bytes.Equal(got, prefix) {
				t.Errorf("vnode %d range from %x: prefix %x, want %x", v, lower, got, prefix)
			}
		}
	}
}
