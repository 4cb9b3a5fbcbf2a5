package codec

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"

	"github.com/tributary/tributary/sql/types"
)

// VnodeCount is the number of virtual nodes a table's rows are spread over.
const VnodeCount = 256

// TablePrefixLen is the length of the table_id(4) | vnode(2) prefix of every state key.
const TablePrefixLen = 6

// VnodeOf maps a distribution-key hash to its vnode.
func VnodeOf(hash uint64) uint16 { return uint16(hash % VnodeCount) }

// HashRow hashes the columns cols of row (types ts) with types.HashInto; it decides a row's vnode.
// An empty cols hashes to the hash of nothing (every row on one vnode).
func HashRow(ts []types.T, row []types.Datum, cols []int) uint64 {
	if len(cols) == 1 {
		return types.Hash(ts[cols[0]], &row[cols[0]])
	}
	var h xxhash.Digest
	h.Reset()
	for _, c := range cols {
		types.HashInto(&h, ts[c], &row[c])
	}
	return h.Sum64()
}

// HashChunkRow is HashRow of row i of c: only its cols are read, straight
// from their vectors (d is scratch space).
func HashChunkRow(c *types.Chunk, i int, cols []int, d *types.Datum) uint64 {
	if len(cols) == 1 {
		v := &c.Cols[cols[0]]
		v.GetInto(i, d)
		return types.Hash(v.Type, d)
	}
	var h xxhash.Digest
	h.Reset()
	for _, k := range cols {
		v := &c.Cols[k]
		v.GetInto(i, d)
		types.HashInto(&h, v.Type, d)
	}
	return h.Sum64()
}

// AppendTablePrefix appends table_id(4) | vnode(2), big endian.
func AppendTablePrefix(buf []byte, tableID uint32, vnode uint16) []byte {
	buf = binary.BigEndian.AppendUint32(buf, tableID)
	return binary.BigEndian.AppendUint16(buf, vnode)
}

// SplitTablePrefix returns the table id and vnode a state key starts with; ok is false when key is
// shorter than the prefix.
func SplitTablePrefix(key []byte) (tableID uint32, vnode uint16, ok bool) {
	if len(key) < TablePrefixLen {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(key), binary.BigEndian.Uint16(key[4:]), true
}

// TableSpan returns the key range [lower, upper) holding every row of a table.
func TableSpan(tableID uint32) (lower, upper []byte) {
	lower = binary.BigEndian.AppendUint32(nil, tableID)
	return lower, PrefixEnd(lower)
}

// VnodeSpan returns the key range [lower, upper) holding a table's rows on one vnode.
func VnodeSpan(tableID uint32, vnode uint16) (lower, upper []byte) {
	lower = AppendTablePrefix(nil, tableID, vnode)
	return lower, PrefixEnd(lower)
}

// PrefixEnd returns the smallest key above every key starting with prefix, or nil (unbounded) when
// prefix is all 0xFF.
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
