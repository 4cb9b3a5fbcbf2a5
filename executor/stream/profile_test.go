package stream

import (
	"context"
	"testing"
	"unsafe"

	"github.com/tributary/tributary/sql/types"
)

// repeatExec returns the same message forever.
type repeatExec struct{ m Message }

func (r *repeatExec) Schema() []types.T                     { return []types.T{types.TInt64} }
func (r *repeatExec) Next(context.Context) (Message, error) { return r.m, nil }

func oneChunk(rows int) Message {
	c := types.NewChunk([]types.T{types.TInt64}, rows)
	for i := 0; i < rows; i++ {
		c.AppendRow([]types.Datum{types.DInt(int64(i))})
	}
	return ChunkMsg(c)
}

// TestProfile: the wrapper counts the rows of the chunks it passes and
// some busy time, and passes the messages through unchanged.
func TestProfile(t *testing.T) {
	m := oneChunk(7)
	st, actor := &OpStats{}, &ActorStats{}
	p := Profile(&repeatExec{m}, actor, st)
	for i := 0; i < 3; i++ {
		got, err := p.Next(context.Background())
		if err != nil || got.Chunk != m.Chunk {
			t.Fatalf("Next: %v %v", got, err)
		}
	}
	if st.RowsOut.Load() != 21 || st.BusyNanos.Load() <= 0 {
		t.Errorf("rows %d, busy %d ns; want 21 and some", st.RowsOut.Load(), st.BusyNanos.Load())
	}
	if len(p.Schema()) != 1 {
		t.Errorf("schema %v", p.Schema())
	}
	st.hit(true)
	st.hit(false)
	st.hit(true)
	(*OpStats)(nil).hit(true) // nil-safe
	if st.CacheHits.Load() != 2 || st.CacheMisses.Load() != 1 {
		t.Errorf("cache %d hits %d misses", st.CacheHits.Load(), st.CacheMisses.Load())
	}
}

// BenchmarkProfile is the per-message cost of an operator's counters (what
// --stream-stats=false saves): Next through the wrapper against Next alone.
func BenchmarkProfile(b *testing.B) {
	ctx := context.Background()
	in := &repeatExec{oneChunk(1024)}
	b.Run("bare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := in.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("profiled", func(b *testing.B) {
		p := Profile(in, &ActorStats{}, &OpStats{})
		for i := 0; i < b.N; i++ {
			if _, err := p.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestStatsPadded keeps the counters of two actors off each other's cache
// lines: heap objects of 128 bytes are 128-byte aligned.
func TestStatsPadded(t *testing.T) {
	if s := unsafe.Sizeof(OpStats{}); s != 128 {
		t.Errorf("OpStats is %d bytes, want 128", s)
	}
	if s := unsafe.Sizeof(ActorStats{}); s != 128 {
		t.Errorf("ActorStats is %d bytes, want 128", s)
	}
}
