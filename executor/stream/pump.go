package stream

import (
	"context"
	"sync"
)

type pumpMsg struct {
	msg Message
	err error
}

// upstreamPump consumes a backfill's upstream on a goroutine of its own, so
// the upstream never waits for the backfill's reads: messages wait in ch,
// one at a time. A panic upstream becomes an error (safeNext).
type upstreamPump struct {
	ch     chan pumpMsg
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// started reports whether start ran (and stop did not).
func (p *upstreamPump) started() bool { return p.cancel != nil }

// start runs the pump until stop, ctx's end or an upstream error (the last
// message it delivers).
func (p *upstreamPump) start(ctx context.Context, upstream Executor) {
	pctx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	p.ch = make(chan pumpMsg, 1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			m, err := safeNext(pctx, upstream)
			select {
			case p.ch <- pumpMsg{msg: m, err: err}:
			case <-pctx.Done():
				return
			}
			if err != nil {
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

// take returns the next upstream message.
func (p *upstreamPump) take(ctx context.Context) (Message, error) {
	select {
	case pm := <-p.ch:
		return pm.msg, pm.err
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}
