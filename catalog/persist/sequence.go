package persist

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/tributary/tributary/storage"
)

var seqPrefix = []byte{0, 0, 0, TableID, 0, 0, 'q'}

// sequenceKey is where the sequence of column col of relation rel keeps
// the last value it may have handed out.
func sequenceKey(rel uint32, col string) []byte {
	k := append([]byte(nil), seqPrefix...)
	k = binary.BigEndian.AppendUint32(k, rel)
	return append(k, col...)
}

// SaveSequence records in b that the sequence of rel's column col may have
// handed out every value up to last (its values are reserved in blocks
// ahead of use, so none repeats after a crash).
func SaveSequence(b *storage.Batch, rel uint32, col string, last int64) {
	b.Put(sequenceKey(rel, col), binary.BigEndian.AppendUint64(nil, uint64(last)))
}

// LoadSequence reads what SaveSequence recorded; ok is false when nothing was.
func LoadSequence(ctx context.Context, kv storage.KV, rel uint32, col string) (last int64, ok bool, err error) {
	v, ok, err := kv.Get(ctx, sequenceKey(rel, col), kv.CommittedEpoch(), nil)
	if err != nil || !ok {
		return 0, false, err
	}
	if len(v) != 8 {
		return 0, false, fmt.Errorf("load sequence of relation %d column %s: %d bytes, want 8", rel, col, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// DeleteSequence removes the record of rel's column col in b.
func DeleteSequence(b *storage.Batch, rel uint32, col string) { b.Delete(sequenceKey(rel, col)) }
