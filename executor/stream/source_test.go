package stream

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

// stWriter accepts up to perEpoch chunks in each epoch (then refuses, as
// when a barrier is on its way) and records the ids written per epoch.
type stWriter struct {
	mu       sync.Mutex
	perEpoch int
	byEpoch  map[uint64][]int64
	calls    map[uint64]int
	refused  chan struct{} // signalled on every refusal
}

func (w *stWriter) Write(_ context.Context, epoch uint64, c *types.Chunk, _ string) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls[epoch] >= w.perEpoch {
		select {
		case w.refused <- struct{}{}:
		default:
		}
		return false, nil
	}
	w.calls[epoch]++
	for i := 0; i < c.Len(); i++ {
		w.byEpoch[epoch] = append(w.byEpoch[epoch], c.Cols[0].I64[i])
	}
	return true, nil
}

func (w *stWriter) Truncate(context.Context, uint64, func([]types.Datum) bool) (bool, error) {
	return false, errors.New("stWriter: no truncate")
}

func stSourceNode() *plan.StreamConnectorSource {
	rel := &catalog.Relation{ID: 50, Name: "g", Kind: catalog.KindTable, PK: []int{0},
		Columns: []catalog.Column{{Name: "id", Type: types.TInt64}, {Name: "v", Type: types.TInt32}}}
	rel.Connector = &catalog.Connector{RateLimit: -1, Props: map[string]string{"connector": "datagen", "fields.id.kind": "sequence",
		"fields.id.end": "5000", "datagen.split.num": "3", "datagen.rows.per.second": "1000000000"}}
	return &plan.StreamConnectorSource{Table: rel, State: plan.ConnectorSourceState(51), RateLimit: -1}
}

// TestConnectorSourceResumes runs a source for a few epochs, commits them,
// "crashes" (dropping the open epoch's rows) and restarts it over the same
// store: the committed rows plus the restarted source's are exactly 1..5000.
func TestConnectorSourceResumes(t *testing.T) {
	ctx := stCtx(t)
	kv := memkv.New()
	committed := map[int64]int{}
	run := func(first uint64, barriers int, stop bool) uint64 {
		w := &stWriter{perEpoch: 2, byEpoch: map[uint64][]int64{}, calls: map[uint64]int{}, refused: make(chan struct{}, 1)}
		ch := make(chan *Barrier, 1)
		actx := stActx(kv)
		e, closer, err := NewConnectorSource(actx, stSourceNode(), ch, w, nil, nil, -1, SplitShare{})
		if err != nil {
			t.Fatal(err)
		}
		defer closer()
		type result struct {
			m   Message
			err error
		}
		msgs := make(chan result, 1)
		runCtx, cancel := context.WithCancel(ctx)
		exited := make(chan struct{})
		defer func() { cancel(); <-exited }()
		go func() {
			defer close(exited)
			for {
				m, err := e.Next(runCtx)
				select {
				case msgs <- result{m, err}:
				case <-runCtx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		}()
		epoch := first
		for i := 0; i < barriers; i++ {
			b := &Barrier{Epoch: Epoch{Prev: epoch, Curr: epoch + 1}, Checkpoint: true}
			if stop && i == barriers-1 {
				b.Mutation = &StopActors{Actors: map[ActorID]bool{actx.ID: true}}
			}
			if i > 0 {
				// Let the source fill the epoch (until refused, or exhausted).
				select {
				case <-w.refused:
				case <-time.After(100 * time.Millisecond):
				}
			}
			ch <- b
			res := <-msgs
			if res.err != nil || res.m.Barrier != b {
				t.Fatalf("barrier %d: %v %v", i, res.m, res.err)
			}
			// Commit the sealed epoch: the source's offsets and the rows it wrote in it.
			actx.Flush(epoch)
			if writes := actx.TakeWrites(); writes != nil {
				if err := kv.Commit(ctx, epoch, writes); err != nil {
					t.Fatal(err)
				}
			}
			w.mu.Lock()
			for _, id := range w.byEpoch[epoch] {
				committed[id]++
			}
			w.mu.Unlock()
			epoch++
		}
		return epoch
	}
	// Three epochs, then a crash: what the source wrote after the last barrier is lost.
	epoch := run(1, 3, false)
	if len(committed) == 0 || len(committed) >= 5000 {
		t.Fatalf("%d rows committed before the crash", len(committed))
	}
	run(epoch, 8, true)
	if len(committed) != 5000 {
		t.Fatalf("%d distinct rows, want 5000", len(committed))
	}
	for id := int64(1); id <= 5000; id++ {
		if committed[id] != 1 {
			t.Fatalf("id %d written %d times", id, committed[id])
		}
	}
}

// TestOpenSourceNexmark checks the registry's dispatch to the nexmark
// generator: its row count, splits, chunk bound and pacing, and a hidden row
// id; an unknown connector is refused.
func TestOpenSourceNexmark(t *testing.T) {
	rel := &catalog.Relation{ID: 60, Name: "bid", Kind: catalog.KindTable, PK: []int{1},
		Columns: []catalog.Column{{Name: "price", Type: types.TInt64}, {Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true, Meta: connector.MetaRowID}},
		Connector: &catalog.Connector{Props: map[string]string{"connector": "Nexmark", "nexmark.table.type": "Bid",
			"nexmark.event.num": "500", "nexmark.split.num": "2", "nexmark.max.chunk.size": "100"}}}
	_, src, err := OpenSource(rel)
	if err != nil {
		t.Fatal(err)
	}
	if src.TotalRows() != 460 || src.ChunkRows() != 100 || src.DefaultRate() != 9200 {
		t.Fatalf("rows %d chunk %d rate %d; want 460 100 9200", src.TotalRows(), src.ChunkRows(), src.DefaultRate())
	}
	r, err := src.Reader(context.Background(), []connector.SplitOffset{{Split: "1"}}, connector.ReaderEnv{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := types.NewChunk(rel.ColumnTypes(), 2)
	if res, err := r.Read(c, 2); err != nil || res.Rows != 2 || res.Split != "1" || res.Next != 2 {
		t.Fatalf("read %+v %v", res, err)
	}
	// Split 1 holds bid rows 1, 3, ...: events 5 and 7, row ids 6 and 8.
	if got := c.Cols[1].I64; got[0] != 6 || got[1] != 8 {
		t.Fatalf("row ids %v, want [6 8]", got)
	}
	rel.Connector = &catalog.Connector{Props: map[string]string{"connector": "nosuch"}}
	if _, _, err := OpenSource(rel); !errors.Is(err, types.ErrUnsupported) {
		t.Fatalf("nosuch: %v", err)
	}
}
