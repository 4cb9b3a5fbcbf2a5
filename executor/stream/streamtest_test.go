package stream

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stChunk parses a chunk fixture or fails the test.
func stChunk(t testing.TB, text string) *types.Chunk {
	t.Helper()
	c, err := ParseChunk(text)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stBarrier is a barrier sealing prev and opening curr.
func stBarrier(prev, curr uint64) Message {
	return BarrierMsg(&Barrier{Epoch: Epoch{Prev: prev, Curr: curr}, Checkpoint: true})
}

// stStop is a barrier that also stops actor id.
func stStop(prev, curr uint64, id ActorID) Message {
	return BarrierMsg(&Barrier{Epoch: Epoch{Prev: prev, Curr: curr}, Checkpoint: true,
		Mutation: &StopActors{Actors: map[ActorID]bool{id: true}}})
}

// stCtx is a bounded test context.
func stCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// stDrive runs e like an actor until io.EOF: chunks are applied to set,
// and at each barrier the actor's writes are committed at the sealed epoch
// (when above the store's) and set's content is recorded (set may be nil).
func stDrive(t testing.TB, e Executor, actx *ActorContext, set *RowSet) []string {
	t.Helper()
	ctx := stCtx(t)
	var snaps []string
	for {
		m, err := e.Next(ctx)
		if err == io.EOF {
			return snaps
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Chunk != nil && set != nil {
			if err := set.Apply(m.Chunk); err != nil {
				t.Fatalf("%v\nchunk:\n%s", err, FormatChunk(m.Chunk))
			}
		}
		if b := m.Barrier; b != nil {
			actx.Flush(b.Epoch.Prev)
			w := actx.TakeWrites()
			if b.Epoch.Prev > actx.Store.CommittedEpoch() {
				if err := actx.Store.Commit(ctx, b.Epoch.Prev, w); err != nil {
					t.Fatal(err)
				}
			}
			if set != nil {
				snaps = append(snaps, set.String())
			}
		}
	}
}

// stWant compares snapshots with the expected ones (rows as lines; "" for empty).
func stWant(t testing.TB, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d barriers, want %d:\n%s", len(got), len(want), strings.Join(got, "\n--\n"))
	}
	for i := range want {
		w := strings.TrimSpace(want[i])
		lines := strings.Split(w, "\n")
		for j := range lines {
			lines[j] = strings.TrimSpace(lines[j])
		}
		if w = strings.Join(lines, "\n"); got[i] != w {
			t.Errorf("after barrier %d:\ngot:\n%s\nwant:\n%s", i, got[i], w)
		}
	}
}

func stActx(store *memkv.Store) *ActorContext { return &ActorContext{ID: 1, Store: store} }

func TestParseChunk(t *testing.T) {
	c := stChunk(t, `
		 I  T  TS
		 +  1  a  2024-01-01T10:00:00
		 -  .  b  .
		U-  3  c  2024-01-02T00:00:00
		U+  3  d  2024-01-02T00:00:01 D`)
	want := "+ 1 a 2024-01-01 10:00:00\n- . b .\nU- 3 c 2024-01-02 00:00:00\n"
	if got := FormatChunk(c); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if c.Len() != 4 || c.NumVisible() != 3 {
		t.Fatalf("len %d visible %d", c.Len(), c.NumVisible())
	}
	for _, bad := range []string{" X\n + 1", " I\n * 1", " I\n + 1 2", " I\n + x"} {
		if _, err := ParseChunk(bad); err == nil {
			t.Errorf("ParseChunk(%q) succeeded", bad)
		}
	}
}

func TestRowSet(t *testing.T) {
	s := NewRowSet(nil)
	if err := s.Apply(stChunk(t, " I I\n + 1 1\n + 2 2\n + 2 2\nU- 1 1\nU+ 1 5\n - 2 2")); err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "1 5\n2 2" {
		t.Fatalf("got %q", got)
	}
	k := NewRowSet([]int{0})
	if err := k.Apply(stChunk(t, " I I\n + 1 1\n - 1 1\n + 1 2\nU- 1 2\nU+ 1 3")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{" I I\n - 9 9", " I I\nU- 1 5", " I I\nU+ 1 5", " I I\nU- 1 5\nU+ 2 5", " I I\n + 1 6"} {
		s := NewRowSet([]int{0})
		_ = s.Apply(stChunk(t, " I I\n + 1 5"))
		if err := s.Apply(stChunk(t, bad)); err == nil {
			t.Errorf("Apply(%q) succeeded", bad)
		}
	}
}
