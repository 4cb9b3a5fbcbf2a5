package state

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

// writerTable is a table with blocks (a, b, v), pk (a, b), over kv, and the
// function that commits what it holds as the coordinator does (its fresh rows
// sealed into the epoch's batch, the committed layers dropped after),
// returning the epoch committed.
func writerTable(t *testing.T, kv storage.KV) (*Table, func() uint64) {
	t.Helper()
	tbl, err := New(kv, Schema{TableID: 41, Types: []types.T{types.TInt64, types.TInt64, types.TVarchar}, PK: []int{0, 1}, DistKey: []int{0}, Blocks: true})
	if err != nil {
		t.Fatal(err)
	}
	epoch := uint64(1) << 16
	return tbl, func() uint64 {
		t.Helper()
		b := new(storage.Batch)
		tbl.Flush(epoch, b)
		if j := tbl.TakeFresh(epoch); j != nil {
			j.Write(b)
		}
		if err := kv.Commit(context.Background(), epoch, b); err != nil {
			t.Fatal(err)
		}
		epoch++
		tbl.Flush(epoch, new(storage.Batch)) // drops the committed layers (nothing pending)
		return epoch - 1
	}
}

// TestBlockCacheAtOlderEpochs: a point read at an epoch older than the newest
// committed one (a writer's chunk that began before the last commit) finds
// the block that read finds uncached, also after a delete rewrote the block
// (the rewritten one keeps the epoch of the one it replaced) and the cache
// holds the rewritten one; it uses the cache for blocks read before it.
func TestBlockCacheAtOlderEpochs(t *testing.T) {
	ctx := context.Background()
	counted := &scanCounter{KV: memkv.New()}
	kv := storage.KV(counted)
	tbl, commit := writerTable(t, kv)
	row := func(k int64) []types.Datum {
		return []types.Datum{types.DInt(7), types.DInt(k), types.DString(fmt.Sprint("v", k))}
	}
	for k := range int64(200) {
		if err := tbl.InsertFresh(row(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	loaded := commit()
	key := tbl.rowKey(nil, row(100))
	holds := func(b block) bool {
		_, ok, err := b.get(key[len(key)-len(tbl.EncodePK(nil, []types.Datum{types.DInt(7), types.DInt(100)})):])
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	b, ok, err := tbl.findBlockCached(ctx, key, loaded)
	if err != nil || !ok || !holds(b) {
		t.Fatalf("the load's block: found %v, holds row 100 %v, %v", ok, ok && holds(b), err)
	}
	if err := tbl.Delete(row(100)); err != nil {
		t.Fatal(err)
	}
	deleted := commit()
	if b, ok, err := tbl.findBlockCached(ctx, key, deleted); err != nil || ok && holds(b) {
		t.Fatalf("after the delete: found %v, holds row 100 %v, %v", ok, ok && holds(b), err)
	}
	if len(tbl.blockCache) == 0 {
		t.Fatal("nothing cached after the delete's read: the test needs the rewritten block cached")
	}
	want, wok, err := findBlock(ctx, kv, key, loaded)
	if err != nil || !wok || !holds(want) {
		t.Fatalf("uncached at the load's epoch: found %v, %v", wok, err)
	}
	b, ok, err = tbl.findBlockCached(ctx, key, loaded)
	if err != nil || !ok || !holds(b) || !bytes.Equal(b.data, want.data) {
		t.Fatalf("at the load's epoch after the delete: found %v, holds row 100 %v, %v", ok, ok && holds(b), err)
	}
	// A block read at the newest epoch answers reads at that epoch after a
	// later commit (no delete between) from the cache.
	other := tbl.rowKey(nil, row(101))
	tbl.blockCache = nil
	if _, ok, err := tbl.findBlockCached(ctx, other, deleted); err != nil || !ok {
		t.Fatalf("row 101's block: %v %v", ok, err)
	}
	if err := tbl.Insert(row(1000)); err != nil {
		t.Fatal(err)
	}
	if later := commit(); kv.CommittedEpoch() != later {
		t.Fatal("the later epoch did not commit")
	}
	scans := counted.scans
	b, ok, err = tbl.findBlockCached(ctx, other, deleted)
	if err != nil || !ok || counted.scans != scans {
		t.Fatalf("row 101's block at the older epoch: found %v, %v, %d store scans", ok, err, counted.scans-scans)
	}
	if _, ok, _ := b.get(other[len(key)-len(tbl.EncodePK(nil, []types.Datum{types.DInt(7), types.DInt(101)})):]); !ok {
		t.Fatal("the cached block lacks row 101")
	}
}

// scanCounter counts a store's scans.
type scanCounter struct {
	storage.KV
	scans int
}

func (c *scanCounter) Scan(ctx context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	c.scans++
	return c.KV.Scan(ctx, lower, upper, epoch)
}

// getCounter counts a store's point reads.
type getCounter struct {
	storage.KV
	gets int
}

func (c *getCounter) Get(ctx context.Context, key []byte, epoch uint64, dst []byte) ([]byte, bool, error) {
	c.gets++
	return c.KV.Get(ctx, key, epoch, dst)
}

// TestRowGaps: point reads of a table with blocks in key order, each row
// then updated (written as a row key), read no row key each: a gap up to
// the next stored row key answers them; what they wrote, and the row key
// past the gap, read back.
func TestRowGaps(t *testing.T) {
	ctx := context.Background()
	counted := &getCounter{KV: memkv.New()}
	kv := storage.KV(counted)
	tbl, commit := writerTable(t, kv)
	row := func(k int64, v string) []types.Datum {
		return []types.Datum{types.DInt(7), types.DInt(k), types.DString(v)}
	}
	get := func(k int64) (string, bool) {
		t.Helper()
		r, found, err := tbl.GetAt(ctx, kv.CommittedEpoch(), []types.Datum{types.DInt(7), types.DInt(k)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return "", false
		}
		return r[2].S, true
	}
	for k := range int64(200) {
		if err := tbl.InsertFresh(row(k, fmt.Sprint("v", k)), 0); err != nil {
			t.Fatal(err)
		}
	}
	commit()
	if err := tbl.Insert(row(500, "row key")); err != nil {
		t.Fatal(err)
	}
	commit()
	gets := counted.gets
	for k := range int64(200) {
		if v, ok := get(k); !ok || v != fmt.Sprint("v", k) {
			t.Fatalf("row %d: %q %v", k, v, ok)
		}
		if err := tbl.Insert(row(k, fmt.Sprint("u", k))); err != nil {
			t.Fatal(err)
		}
		if k%50 == 49 {
			commit()
		}
	}
	if n := counted.gets - gets; n > 0 {
		t.Errorf("%d row-key reads for 200 reads in key order", n)
	}
	for k := range int64(200) {
		if v, ok := get(k); !ok || v != fmt.Sprint("u", k) {
			t.Fatalf("row %d after its update: %q %v", k, v, ok)
		}
	}
	if v, ok := get(500); !ok || v != "row key" {
		t.Fatalf("row 500: %q %v", v, ok)
	}
	if _, ok := get(300); ok {
		t.Fatal("row 300 found")
	}
}
