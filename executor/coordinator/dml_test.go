package coordinator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/badger"
	"github.com/tributary/tributary/storage/memkv"
)

// relRows reads rel's rows (id -> v) at the committed epoch.
func relRows(t *testing.T, c *Coordinator, rel *catalog.Relation) map[int64]int64 {
	t.Helper()
	epoch := c.CommittedEpoch()
	release, err := c.kv.Pin(epoch) // held while the scan reads at epoch
	for errors.Is(err, storage.ErrEpochDiscarded) {
		epoch = c.CommittedEpoch()
		release, err = c.kv.Pin(epoch)
	}
	if err != nil {
		t.Error(err)
		return nil
	}
	defer release()
	env := &batch.Env{Store: c.kv, Epoch: epoch, Tables: batch.NewTableSet(c.kv)}
	x, err := batch.Build(env, &plan.Query{Root: &plan.Scan{Table: rel, Out: fields(rel)}})
	if err != nil {
		t.Error(err)
		return nil
	}
	defer x.Close()
	out := map[int64]int64{}
	for {
		ch, err := x.Next(context.Background())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Error(err)
			}
			return out
		}
		for i := 0; i < ch.Len(); i++ {
			if ch.Visible(i) {
				out[ch.Cols[0].I64[i]] = ch.Cols[1].I64[i]
			}
		}
	}
}

// stores runs f on a memkv store and on a Badger one.
func stores(t *testing.T, f func(t *testing.T, kv storage.KV)) {
	t.Run("memkv", func(t *testing.T) {
		kv := memkv.New()
		defer kv.Close()
		f(t, kv)
	})
	t.Run("badger", func(t *testing.T) {
		kv, err := badger.Open(badger.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer kv.Close()
		f(t, kv)
	})
}

// TestConcurrentStatements runs 300-row INSERTs from several sessions at
// once, each round's statements all inserting one contested key besides
// their own: exactly one per round succeeds and the others fail with a
// unique violation; a reader meanwhile sees every statement whole or not at
// all; at the end the table and a view over it hold exactly the successful
// statements' rows.
func TestConcurrentStatements(t *testing.T) {
	stores(t, func(t *testing.T, kv storage.KV) {
		seed := int64(20261204) // fixed (the goroutines' interleaving is not)
		t.Logf("seed %d", seed)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c := New(kv, Config{BarrierInterval: 20 * time.Millisecond, Parallelism: 2})
		c.AddTable(tbl.ID, tbl.ColumnTypes())
		c.Start()
		defer c.Stop()
		if err := c.AddJob(ctx, mv.ID, copyJob(), JobOptions{Parallelism: 2, BackfillRate: -1}); err != nil {
			t.Fatal(err)
		}
		const sessions, rounds, perStmt = 4, 20, 300
		// Statement s of session w in round r inserts ids s*1000+i (v = s)
		// and the round's contested id -(r+1) (v = s).
		winners := make([]atomic.Int64, rounds)
		var readerErr atomic.Value
		done := make(chan struct{})
		var reader sync.WaitGroup
		reader.Add(1)
		go func() { // a reader checks that statements are whole
			defer reader.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := checkWhole(relRows(t, c, tbl), perStmt); err != nil {
					readerErr.Store(err)
					return
				}
			}
		}()
		var wg sync.WaitGroup
		for w := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
				for r := range rounds {
					s := int64(1 + r*sessions + w)
					rows := make([][2]int64, 0, perStmt+1)
					for i := range perStmt {
						rows = append(rows, [2]int64{s*1000 + int64(i), s})
					}
					// The contested key anywhere in the statement.
					at := rng.IntN(len(rows) + 1)
					rows = append(rows[:at], append([][2]int64{{-int64(r + 1), s}}, rows[at:]...)...)
					err := insert(ctx, c, rows...)
					switch {
					case err == nil:
						if !winners[r].CompareAndSwap(0, s) {
							t.Errorf("round %d: statements %d and %d both inserted the contested key", r, winners[r].Load(), s)
						}
					case errors.Is(err, types.ErrUniqueViolation):
					default:
						t.Errorf("round %d, statement %d: %v", r, s, err)
					}
				}
			}()
		}
		wg.Wait()
		close(done)
		reader.Wait()
		if err, _ := readerErr.Load().(error); err != nil {
			t.Fatal(err)
		}
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[int64]int64{}
		for r := range rounds {
			s := winners[r].Load()
			if s == 0 {
				t.Fatalf("round %d: no statement succeeded", r)
			}
			want[-int64(r+1)] = s
			for i := range perStmt {
				want[s*1000+int64(i)] = s
			}
		}
		for _, rel := range []*catalog.Relation{tbl, mv} {
			got := relRows(t, c, rel)
			if err := sameRows(got, want); err != nil {
				t.Fatalf("%s: %v", rel.Name, err)
			}
		}
	})
}

// checkWhole checks that rows hold each statement (v = s) whole: perStmt
// rows s*1000+i and the contested row of its round, or none of them.
func checkWhole(rows map[int64]int64, perStmt int) error {
	count := map[int64]int{}
	for id, v := range rows {
		if id >= 0 && id/1000 != v {
			return fmt.Errorf("row %d has v %d", id, v)
		}
		count[v]++
	}
	for s, n := range count {
		if n != perStmt+1 {
			return fmt.Errorf("statement %d: %d of its %d rows visible", s, n, perStmt+1)
		}
	}
	return nil
}

func sameRows(got, want map[int64]int64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d rows, want %d", len(got), len(want))
	}
	for id, v := range want {
		if g, ok := got[id]; !ok || g != v {
			return fmt.Errorf("row %d: %d (present %v), want %d", id, g, ok, v)
		}
	}
	return nil
}

// TestStatementPanic: a statement whose work panics after it wrote rows (a
// bug in an executor) fails with an error; its rows go nowhere, neither into
// the table nor to its views, and the statements after it run: the panic
// does not leave the coordinator locked (it did once, and every statement
// and barrier after it waited forever).
func TestStatementPanic(t *testing.T) {
	stores(t, func(t *testing.T, kv storage.KV) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := New(kv, Config{BarrierInterval: 20 * time.Millisecond})
		c.AddTable(tbl.ID, tbl.ColumnTypes())
		c.Start()
		defer c.Stop()
		if err := c.AddJob(ctx, mv.ID, copyJob(), JobOptions{BackfillRate: -1}); err != nil {
			t.Fatal(err)
		}
		if err := insert(ctx, c, [2]int64{1, 10}); err != nil {
			t.Fatal(err)
		}
		ins := insertStmt([2]int64{2, 20})
		statement := func(tables *batch.TableSet, snapshot uint64) error {
			if err := runInsert(ctx, c, ins, tables, snapshot); err != nil {
				return err
			}
			var rows []int
			_ = rows[len(ins.Input.(*plan.Values).Rows)] // the bug: an index out of range
			return nil
		}
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("DML panicked: %v", r)
				}
			}()
			return c.DML(ctx, statement)
		}()
		if !c.mu.TryLock() {
			c.mu.Unlock() // for Stop
			t.Fatalf("the statement's panic left the coordinator locked (it returned %v)", err)
		}
		c.mu.Unlock()
		if err == nil || strings.Contains(err.Error(), "DML panicked") || !strings.Contains(err.Error(), "index out of range") {
			t.Fatalf("the panicking statement returned %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- insert(ctx, c, [2]int64{3, 30}) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the statement after a panic did not return in 10 s")
		}
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[int64]int64{1: 10, 3: 30}
		for _, rel := range []*catalog.Relation{tbl, mv} {
			if err := sameRows(relRows(t, c, rel), want); err != nil {
				t.Fatalf("%s: %v", rel.Name, err)
			}
		}
	})
}

// panicKV panics once, in its next Commit or MaxVersion, when armed with that name.
type panicKV struct {
	storage.KV
	armed atomic.Pointer[string]
}

func (p *panicKV) trip(name string) {
	if a := p.armed.Load(); a != nil && *a == name && p.armed.CompareAndSwap(a, nil) {
		panic("a " + name + " bug")
	}
}

func (p *panicKV) Commit(ctx context.Context, epoch uint64, b *storage.Batch) error {
	p.trip("commit")
	return p.KV.Commit(ctx, epoch, b)
}

func (p *panicKV) MaxVersion() uint64 {
	p.trip("maxversion")
	return p.KV.MaxVersion()
}

// TestRoundPanic: a panic while a statement's epoch is injected (under the
// coordinator's lock) or committed fails the coordinator, as an error of the
// round would: the statement gets the error, the lock is free, and the
// statements after it fail at once with ErrRecovering (the server then
// rebuilds from the committed epoch), instead of waiting forever on the lock
// or on an epoch that never commits.
func TestRoundPanic(t *testing.T) {
	for _, where := range []string{"maxversion", "commit"} {
		t.Run(where, func(t *testing.T) {
			stores(t, func(t *testing.T, store storage.KV) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				kv := &panicKV{KV: store}
				// No barrier of its own for a minute: the statement drives its epoch.
				c := New(kv, Config{BarrierInterval: time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				c.AddTable(tbl.ID, tbl.ColumnTypes())
				c.Start()
				defer c.Stop()
				if err := insert(ctx, c, [2]int64{1, 10}); err != nil {
					t.Fatal(err)
				}
				kv.armed.Store(&where)
				err := func() (err error) {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("the statement panicked: %v", r)
						}
					}()
					return insert(ctx, c, [2]int64{2, 20})
				}()
				if !c.mu.TryLock() {
					c.mu.Unlock() // for Stop
					t.Fatalf("the round's panic left the coordinator locked (the statement returned %v)", err)
				}
				c.mu.Unlock()
				if err == nil || !strings.Contains(err.Error(), "a "+where+" bug") || strings.Contains(err.Error(), "panicked:") {
					t.Fatalf("the statement whose round panicked returned %v", err)
				}
				if c.Failed() == nil {
					t.Fatal("the coordinator did not fail")
				}
				done := make(chan error, 1)
				go func() { done <- insert(ctx, c, [2]int64{3, 30}) }()
				select {
				case err := <-done:
					if !errors.Is(err, ErrRecovering) {
						t.Fatalf("the statement after the panic returned %v, want ErrRecovering", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the statement after the panic did not return in 10 s")
				}
			})
		})
	}
}

// TestSendEarly: a large INSERT's rows reach the streaming job through the early hand-off
// (batch.TableSet.SendEarly) and commit with the table's; a statement that fails after handing
// its changes over fails the coordinator (the jobs hold them), as a staged one does: it gets
// its error, the next statement ErrRecovering, and neither statement's rows are committed.
func TestSendEarly(t *testing.T) {
	stores(t, func(t *testing.T, kv storage.KV) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := New(kv, Config{BarrierInterval: time.Minute, Parallelism: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		c.AddTable(tbl.ID, tbl.ColumnTypes())
		if err := c.AddJob(ctx, mv.ID, copyJob(), JobOptions{Parallelism: 2, BackfillRate: -1}); err != nil {
			t.Fatal(err)
		}
		c.Start()
		defer c.Stop()
		rows := make([][2]int64, 700)
		for i := range rows {
			rows[i] = [2]int64{int64(i), int64(10 * i)}
		}
		if err := insert(ctx, c, rows...); err != nil {
			t.Fatal(err)
		}
		if got := mvRows(t, c); len(got) != 700 || got[699] != 6990 {
			t.Fatalf("the job has %d rows after a 700-row INSERT (row 699: %d)", len(got), got[699])
		}
		bug := errors.New("a bug after the hand-off")
		err := c.DML(ctx, func(tables *batch.TableSet, snapshot uint64) error {
			if err := runInsert(ctx, c, insertStmt([2]int64{1000, 1}), tables, snapshot); err != nil {
				return err
			}
			if err := tables.SendEarly(); err != nil {
				return err
			}
			return bug
		})
		if !errors.Is(err, bug) {
			t.Fatalf("the statement returned %v", err)
		}
		if c.Failed() == nil {
			t.Fatal("the coordinator did not fail after a statement that had sent its changes failed")
		}
		if err := insert(ctx, c, [2]int64{2000, 1}); !errors.Is(err, ErrRecovering) {
			t.Fatalf("the statement after returned %v, want ErrRecovering", err)
		}
		if got := relRows(t, c, tbl); len(got) != 700 {
			t.Fatalf("the table has %d rows committed, want 700", len(got))
		}
	})
}
