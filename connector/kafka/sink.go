package kafka

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// Sink produces one sink actor's changes to the topic. Write turns each
// visible row into its format's messages and hands them to the client,
// which sends them in the background (blocking Write while its buffer is
// full); Commit waits until the epoch's messages are acknowledged. A failed
// record fails its epoch's Write or Commit, after which the sink starts
// clean: the caller replays the epoch, so Kafka sees it at least once.
//
// In the upsert and Debezium formats an UpdateDelete is held until the next
// row: an UpdateInsert of the same key makes one update with it, anything
// else (or the epoch's end) makes it a delete.
type Sink struct {
	cfg    Config
	target connector.SinkTarget
	client *kgo.Client
	enc    *encoder

	// The open epoch.
	tsMillis int64 // Debezium ts_ms: when the epoch's first Write came
	pending  bool  // an UpdateDelete waits for its UpdateInsert
	pendKey  []byte
	pendRow  []byte                   // the UpdateDelete's row (Debezium's before)
	promise  func(*kgo.Record, error) // records the epoch's first failure

	// Reused buffers.
	row      []types.Datum
	key, val []byte
	event    []byte       // a Debezium event
	slab     []byte       // records' keys and values are cut from here
	recs     []kgo.Record // records to hand out

	mu struct {
		sync.Mutex
		gen uint64 // the epoch's generation: bumped when an epoch ends
		err error  // the generation's first failed record
	}
}

// Allocation sizes: records and their bytes are allocated in blocks, which
// the garbage collector frees once the client is done with all of them.
const (
	slabSize    = 64 << 10
	recordBlock = 256
)

// Debezium ops.
const (
	opCreate = 'c'
	opUpdate = 'u'
	opDelete = 'd'
)

// Open returns a Kafka sink for target. It does not connect: the client
// connects when it first produces (use Config.Check to verify the brokers
// and topic up front).
func Open(_ context.Context, c Config, target connector.SinkTarget) (*Sink, error) {
	if len(c.Brokers) == 0 || c.Topic == "" {
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka sink %s: brokers and topic are required", target.Sink)
	}
	if c.Format != FormatPlain && len(c.Key) == 0 {
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka sink %s: format %s needs a key", target.Sink, c.Format)
	}
	enc, err := newEncoder(target, c.Key)
	if err != nil {
		return nil, fmt.Errorf("kafka sink %s: %w", target.Sink, err)
	}
	client, err := kgo.NewClient(c.clientOpts()...)
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka sink %s: %v", target.Sink, err)
	}
	s := &Sink{cfg: c, target: target, client: client, enc: enc}
	s.endEpoch()
	return s, nil
}

// Write implements connector.Sink. ctx also bounds the produced records'
// lives: canceling it fails those not yet sent.
func (s *Sink) Write(ctx context.Context, c *types.Chunk) error {
	if err := s.failure(); err != nil {
		s.endEpoch()
		return fmt.Errorf("kafka sink %s: %w", s.target.Sink, err)
	}
	if len(c.Cols) != len(s.enc.cols) {
		return fmt.Errorf("kafka sink %s: a chunk of %d columns for %d sink columns", s.target.Sink, len(c.Cols), len(s.enc.cols))
	}
	if s.tsMillis == 0 {
		s.tsMillis = time.Now().UnixMilli()
	}
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		op := c.Op(i)
		if s.cfg.Format == FormatPlain {
			if op.IsInsert() {
				s.row = c.Row(i, s.row[:0])
				s.writePlain(ctx)
			}
			continue
		}
		s.row = c.Row(i, s.row[:0])
		s.key = s.enc.appendKey(s.key[:0], s.row)
		switch op {
		case types.OpUpdateInsert:
			if s.pending && bytes.Equal(s.pendKey, s.key) {
				s.pending = false
				s.writeUpsert(ctx, opUpdate)
				continue
			}
			s.flushPending(ctx)
			s.writeUpsert(ctx, opCreate)
		case types.OpInsert:
			s.flushPending(ctx)
			s.writeUpsert(ctx, opCreate)
		case types.OpUpdateDelete:
			s.flushPending(ctx)
			s.pending = true
			s.pendKey = append(s.pendKey[:0], s.key...)
			if s.cfg.Format == FormatDebezium {
				s.pendRow = s.enc.appendRow(s.pendRow[:0], s.row)
			}
		case types.OpDelete:
			s.flushPending(ctx)
			var before []byte
			if s.cfg.Format == FormatDebezium {
				s.val = s.enc.appendRow(s.val[:0], s.row)
				before = s.val
			}
			s.writeDelete(ctx, s.key, before)
		}
	}
	return nil
}

// writePlain produces s.row, keyed if the sink has a key.
func (s *Sink) writePlain(ctx context.Context) {
	var key []byte
	if len(s.enc.key) > 0 {
		s.key = s.enc.appendKey(s.key[:0], s.row)
		key = s.key
	}
	s.val = s.enc.appendRow(s.val[:0], s.row)
	s.produce(ctx, key, s.val)
}

// writeUpsert produces s.row under s.key: an insert (opCreate), or the
// update of the pending row (opUpdate).
func (s *Sink) writeUpsert(ctx context.Context, op byte) {
	s.val = s.enc.appendRow(s.val[:0], s.row)
	if s.cfg.Format == FormatUpsert {
		s.produce(ctx, s.key, s.val)
		return
	}
	var before []byte
	if op == opUpdate {
		before = s.pendRow
	}
	s.event = s.enc.appendDebezium(s.event[:0], op, before, s.val, s.tsMillis)
	s.produce(ctx, s.key, s.event)
}

// writeDelete produces the deletion of key: a tombstone, after a Debezium
// delete event of before.
func (s *Sink) writeDelete(ctx context.Context, key, before []byte) {
	if s.cfg.Format == FormatDebezium {
		s.event = s.enc.appendDebezium(s.event[:0], opDelete, before, nil, s.tsMillis)
		s.produce(ctx, key, s.event)
	}
	s.produce(ctx, key, nil)
}

// flushPending produces the pending UpdateDelete, if any, as a delete.
func (s *Sink) flushPending(ctx context.Context) {
	if s.pending {
		s.pending = false
		s.writeDelete(ctx, s.pendKey, s.pendRow)
	}
}

// produce hands a record to the client, with copies of key and value (nil
// stays nil: no key, or a tombstone).
func (s *Sink) produce(ctx context.Context, key, value []byte) {
	if len(s.recs) == 0 {
		s.recs = make([]kgo.Record, recordBlock)
	}
	r := &s.recs[0]
	s.recs = s.recs[1:]
	r.Key, r.Value = s.own(key), s.own(value)
	s.client.Produce(ctx, r, s.promise)
}

// own returns a copy of b that is the record's until the client is done
// with it: cut from the slab, or allocated alone when large.
func (s *Sink) own(b []byte) []byte {
	switch {
	case b == nil:
		return nil
	case len(b) > slabSize/8:
		return append(make([]byte, 0, len(b)), b...)
	case cap(s.slab)-len(s.slab) < len(b):
		s.slab = make([]byte, 0, slabSize)
	}
	n := len(s.slab)
	s.slab = append(s.slab, b...)
	return s.slab[n:len(s.slab):len(s.slab)]
}

// Commit implements connector.Sink: it produces a pending UpdateDelete,
// waits until the epoch's records are acknowledged and returns the first
// failure among them.
func (s *Sink) Commit(ctx context.Context, epoch uint64) error {
	err := s.failure()
	if err == nil {
		s.flushPending(ctx)
		err = s.client.Flush(ctx)
	}
	if err == nil {
		err = s.failure()
	}
	s.endEpoch()
	if err != nil {
		return fmt.Errorf("kafka sink %s: epoch %d: %w", s.target.Sink, epoch, err)
	}
	return nil
}

// endEpoch forgets the open epoch and starts a generation: failures of
// records still in flight from a failed epoch are not the next one's.
func (s *Sink) endEpoch() {
	s.pending, s.tsMillis = false, 0
	s.mu.Lock()
	s.mu.gen++
	gen := s.mu.gen
	s.mu.err = nil
	s.mu.Unlock()
	s.promise = func(_ *kgo.Record, err error) {
		if err != nil {
			s.fail(gen, err)
		}
	}
}

// fail records the first failure of generation gen (promises run on the
// client's goroutine).
func (s *Sink) fail(gen uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.gen == gen && s.mu.err == nil {
		s.mu.err = err
	}
}

func (s *Sink) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

// Close implements connector.Sink: records not yet acknowledged are
// abandoned (their epoch was not committed).
func (s *Sink) Close() error {
	s.client.Close()
	return nil
}

// CommitsEpochsTogether implements connector.MultiEpochCommitter: records
// keep their order per key, so several epochs may flush in one commit.
func (s *Sink) CommitsEpochsTogether() bool { return true }
