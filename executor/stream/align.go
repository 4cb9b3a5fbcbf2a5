package stream

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// Side says which input of a two-input executor a message came from.
type Side uint8

// Sides.
const (
	Left Side = iota
	Right
)

type sideMsg struct {
	side Side
	msg  Message
	err  error
}

// Aligner merges the two inputs of a join-like executor into one sequence of
// (side, message) and aligns their barriers: after a barrier on one side it
// stops taking that side until the same barrier arrives on the other, then
// returns the barrier once (with side Left). Each input is pulled by its own
// goroutine; Close stops them. The zero value is not usable: use NewAligner.
type Aligner struct {
	left, right Executor
	ch          chan sideMsg
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	started     bool
	barrier     [2]*Barrier
	resume      [2]chan struct{}
	// resumeDue: the last Next returned a barrier; the inputs go on at the
	// next call. The actor seals the epoch's state (every table of its
	// executors, the inputs' included) after the barrier left it and before
	// it asks for the next message, so the inputs must not run meanwhile.
	resumeDue bool
}

// NewAligner returns an aligner over two inputs.
func NewAligner(left, right Executor) *Aligner {
	return &Aligner{left: left, right: right}
}

func (a *Aligner) start(ctx context.Context) {
	a.started = true
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.ch = make(chan sideMsg)
	pump := func(side Side, in Executor) {
		defer a.wg.Done()
		for {
			m, err := safeNext(a.ctx, in)
			select {
			case a.ch <- sideMsg{side: side, msg: m, err: err}:
			case <-a.ctx.Done():
				return
			}
			if err != nil {
				return
			}
			if m.Barrier != nil {
				// Wait until the aligner takes this side again (one barrier in flight per side).
				select {
				case <-a.resume[side]:
				case <-a.ctx.Done():
					return
				}
			}
		}
	}
	a.resume = [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}
	a.wg.Add(2)
	go pump(Left, a.left)
	go pump(Right, a.right)
}

// Next returns the next message and its side.
func (a *Aligner) Next(ctx context.Context) (Side, Message, error) {
	if !a.started {
		a.start(ctx)
	}
	if a.resumeDue {
		a.resumeDue = false
		a.resume[0] <- struct{}{}
		a.resume[1] <- struct{}{}
	}
	for {
		var sm sideMsg
		select {
		case sm = <-a.ch:
		case <-ctx.Done():
			return 0, Message{}, ctx.Err()
		}
		if sm.err != nil {
			if sm.err == io.EOF {
				return 0, Message{}, fmt.Errorf("aligner: input %d ended without a stop barrier", sm.side)
			}
			return 0, Message{}, sm.err
		}
		if sm.msg.Barrier == nil {
			return sm.side, sm.msg, nil
		}
		a.barrier[sm.side] = sm.msg.Barrier
		other := 1 - sm.side
		if a.barrier[other] == nil {
			continue
		}
		if a.barrier[0].Epoch != a.barrier[1].Epoch {
			return 0, Message{}, fmt.Errorf("aligner: barriers out of step: %v and %v", a.barrier[0], a.barrier[1])
		}
		b := a.barrier[0]
		a.barrier = [2]*Barrier{}
		a.resumeDue = true
		return Left, BarrierMsg(b), nil
	}
}

// Close stops the pumping goroutines and waits for them.
func (a *Aligner) Close() {
	if a.started {
		a.cancel()
		a.wg.Wait()
	}
}
