package stream

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/state"
)

// memLog is a shared test source: named logs of splits whose message at
// position p of split s has the value s*1e6+p. Registered as connector
// "memlog" (option log names the log).
var memLogs = struct {
	sync.Mutex
	logs map[string][]int64 // log name -> each split's length
}{logs: map[string][]int64{}}

func init() {
	connector.RegisterSource(connector.SourceConnector{Name: "memlog", Shared: true,
		Parse: func(spec connector.SourceSpec) (connector.Source, error) {
			return &memLogSource{name: spec.Props["log"], cols: spec.Columns}, nil
		}})
}

func memLogAppend(name string, split, n int) {
	memLogs.Lock()
	defer memLogs.Unlock()
	memLogs.logs[name][split] += int64(n)
}

func memLogLen(name string, split int) int64 {
	memLogs.Lock()
	defer memLogs.Unlock()
	return memLogs.logs[name][split]
}

type memLogSource struct {
	name string
	cols []connector.SourceColumn
}

func (s *memLogSource) Check(context.Context) error { return nil }
func (s *memLogSource) DefaultRate() int64          { return -1 }
func (s *memLogSource) TotalRows() int64            { return -1 }
func (s *memLogSource) ChunkRows() int              { return 64 }
func (s *memLogSource) Upsert() bool                { return false }

func (s *memLogSource) Enumerator(context.Context) (connector.SplitEnumerator, error) {
	return memLogEnum{s}, nil
}

type memLogEnum struct{ s *memLogSource }

func (e memLogEnum) Splits(context.Context) ([]string, error) {
	memLogs.Lock()
	defer memLogs.Unlock()
	var out []string
	for i := range memLogs.logs[e.s.name] {
		out = append(out, strconv.Itoa(i))
	}
	return out, nil
}

func (e memLogEnum) Bounds(_ context.Context, splits []string) (map[string]connector.SplitBounds, error) {
	out := map[string]connector.SplitBounds{}
	for _, sp := range splits {
		i, _ := strconv.Atoi(sp)
		out[sp] = connector.SplitBounds{Start: connector.EncodePosition(0), End: memLogLen(e.s.name, i)}
	}
	return out, nil
}

func (memLogEnum) Close() error { return nil }

func (s *memLogSource) Reader(_ context.Context, splits []connector.SplitOffset, _ connector.ReaderEnv) (connector.SplitReader, error) {
	r := &memLogReader{s: s, ready: make(chan struct{})}
	close(r.ready)
	for _, sp := range splits {
		i, _ := strconv.Atoi(sp.Split)
		pos, err := connector.DecodePosition(sp.Offset)
		if err != nil {
			return nil, err
		}
		r.splits, r.pos = append(r.splits, i), append(r.pos, pos)
	}
	return r, nil
}

type memLogReader struct {
	s      *memLogSource
	splits []int
	pos    []int64
	next   int
	ready  chan struct{}
}

func (r *memLogReader) Read(dst *types.Chunk, limit int) (connector.ReadResult, error) {
	for k := 0; k < len(r.splits); k++ {
		i := (r.next + k) % len(r.splits)
		n := min(int64(limit), memLogLen(r.s.name, r.splits[i])-r.pos[i])
		if n <= 0 {
			continue
		}
		appendMemLogRows(dst, r.s.cols, r.splits[i], r.pos[i], int(n))
		r.pos[i] += n
		r.next = i + 1
		return connector.ReadResult{Split: strconv.Itoa(r.splits[i]), Rows: int(n), Offset: connector.EncodePosition(r.pos[i]), Next: r.pos[i]}, nil
	}
	return connector.ReadResult{}, nil
}

// Ready is always ready: the test's log grows while the backfill polls.
func (r *memLogReader) Ready() <-chan struct{} { return r.ready }
func (r *memLogReader) Close() error           { return nil }

func appendMemLogRows(dst *types.Chunk, cols []connector.SourceColumn, split int, from int64, n int) {
	for p := from; p < from+int64(n); p++ {
		row := make([]types.Datum, len(cols))
		for j, c := range cols {
			switch c.Meta {
			case "":
				row[j] = types.DInt(int64(split)*1e6 + p)
			case connector.MetaRowID:
				row[j] = types.DInt(int64(split)<<40 | p)
			case connector.MetaSplit:
				row[j] = types.DString(strconv.Itoa(split))
			case connector.MetaPosition:
				row[j] = types.DInt(p)
			}
		}
		dst.AppendRow(row)
	}
}

// TestSourceBackfillExactlyOnce runs a shared source's backfill against a
// simulated shared reader over a growing log of four splits (one empty, one
// whose reader is ahead, one behind), crashing it at random epochs (the open
// epoch's output and the reader's unsaved progress are lost, as in a real
// crash): over all runs every message comes out exactly once, and the
// backfill ends with every split finished although the log goes idle.
func TestSourceBackfillExactlyOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	const log = "exactly-once"
	memLogs.Lock()
	memLogs.logs[log] = []int64{300, 40, 0, 500}
	memLogs.Unlock()
	rel := &catalog.Relation{ID: 700, Schema: "public", Name: "s", Kind: catalog.KindSource, PK: []int{1},
		Columns: []catalog.Column{{Name: "v", Type: types.TInt64},
			{Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true, Meta: connector.MetaRowID},
			{Name: "_rw_split", Type: types.TVarchar, Hidden: true, Meta: connector.MetaSplit},
			{Name: "_rw_position", Type: types.TInt64, Hidden: true, Meta: connector.MetaPosition}},
		StateTables: []uint32{701},
		Connector:   &catalog.Connector{Props: map[string]string{"connector": "memlog", "log": log}, Shared: true, RateLimit: -1}}
	specCols := SourceSpec(rel).Columns
	kv := memkv.New()
	sharedState := plan.ConnectorSourceState(rel.StateTables[0])
	shared, err := state.New(kv, stateSchema(sharedState))
	if err != nil {
		t.Fatal(err)
	}
	// The shared reader's committed positions, and where it is in this run.
	committedUp := []int64{120, 40, 0, 0}
	node := &plan.StreamSource{Relation: rel, Backfill: true}
	layouts := node.StateLayouts()
	layouts[0].ID = 702
	epoch := uint64(1)
	emitted := map[[2]int64]int{}
	var done bool
	for run := 0; !done; run++ {
		if run > 40 {
			t.Fatal("the backfill did not finish in 40 runs")
		}
		up := append([]int64(nil), committedUp...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		node.SetState(layouts)
		upstream := &chanSource{ts: rel.ColumnTypes(), ch: make(chan Message, 16)}
		actx := &ActorContext{ID: 1, Store: kv}
		var last BackfillReport
		exec, closer, err := NewSourceBackfill(actx, node, upstream, func(r BackfillReport) { last = r }, -1, nil)
		if err != nil {
			t.Fatal(err)
		}
		crashAt := 2 + rng.IntN(6)
		if run >= 8 {
			crashAt = 1000 // enough crashes: let it finish
		}
		var pending [][2]int64
		barriers := 0
		producing := run < 6
		sendBarrier := func() {
			upstream.ch <- BarrierMsg(&Barrier{Epoch: Epoch{Prev: epoch, Curr: epoch + 1}, Checkpoint: true})
		}
		// Upstream rows between barriers: the log grows while producing,
		// and the shared reader delivers some of what is in it.
		deliver := func() {
			for s := range up {
				if producing && rng.IntN(2) == 0 {
					memLogAppend(log, s, rng.IntN(30))
				}
				if s == 2 && run < 2 {
					continue // split 2 stays idle at first
				}
				end := memLogLen(log, s)
				n := min(end-up[s], int64(rng.IntN(80)))
				if n <= 0 {
					continue
				}
				c := types.NewChunk(rel.ColumnTypes(), int(n))
				appendMemLogRows(c, specCols, s, up[s], int(n))
				up[s] += n
				upstream.ch <- ChunkMsg(c)
			}
		}
		deliver()
		sendBarrier()
		for barriers < crashAt {
			m, err := exec.Next(ctx)
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			switch {
			case m.Chunk != nil:
				for i := 0; i < m.Chunk.Len(); i++ {
					if m.Chunk.Visible(i) {
						row := m.Chunk.Row(i, nil)
						s, _ := strconv.Atoi(row[2].S)
						if row[0].I != int64(s)*1e6+row[3].I {
							t.Fatalf("row %v: value does not match its split and position", row)
						}
						pending = append(pending, [2]int64{int64(s), row[3].I})
					}
				}
			case m.Barrier != nil:
				barriers++
				// Commit the sealed epoch: the backfill's progress and the
				// shared reader's offsets as of this barrier.
				actx.Flush(m.Barrier.Epoch.Curr)
				b := actx.TakeWrites()
				if b == nil {
					b = new(storage.Batch)
				}
				for s, p := range up {
					if err := shared.Insert([]types.Datum{types.DString(strconv.Itoa(s)), bytesOrNull(connector.EncodePosition(p)), types.DInt(p)}); err != nil {
						t.Fatal(err)
					}
				}
				shared.Flush(m.Barrier.Epoch.Curr, b)
				if err := kv.Commit(ctx, m.Barrier.Epoch.Curr, b); err != nil {
					t.Fatal(err)
				}
				epoch = m.Barrier.Epoch.Curr
				copy(committedUp, up)
				for _, k := range pending {
					emitted[k]++
				}
				pending = nil
				caught := true
				for s := range up {
					caught = caught && up[s] == memLogLen(log, s)
				}
				if last.Done && !producing && caught {
					done = true
				}
				if done {
					crashAt = barriers
					break
				}
				if barriers < crashAt {
					deliver()
					sendBarrier()
				}
			}
		}
		cancel()
		closer()
	}
	for s := 0; s < 4; s++ {
		n := memLogLen(log, s)
		for p := int64(0); p < n; p++ {
			if got := emitted[[2]int64{int64(s), p}]; got != 1 {
				t.Fatalf("split %d position %d emitted %d times (log length %d)", s, p, got, n)
			}
		}
	}
	if len(emitted) != int(memLogLen(log, 0)+memLogLen(log, 1)+memLogLen(log, 2)+memLogLen(log, 3)) {
		t.Fatalf("%d messages emitted beyond the logs", len(emitted))
	}
}
