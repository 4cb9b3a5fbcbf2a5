package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tributary/tributary/storage"
)

// ReopenOpener opens the store persisted in dir (creating it when dir is empty).
type ReopenOpener func(t *testing.T, dir string) storage.KV

// RunReopen checks what a persistent store keeps across Close and Open: data and its versions, the
// committed epoch, MaxVersion, and the discard epoch.
func RunReopen(t *testing.T, open ReopenOpener) {
	t.Run("DataAndEpochs", func(t *testing.T) {
		dir := t.TempDir()
		kv := open(t, dir)
		commit(t, kv, 10, put("a", "1"), put("b", "1"))
		commit(t, kv, 20, put("a", "2"), del("b"), put("empty", ""))
		commit(t, kv, 30)
		if err := kv.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := kv.Close(); err != nil {
			t.Fatal(err)
		}
		kv = open(t, dir)
		defer kv.Close()
		if e := kv.CommittedEpoch(); e != 30 {
			t.Fatalf("committed epoch after reopen %d, want 30", e)
		}
		if v := kv.MaxVersion(); v < 30 {
			t.Fatalf("max version after reopen %d, want >= 30", v)
		}
		expect(t, "at 10", scan(t, kv, "", "", 10, false), []string{"a=1", "b=1"})
		expect(t, "at 30", scan(t, kv, "", "", 30, false), []string{"a=2", "empty="})
		var b storage.Batch
		if err := kv.Commit(context.Background(), 30, &b); !errors.Is(err, storage.ErrStaleEpoch) {
			t.Fatalf("commit at the reopened committed epoch: %v", err)
		}
		commit(t, kv, 31, put("c", "3"))
		expect(t, "at 31", scan(t, kv, "", "", 31, false), []string{"a=2", "c=3", "empty="})
	})
	t.Run("DiscardEpochPersists", func(t *testing.T) {
		dir := t.TempDir()
		kv := open(t, dir)
		commit(t, kv, 10, put("a", "1"))
		commit(t, kv, 20, put("a", "2"))
		if err := kv.SetDiscardEpoch(20); err != nil {
			t.Fatal(err)
		}
		commit(t, kv, 30, put("a", "3")) // persists the discard epoch
		if err := kv.Close(); err != nil {
			t.Fatal(err)
		}
		kv = open(t, dir)
		defer kv.Close()
		if d := kv.DiscardEpoch(); d != 20 {
			t.Fatalf("discard epoch after reopen %d, want 20", d)
		}
		if _, _, err := kv.Get(context.Background(), []byte("a"), 10, nil); !errors.Is(err, storage.ErrEpochDiscarded) {
			t.Fatalf("read below the persisted discard epoch: %v", err)
		}
		if g := get(t, kv, "a", 20); g != "2" {
			t.Fatalf("a at 20 = %q", g)
		}
	})
	t.Run("ManyEpochs", func(t *testing.T) {
		dir := t.TempDir()
		kv := open(t, dir)
		for e := uint64(1); e <= 100; e++ {
			commit(t, kv, e, put(fmt.Sprintf("k%03d", e%17), fmt.Sprint(e)))
		}
		if err := kv.Close(); err != nil {
			t.Fatal(err)
		}
		kv = open(t, dir)
		defer kv.Close()
		for e := uint64(80); e <= 100; e++ {
			if g := get(t, kv, fmt.Sprintf("k%03d", e%17), e); g != fmt.Sprint(e) {
				t.Fatalf("key written at %d reads %q", e, g)
			}
		}
	})
}
