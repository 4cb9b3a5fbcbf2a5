package stream

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// scripted returns its messages in order, then blocks until ctx ends; each
// Next writes the sealed field of the state it shares with the test, as an
// executor writes its state table.
type scripted struct {
	msgs  []Message
	state *sharedState
}

type sharedState struct{ writes int }

func (s *scripted) Schema() []types.T { return nil }

func (s *scripted) Next(ctx context.Context) (Message, error) {
	if len(s.msgs) == 0 {
		<-ctx.Done()
		return Message{}, ctx.Err()
	}
	s.state.writes++ // an input's executor writing its state
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// TestAlignerHoldsInputsUntilNextCall: after returning a barrier, the
// aligner's inputs do not run until the next call, so the caller may seal
// the inputs' state (the actor flushing every table) in between. Under
// -race this fails if they do.
func TestAlignerHoldsInputsUntilNextCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chunk := types.NewChunk([]types.T{types.TInt64}, 1)
	chunk.AppendRow([]types.Datum{types.DInt(1)})
	b1 := &Barrier{Epoch: Epoch{Curr: 2, Prev: 1}}
	b2 := &Barrier{Epoch: Epoch{Curr: 3, Prev: 2}}
	var left, right sharedState
	a := NewAligner(
		&scripted{state: &left, msgs: []Message{ChunkMsg(chunk), BarrierMsg(b1), ChunkMsg(chunk), ChunkMsg(chunk), BarrierMsg(b2)}},
		&scripted{state: &right, msgs: []Message{BarrierMsg(b1), ChunkMsg(chunk), BarrierMsg(b2)}})
	defer a.Close()
	var chunks int
	for barriers := 0; barriers < 2; {
		_, m, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Barrier == nil {
			chunks++
			continue
		}
		barriers++
		// Seal: read and reset what the inputs wrote, as Flush does.
		left.writes, right.writes = 0, 0
		time.Sleep(time.Millisecond) // give a wrongly running input the chance to race
		if left.writes != 0 || right.writes != 0 {
			t.Fatalf("inputs ran after barrier %d before the next call: %d, %d", barriers, left.writes, right.writes)
		}
	}
	if chunks != 4 {
		t.Fatalf("%d chunks, want 4", chunks)
	}
}
