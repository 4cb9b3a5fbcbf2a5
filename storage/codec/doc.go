// Package codec encodes SQL values for storage: memcomparable keys, compact row values and the
// state key layout.
//
// EncodeKey/AppendKey write order-preserving keys (bytes.Compare of two encodings orders like
// types.Compare, NULLs last, with a per-column descending variant); EncodeRow/DecodeRow write and
// read a row's values (DecodeRowMissing gives trailing columns a row was stored without a value); AppendTablePrefix and VnodeOf lay out keys as table_id(4) | vnode(2) | pk.
// Every Append function appends to a caller buffer and does not allocate on the common path.
package codec
