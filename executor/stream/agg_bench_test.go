package stream

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/badger"
)

// agGenSource emits insert chunks of (id, g, x) with id = 0, 1, 2, ...,
// g = id % groups and x = id, a barrier after every perEpoch rows, and a
// stopping barrier after total rows.
type agGenSource struct {
	total, perEpoch, groups int
	next, inEpoch           int
	epoch                   uint64
	stop                    ActorID
	done                    bool
}

var agGenTypes = []types.T{types.TInt64, types.TInt64, types.TInt64}

func (s *agGenSource) Schema() []types.T { return agGenTypes }

func (s *agGenSource) Next(ctx context.Context) (Message, error) {
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
	c := types.NewChunk(agGenTypes, n)
	for range n {
		id := int64(s.next)
		c.Cols[0].I64 = append(c.Cols[0].I64, id)
		c.Cols[1].I64 = append(c.Cols[1].I64, id%int64(s.groups))
		c.Cols[2].I64 = append(c.Cols[2].I64, id)
		for j := range c.Cols {
			c.Cols[j].Nulls = append(c.Cols[j].Nulls, false)
		}
		s.next++
	}
	c.SetLen(n)
	s.inEpoch += n
	return ChunkMsg(c), nil
}

// agBenchRun pushes total rows over groups groups through count(*) and
// sum(x) grouped by g, over Badger (flush and commit at every barrier, every
// perEpoch rows). It returns the output rows and the peak Go heap in use
// sampled after each commit (0 unless sampleHeap).
func agBenchRun(b *testing.B, opts badger.Options, total, perEpoch, groups, cache int, sampleHeap bool) (outRows int, peakHeap uint64) {
	kv, err := badger.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer kv.Close()
	in := agGenTypes
	n := agNode(in, []int{0}, []int{1}, agCall(b, in, "count", false, -1), agCall(b, in, "sum", false, -1, 2))
	actx := &ActorContext{ID: 1, Store: kv, CacheRows: cache}
	src := &agGenSource{total: total, perEpoch: perEpoch, groups: groups, epoch: kv.CommittedEpoch() + 1, stop: actx.ID}
	e, err := NewAgg(actx, n, src)
	if err != nil {
		b.Fatal(err)
	}
	agg := e.(*aggExec)
	ctx := context.Background()
	var ms runtime.MemStats
	for {
		m, err := e.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if m.Chunk != nil {
			outRows += m.Chunk.Len()
		}
		if m.Barrier != nil {
			actx.Flush(m.Barrier.Epoch.Prev)
			if err := kv.Commit(ctx, m.Barrier.Epoch.Prev, actx.TakeWrites()); err != nil {
				b.Fatal(err)
			}
			if len(agg.run.groups) > agg.run.budget.maxRows {
				b.Fatalf("%d groups cached, bound %d", len(agg.run.groups), agg.run.budget.maxRows)
			}
			if sampleHeap {
				runtime.GC() // live heap, not garbage awaiting collection
				runtime.ReadMemStats(&ms)
				peakHeap = max(peakHeap, ms.HeapInuse)
			}
		}
	}
	return outRows, peakHeap
}

// BenchmarkStreamHashAgg: count(*) and sum(x) over 10k groups, b.N inserted
// rows, a barrier (flush and Badger commit) every 64k rows; reports input rows/s.
func BenchmarkStreamHashAgg(b *testing.B) {
	total := max(b.N, 1)
	b.ReportAllocs()
	b.ResetTimer()
	agBenchRun(b, badger.Options{Dir: b.TempDir()}, total, 1<<16, 10_000, 0, false)
	b.StopTimer()
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkStreamHashAggMillionGroups: one million distinct groups (one row
// each) through count(*) and sum(x) over Badger (16 MiB memtables and block
// cache, so Badger's own heap stays small), a barrier every 64k rows, with a
// 4096-group cache and, for contrast, a cache holding every group. It
// reports the peak live Go heap after each commit: with the small cache the
// groups live in Badger, not in the heap. Run with -benchtime=1x.
func BenchmarkStreamHashAggMillionGroups(b *testing.B) {
	const groups = 1_000_000
	for _, cache := range []int{4096, groups} {
		b.Run(fmt.Sprintf("cache=%d", cache), func(b *testing.B) {
			for range b.N {
				opts := badger.Options{Dir: b.TempDir(), MemTableSize: 16 << 20, BlockCacheSize: 16 << 20}
				out, peak := agBenchRun(b, opts, groups, 1<<16, groups, cache, true)
				if out != groups {
					b.Fatalf("%d output rows, want %d", out, groups)
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			}
			b.ReportMetric(float64(groups*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
