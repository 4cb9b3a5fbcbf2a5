package stream

import (
	"context"
	"io"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/badger"
	"github.com/tributary/tributary/storage/memory"
)

// hjGenSource emits insert chunks of (id, k, v) with k = id = 0, 1, 2, ...,
// a barrier after every perEpoch rows, and a stopping barrier after total rows.
type hjGenSource struct {
	ts       []types.T
	total    int
	perEpoch int
	next     int
	inEpoch  int
	epoch    uint64
	stop     ActorID
	done     bool
}

func (s *hjGenSource) Schema() []types.T { return s.ts }

func (s *hjGenSource) Next(ctx context.Context) (Message, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	if s.done {
		return Message{}, io.EOF
	}
	if s.inEpoch == s.perEpoch || s.next == s.total {
		b := &Barrier{Epoch: Epoch{Prev: s.epoch, Curr: s.epoch + 1}, Checkpoint: true}
		s.epoch++
		s.inEpoch = 0
		if s.next == s.total {
			b.Mutation = &StopActors{Actors: map[ActorID]bool{s.stop: true}}
			s.done = true
		}
		return BarrierMsg(b), nil
	}
	n := min(types.DefaultChunkSize, s.perEpoch-s.inEpoch, s.total-s.next)
	c := types.NewChunk(s.ts, n)
	for range n {
		k := int64(s.next)
		c.Cols[0].I64 = append(c.Cols[0].I64, k)
		c.Cols[1].I64 = append(c.Cols[1].I64, k)
		c.Cols[2].I64 = append(c.Cols[2].I64, k*7)
		for j := range c.Cols {
			c.Cols[j].Nulls = append(c.Cols[j].Nulls, false)
		}
		s.next++
	}
	c.SetLen(n)
	s.inEpoch += n
	return ChunkMsg(c), nil
}

// BenchmarkStreamHashJoin inserts b.N rows, half into each side, with 1:1 keys,
// through an inner hash join over Badger: a barrier (flush and commit) every
// 64k input rows. It reports input rows/s, commits included. "pool" gives the
// caches a memory pool as large as a default server's on a 24 GiB machine
// (it never binds: the cost of counting bytes), "rows" none.
func BenchmarkStreamHashJoin(b *testing.B) {
	b.Run("rows", func(b *testing.B) { benchStreamHashJoin(b, nil) })
	b.Run("pool", func(b *testing.B) { benchStreamHashJoin(b, memory.NewPool(4<<30)) })
}

func benchStreamHashJoin(b *testing.B, pool *memory.Pool) {
	const perEpoch = 1 << 15 // per side: 64k input rows per barrier
	kv, err := badger.Open(badger.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer kv.Close()
	ts := []types.T{types.TInt64, types.TInt64, types.TInt64}
	fs := []plan.Field{{Name: "id", Type: ts[0]}, {Name: "k", Type: ts[1]}, {Name: "v", Type: ts[2]}}
	n := &plan.StreamHashJoin{Kind: plan.InnerJoin,
		Left: &plan.StreamValues{Out: fs, Key: []int{0}}, Right: &plan.StreamValues{Out: fs, Key: []int{0}},
		EqLeft: []int{1}, EqRight: []int{1}}
	layouts := n.StateLayouts()
	layouts[0].ID, layouts[1].ID = 1, 2
	n.SetState(layouts)
	perSide := max(b.N/2, 1)
	actx := &ActorContext{ID: 1, Store: kv, Memory: pool}
	defer actx.Release()
	epoch := kv.CommittedEpoch() + 1
	ls := &hjGenSource{ts: ts, total: perSide, perEpoch: perEpoch, epoch: epoch, stop: actx.ID}
	rs := &hjGenSource{ts: ts, total: perSide, perEpoch: perEpoch, epoch: epoch, stop: actx.ID}
	j, al, err := NewHashJoin(actx, n, ls, rs)
	if err != nil {
		b.Fatal(err)
	}
	defer al.Close()
	ctx := context.Background()
	out := 0
	b.ReportAllocs()
	b.ResetTimer()
	for {
		m, err := j.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if m.Chunk != nil {
			out += m.Chunk.Len()
		}
		if m.Barrier != nil {
			actx.Flush(m.Barrier.Epoch.Prev)
			if err := kv.Commit(ctx, m.Barrier.Epoch.Prev, actx.TakeWrites()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if out != perSide {
		b.Fatalf("joined %d rows, want %d", out, perSide)
	}
	b.ReportMetric(float64(2*perSide)/b.Elapsed().Seconds(), "rows/s")
}
