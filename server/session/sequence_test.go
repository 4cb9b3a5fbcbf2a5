package session

import (
	"context"
	"errors"
	"testing"

	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

// commitPending commits the allocator's pending reservations at epoch, as a
// DML's epoch does, and confirms them.
func commitPending(t *testing.T, kv storage.KV, s *sequences, epoch uint64) {
	t.Helper()
	tables := batch.NewTableSet(kv)
	done := s.addPending(tables)
	var b storage.Batch
	tables.Flush(epoch, &b)
	if err := kv.Commit(context.Background(), epoch, &b); err != nil {
		t.Fatal(err)
	}
	s.confirm(done)
}

func TestSequenceResumesAboveReservation(t *testing.T) {
	ctx := context.Background()
	kv := memkv.New()
	seq, err := newSequence("t_id_seq", types.TInt32, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := newSequences(kv)
	for want := int64(1); want <= 40; want++ {
		if v, err := s.next(ctx, 7, "id", seq); err != nil || v != want {
			t.Fatalf("next = %d, %v; want %d", v, err, want)
		}
	}
	commitPending(t, kv, s, 1)
	if p := s.pendingSnapshot(); p != nil {
		t.Fatalf("pending after commit: %v", p)
	}
	// A new process (after kill -9) resumes above the last reserved block.
	s2 := newSequences(kv)
	v, err := s2.next(ctx, 7, "id", seq)
	if err != nil || v <= 40 || v > 40+seqBlock {
		t.Fatalf("after restart next = %d, %v; want in (40, %d]", v, err, 40+seqBlock)
	}
	// Another column's sequence is independent.
	if v, err := s2.next(ctx, 7, "other", seq); err != nil || v != 1 {
		t.Fatalf("other column: %d, %v", v, err)
	}
}

func TestSequenceBounds(t *testing.T) {
	ctx := context.Background()
	s := newSequences(memkv.New())
	seq, err := newSequence("t_id_seq", types.TInt16, 32766, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{32766, 32767} {
		if v, err := s.next(ctx, 1, "id", seq); err != nil || v != want {
			t.Fatalf("next = %d, %v; want %d", v, err, want)
		}
	}
	if _, err := s.next(ctx, 1, "id", seq); !errors.Is(err, types.ErrSequenceLimit) {
		t.Fatalf("past the maximum: %v", err)
	}
	down, err := newSequence("d_id_seq", types.TInt64, 0, -5)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{-1, -6, -11} {
		if v, err := s.next(ctx, 2, "id", down); err != nil || v != want {
			t.Fatalf("descending next = %d, %v; want %d", v, err, want)
		}
	}
	if _, err := newSequence("x", types.TInt32, -3, 0); !errors.Is(err, types.ErrInvalidParameter) {
		t.Fatalf("start below minimum: %v", err)
	}
}

func TestSequenceSet(t *testing.T) {
	ctx := context.Background()
	kv := memkv.New()
	seq, err := newSequence("t_id_seq", types.TInt64, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := newSequences(kv)
	if err := s.set(ctx, 3, "id", seq, 50, true); err != nil {
		t.Fatal(err)
	}
	if v, err := s.next(ctx, 3, "id", seq); err != nil || v != 51 {
		t.Fatalf("after setval(50): %d, %v", v, err)
	}
	if err := s.set(ctx, 3, "id", seq, 10, false); err != nil {
		t.Fatal(err)
	}
	commitPending(t, kv, s, 1)
	s2 := newSequences(kv)
	if v, err := s2.next(ctx, 3, "id", seq); err != nil || v != 10 {
		t.Fatalf("after setval(10, false) and a restart: %d, %v", v, err)
	}
	if err := s2.set(ctx, 3, "id", seq, 0, true); !errors.Is(err, types.ErrNumericOutOfRange) {
		t.Fatalf("setval below the minimum: %v", err)
	}
}
