package stream

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
)

// ChannelCapacity is the number of messages an exchange channel buffers;
// a full channel blocks its sender (backpressure).
const ChannelCapacity = 16

// OutputID identifies one downstream output of a dispatcher.
type OutputID uint64

// Output is one bounded channel from an actor to a downstream receiver.
type Output struct {
	ID OutputID
	Ch chan Message
}

// NewOutput returns an output with a fresh bounded channel.
func NewOutput(id OutputID) *Output {
	return &Output{ID: id, Ch: make(chan Message, ChannelCapacity)}
}

// send delivers m unless ctx ends first.
func (o *Output) send(ctx context.Context, m Message) error {
	select {
	case o.Ch <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DispatchKind says how a dispatcher spreads chunks over its outputs.
type DispatchKind uint8

// Dispatch kinds. Barriers and watermarks always go to every output.
const (
	DispatchSimple    DispatchKind = iota // one output (or copies to each: same as broadcast)
	DispatchBroadcast                     // every chunk to every output
	DispatchHash                          // each row to the output owning the vnode of its key
)

// Dispatcher sends an actor's output messages downstream. Outputs can be
// added and removed by barrier mutations; the change applies right as the
// barrier passes, so every output sees whole epochs.
type Dispatcher struct {
	Kind DispatchKind
	// Outputs, and for DispatchHash the key columns and the vnode → output
	// index mapping (len codec.VnodeCount).
	Outputs  []*Output
	Keys     []int
	VnodeMap []int
	types    []types.T
	parts    []*types.Chunk
	hashes   []uint64
}

// NewDispatcher returns a dispatcher over outputs.
func NewDispatcher(kind DispatchKind, outputs []*Output, keys []int, vnodeMap []int, schema []types.T) *Dispatcher {
	return &Dispatcher{Kind: kind, Outputs: outputs, Keys: keys, VnodeMap: vnodeMap, types: schema}
}

// Dispatch sends m to the outputs. For a barrier it applies the mutations
// that concern actor self: new outputs receive this barrier as their first
// message; removed outputs receive it as their last (it is the barrier that
// stops the downstream job).
func (d *Dispatcher) Dispatch(ctx context.Context, self ActorID, m Message) error {
	if m.Barrier != nil {
		m.Barrier.ForEachMutation(func(mu Mutation) {
			if x, ok := mu.(*AddOutputs); ok {
				d.Outputs = append(d.Outputs, x.Outputs[self]...)
			}
		})
	}
	if m.Chunk == nil || d.Kind != DispatchHash || len(d.Outputs) <= 1 {
		for _, o := range d.Outputs {
			if err := o.send(ctx, m); err != nil {
				return err
			}
		}
	} else if err := d.dispatchHash(ctx, m.Chunk); err != nil {
		return err
	}
	if m.Barrier != nil {
		m.Barrier.ForEachMutation(func(mu Mutation) {
			if x, ok := mu.(*RemoveOutputs); ok {
				for _, id := range x.Outputs[self] {
					for i, o := range d.Outputs {
						if o.ID == id {
							d.Outputs = append(d.Outputs[:i:i], d.Outputs[i+1:]...)
							break
						}
					}
				}
			}
		})
	}
	return nil
}

// dispatchHash splits a chunk by the vnode of each row's key. An
// UpdateDelete/UpdateInsert pair whose halves land on different outputs
// becomes a Delete and an Insert.
func (d *Dispatcher) dispatchHash(ctx context.Context, c *types.Chunk) error {
	n := len(d.Outputs)
	if len(d.parts) != n {
		d.parts = make([]*types.Chunk, n)
	}
	ts := c.Types()
	for i := range d.parts {
		d.parts[i] = types.NewChunk(ts, c.Len()/n+1)
	}
	// Rows are hashed by their key columns and copied column by column: no
	// row of values is made.
	var scratch types.Datum
	targetOf := func(i int) int {
		return d.VnodeMap[codec.VnodeOf(codec.HashChunkRow(c, i, d.Keys, &scratch))] % n
	}
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		target := targetOf(i)
		if c.Op(i) == types.OpUpdateDelete && i+1 < c.Len() {
			if t2 := targetOf(i + 1); t2 != target {
				// The update moves the row: a delete here, an insert there.
				appendWithOp(d.parts[target], c, i, types.OpDelete)
				appendWithOp(d.parts[t2], c, i+1, types.OpInsert)
				i++
				continue
			}
		}
		d.parts[target].AppendFrom(c, i)
	}
	for i, p := range d.parts {
		if p.Len() == 0 {
			continue
		}
		if err := d.Outputs[i].send(ctx, ChunkMsg(p)); err != nil {
			return err
		}
	}
	d.parts = d.parts[:0]
	return nil
}

// appendWithOp appends row i of src to dst with op instead of its own.
func appendWithOp(dst, src *types.Chunk, i int, op types.Op) {
	dst.AppendFrom(src, i)
	switch {
	case dst.Ops != nil:
		dst.Ops[dst.Len()-1] = op
	case op != types.OpInsert:
		dst.Ops = make([]types.Op, dst.Len(), dst.Len()+types.DefaultChunkSize)
		dst.Ops[dst.Len()-1] = op
	}
}

// VnodeMapFor spreads the vnodes over n outputs in contiguous ranges.
func VnodeMapFor(n int) []int {
	m := make([]int, codec.VnodeCount)
	for v := range m {
		m[v] = v * n / codec.VnodeCount
	}
	return m
}

// VnodesOf lists the vnodes mapped to output i.
func VnodesOf(vnodeMap []int, i int) []uint16 {
	var out []uint16
	for v, o := range vnodeMap {
		if o == i {
			out = append(out, uint16(v))
		}
	}
	return out
}

// Merge receives from one or more upstream channels and aligns barriers:
// once a barrier arrives on one input it stops reading that input until the
// same barrier has arrived on all, then emits it once. A watermark of a
// column is emitted as the least of the inputs' latest watermarks on it, once
// every input has sent one and whenever that least value rises (no later row
// of any input is below it). Inputs can be added by an AddInputs mutation in
// the aligned barrier.
type Merge struct {
	// Stats, when set, count the rows received and the time waited.
	Stats   *ActorStats
	schema  []types.T
	inputs  []chan Message
	blocked []bool
	waiting int
	pending *Barrier
	cases   []reflect.SelectCase
	stopped bool
	wms     map[int]*mergeWatermark // by column
}

// mergeWatermark is one column's watermarks per input and the last emitted.
type mergeWatermark struct {
	in   []types.Datum
	has  []bool
	out  types.Datum
	sent bool
}

// watermark records input i's watermark w and returns the watermark to emit
// (nil: none yet, or no rise).
func (m *Merge) watermark(i int, w *Watermark) *Watermark {
	if w.Col < 0 || w.Col >= len(m.schema) {
		return nil
	}
	if m.wms == nil {
		m.wms = map[int]*mergeWatermark{}
	}
	s := m.wms[w.Col]
	if s == nil {
		s = &mergeWatermark{}
		m.wms[w.Col] = s
	}
	for len(s.in) < len(m.inputs) {
		s.in = append(s.in, types.Datum{})
		s.has = append(s.has, false)
	}
	t := m.schema[w.Col]
	if !s.has[i] || types.Compare(t, &w.Val, &s.in[i]) > 0 {
		s.in[i], s.has[i] = w.Val.Copy(), true
	}
	var least *types.Datum
	for k := range s.in {
		if !s.has[k] {
			return nil
		}
		if least == nil || types.Compare(t, &s.in[k], least) < 0 {
			least = &s.in[k]
		}
	}
	if s.sent && types.Compare(t, least, &s.out) <= 0 {
		return nil
	}
	s.out, s.sent = least.Copy(), true
	return &Watermark{Col: w.Col, Val: s.out.Copy()}
}

// NewMerge returns a receiver over the upstream channels.
func NewMerge(schema []types.T, inputs []chan Message) *Merge {
	return &Merge{schema: schema, inputs: inputs, blocked: make([]bool, len(inputs))}
}

// Schema implements Executor.
func (m *Merge) Schema() []types.T { return m.schema }

// Next implements Executor.
func (m *Merge) Next(ctx context.Context) (Message, error) {
	if m.Stats == nil {
		return m.next(ctx)
	}
	t := time.Now()
	msg, err := m.next(ctx)
	m.Stats.waitedFor(time.Since(t))
	m.Stats.received(msg)
	return msg, err
}

func (m *Merge) next(ctx context.Context) (Message, error) {
	if m.stopped {
		return Message{}, io.EOF
	}
	if len(m.inputs) == 1 {
		select {
		case msg, ok := <-m.inputs[0]:
			if !ok {
				return Message{}, fmt.Errorf("merge: upstream closed without a stop barrier")
			}
			return msg, nil
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
	for {
		// Select over the unblocked inputs and ctx.
		m.cases = m.cases[:0]
		idx := make([]int, 0, len(m.inputs))
		for i, ch := range m.inputs {
			if m.blocked[i] {
				continue
			}
			m.cases = append(m.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
			idx = append(idx, i)
		}
		m.cases = append(m.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
		chosen, v, ok := reflect.Select(m.cases)
		if chosen == len(m.cases)-1 {
			return Message{}, ctx.Err()
		}
		if !ok {
			return Message{}, fmt.Errorf("merge: upstream closed without a stop barrier")
		}
		msg := v.Interface().(Message)
		i := idx[chosen]
		if msg.Watermark != nil {
			if w := m.watermark(i, msg.Watermark); w != nil {
				return WatermarkMsg(w), nil
			}
			continue
		}
		if msg.Barrier == nil {
			return msg, nil
		}
		m.blocked[i] = true
		m.waiting++
		if m.pending == nil {
			m.pending = msg.Barrier
		} else if m.pending.Epoch != msg.Barrier.Epoch {
			return Message{}, fmt.Errorf("merge: barriers out of step: %v and %v", m.pending, msg.Barrier)
		}
		if m.waiting == len(m.inputs) {
			b := m.pending
			m.pending, m.waiting = nil, 0
			for j := range m.blocked {
				m.blocked[j] = false
			}
			return BarrierMsg(b), nil
		}
	}
}

// AddInput attaches a new upstream channel; call it only between barriers
// (from the executor's own goroutine, right after it returned a barrier).
func (m *Merge) AddInput(ch chan Message) {
	m.inputs = append(m.inputs, ch)
	m.blocked = append(m.blocked, false)
}
