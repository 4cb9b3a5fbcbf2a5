package stream

import (
	"context"
	"sync"
	"sync/atomic"
)

type pumpMsg struct {
	msg  Message
	err  error
	last bool // the pump ended after this message (a barrier): take reads the upstream itself
}

// upstreamPump consumes a backfill's upstream on a goroutine of its own, so
// the upstream never waits for the backfill's reads: messages wait in ch,
// one at a time. A panic upstream becomes an error (safeNext).
//
// Once the backfill is over its executor only passes the upstream's messages
// through (take), and the goroutine is one hand-off more for every message of
// a live job: the first take asks the pump to hand the upstream back, the
// pump ends after the next barrier it delivers, and take then reads the
// upstream on the caller's goroutine. A backfill never reads ch again after
// its first take (it stays over for its executor's life: a rescale builds new
// actors).
type upstreamPump struct {
	ch       chan pumpMsg
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	upstream Executor
	handBack atomic.Bool // take asked for the upstream back
	direct   bool        // the pump ended at a barrier: take reads upstream itself
}

// started reports whether start ran (and stop did not).
func (p *upstreamPump) started() bool { return p.cancel != nil }

// start runs the pump until stop, ctx's end, an upstream error (the last
// message it delivers) or, once take asked for the upstream back, the next
// barrier.
func (p *upstreamPump) start(ctx context.Context, upstream Executor) {
	pctx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	p.upstream = upstream
	p.ch = make(chan pumpMsg, 1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			m, err := safeNext(pctx, upstream)
			// Checked after the upstream's Next returned: a barrier is the last
			// message when take asked before it came, so nothing of the
			// upstream's is read on this goroutine after the hand-back.
			last := err == nil && m.Barrier != nil && p.handBack.Load()
			select {
			case p.ch <- pumpMsg{msg: m, err: err, last: last}:
			case <-pctx.Done():
				return
			}
			if err != nil || last {
				return
			}
		}
	}()
}

// stop ends the pump and waits for its goroutine.
func (p *upstreamPump) stop() {
	if p.cancel != nil {
		p.cancel()
		p.wg.Wait()
		p.cancel = nil
	}
}

// take returns the next upstream message, for a backfill that is over: from
// the pump until it hands the upstream back, then read on the caller's
// goroutine.
func (p *upstreamPump) take(ctx context.Context) (Message, error) {
	if p.direct {
		return safeNext(ctx, p.upstream)
	}
	p.handBack.Store(true)
	select {
	case pm := <-p.ch:
		if pm.last {
			p.wg.Wait()
			p.direct = true
		}
		return pm.msg, pm.err
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}
