package stream

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// countedSource is chanSource counting its reads in a plain int: under
// -race, a read of it on the pump's goroutine after the hand-back (while
// the test reads the count) is a data race.
type countedSource struct {
	chanSource
	reads int
}

func (s *countedSource) Next(ctx context.Context) (Message, error) {
	s.reads++
	return s.chanSource.Next(ctx)
}

// TestPumpHandsUpstreamBack: once a backfill is over (take), the pump ends
// after the next barrier and take reads the upstream itself: every message
// comes in order, none twice or lost, and no read of the upstream happens on
// the pump's goroutine after it ended.
func TestPumpHandsUpstreamBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src := &countedSource{chanSource: chanSource{ts: []types.T{types.TInt64}, ch: make(chan Message, 16)}}
	chunk := func(v int64) Message {
		c := types.NewChunk(src.ts, 1)
		c.AppendRow([]types.Datum{types.DInt(v)})
		return ChunkMsg(c)
	}
	barrier := func(e uint64) Message { return BarrierMsg(&Barrier{Epoch: Epoch{Curr: e + 1, Prev: e}}) }
	var want []Message
	for e := uint64(1); e <= 3; e++ {
		want = append(want, chunk(int64(e)), barrier(e))
	}
	var p upstreamPump
	defer p.stop()
	p.start(ctx, src)
	for _, m := range want {
		src.ch <- m
	}
	check := func(i int, got, want Message) {
		t.Helper()
		switch {
		case want.Barrier != nil:
			if got.Barrier == nil || got.Barrier.Epoch != want.Barrier.Epoch {
				t.Fatalf("message %d: %+v, want barrier %+v", i, got, want.Barrier)
			}
		case got.Chunk == nil || got.Chunk.Cols[0].I64[0] != want.Chunk.Cols[0].I64[0]:
			t.Fatalf("message %d: %+v, want the chunk of %d", i, got, want.Chunk.Cols[0].I64[0])
		}
	}
	for i, w := range want {
		m, err := p.take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(i, m, w)
		if i >= 3 && !p.direct {
			// The pump may have read the first barrier before the first take asked
			// for the upstream back, not the second.
			t.Fatalf("after message %d (the second barrier) the pump still runs", i)
		}
	}
	reads := src.reads
	for i, w := range []Message{chunk(4), barrier(4)} {
		src.ch <- w
		m, err := p.take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(6+i, m, w)
	}
	if src.reads != reads+2 {
		t.Fatalf("%d reads of the upstream for 2 messages after the hand-back", src.reads-reads)
	}
}

// TestPumpStopsBeforeHandBack: a pump stopped while it runs (an actor
// stopped during its backfill) ends without a hand-back.
func TestPumpStopsBeforeHandBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src := &chanSource{ts: []types.T{types.TInt64}, ch: make(chan Message, 1)}
	var p upstreamPump
	p.start(ctx, src)
	src.ch <- BarrierMsg(&Barrier{Epoch: Epoch{Curr: 2, Prev: 1}})
	p.stop() // returns: the pump may be blocked on its channel or on the upstream
	if p.started() {
		t.Fatal("started after stop")
	}
}
