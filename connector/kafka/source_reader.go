package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// The reader's buffer and retry bounds.
const (
	// bufferBytes and bufferBatches bound the fetched messages waiting for
	// Read; the client holds at most one more fetch of fetchMaxBytes.
	bufferBytes    = 16 << 20
	bufferBatches  = 256
	fetchMaxBytes  = 8 << 20
	fetchPartBytes = 1 << 20
	// A poll that brings only errors waits before the next: minBackoff,
	// doubling up to maxBackoff.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Reader reads a set of partitions (connector.SplitReader): a franz-go
// client assigned the partitions directly (no consumer group; nothing is
// committed to Kafka) fetches in a background goroutine into a bounded
// queue of per-partition batches, and Read decodes from the queue's head.
type Reader struct {
	topic  string
	dec    *decoder
	env    connector.ReaderEnv
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{} // closed when the poller has returned
	ready  chan struct{} // signalled when batches arrive
	space  chan struct{} // signalled when Read frees room in the queue
	trbl   *connector.TroubleLog

	closeOnce sync.Once

	mu struct {
		sync.Mutex
		queue []*batch
		bytes int
		// removed are the splits RemoveSplits took away: their batches
		// still in flight are dropped.
		removed map[string]bool
		// hwm is each partition's high watermark as last fetched.
		hwm map[string]int64
	}

	// Read's state.
	cur *batch

	// The poller's state: each partition's next offset, -1 until known.
	expect map[int32]int64
}

// batch is fetched records of one partition, in offset order.
type batch struct {
	split string
	recs  []*kgo.Record
	bytes int
}

func newReader(s *Source, splits []connector.SplitOffset, env connector.ReaderEnv) (*Reader, error) {
	if len(splits) == 0 {
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka source %s: a reader of no splits", s.relation)
	}
	r := &Reader{
		topic:  s.cfg.Topic,
		dec:    newDecoder(s.plan, s.cfg.MaxMessageBytes),
		env:    env,
		done:   make(chan struct{}),
		ready:  make(chan struct{}, 1),
		space:  make(chan struct{}, 1),
		trbl:   &connector.TroubleLog{Fn: env.Trouble},
		expect: map[int32]int64{},
	}
	offsets := map[int32]kgo.Offset{}
	for _, sp := range splits {
		p, err := parseSplit(sp.Split)
		if err != nil {
			return nil, err
		}
		if _, dup := offsets[p]; dup {
			return nil, types.Errorf(types.ErrInvalidParameter, "kafka source %s: split %s given twice", s.relation, sp.Split)
		}
		if sp.Offset == nil {
			offsets[p] = s.cfg.startOffset()
			r.expect[p] = -1
			continue
		}
		next, err := DecodeOffset(sp.Offset)
		if err != nil {
			return nil, fmt.Errorf("kafka source %s: split %s: %w", s.relation, sp.Split, err)
		}
		offsets[p] = kgo.NewOffset().At(next)
		r.expect[p] = next
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(s.cfg.Brokers...),
		dialer,
		kgo.ClientID(clientID),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: offsets}),
		// Below the log start (truncated by retention): go on from the
		// log start; the poller reports the gap.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(fetchPartBytes),
		kgo.KeepRetryableFetchErrors(),
		kgo.WithHooks(connectHook{r.trbl}),
	)
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka source %s: %v", s.relation, err)
	}
	r.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.poll(ctx)
	return r, nil
}

// startOffset is where a split without a stored offset starts.
func (c SourceConfig) startOffset() kgo.Offset {
	switch c.Startup {
	case StartLatest:
		return kgo.NewOffset().AtEnd()
	case StartTimestamp:
		return kgo.NewOffset().AfterMilli(c.StartupMillis)
	}
	return kgo.NewOffset().AtStart()
}

// Read implements connector.SplitReader: it decodes up to limit messages of
// the oldest fetched batch. Skipped messages (reported through
// env.BadMessage) add no row but advance the offset, so a result may have
// Rows == 0 and a Split whose Offset and Next moved on; Ready is then
// signalled again if more is buffered.
func (r *Reader) Read(dst *types.Chunk, limit int) (connector.ReadResult, error) {
	if limit <= 0 {
		return connector.ReadResult{}, nil
	}
	if r.cur == nil {
		if r.cur = r.pop(); r.cur == nil {
			return connector.ReadResult{}, nil
		}
	}
	b := r.cur
	rows, i := 0, 0
	var size int64
	for i < len(b.recs) && rows < limit {
		rec := b.recs[i]
		i++
		size += int64(len(rec.Key) + len(rec.Value))
		ok, err := r.dec.decode(dst, rec, b.split)
		if ok {
			rows++
		}
		if err != nil && r.env.BadMessage != nil {
			r.env.BadMessage(b.split, rec.Offset, err)
		}
	}
	next := b.recs[i-1].Offset + 1
	clear(b.recs[:i])
	b.recs = b.recs[i:]
	if len(b.recs) == 0 {
		r.cur = nil
	}
	if r.cur != nil || r.queued() {
		signal(r.ready)
	}
	return connector.ReadResult{Split: b.split, Rows: rows, Offset: EncodeOffset(next), Next: next, Bytes: size}, nil
}

func (r *Reader) noteHighWatermark(split string, hwm int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.hwm == nil {
		r.mu.hwm = map[string]int64{}
	}
	r.mu.hwm[split] = hwm
}

// Newest implements connector.Newester: the partition's high watermark
// (the offset after its newest message) as last fetched.
func (r *Reader) Newest(split string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hwm, ok := r.mu.hwm[split]
	return hwm, ok
}

// RemoveSplits implements connector.SplitRemover: the client stops
// fetching the splits' partitions and their fetched batches are dropped;
// the other splits go on with what was fetched for them. Call it from the
// goroutine that calls Read.
func (r *Reader) RemoveSplits(splits []string) {
	parts := make([]int32, 0, len(splits))
	r.mu.Lock()
	if r.mu.removed == nil {
		r.mu.removed = map[string]bool{}
	}
	for _, sp := range splits {
		if p, err := parseSplit(sp); err == nil {
			parts = append(parts, p)
			r.mu.removed[sp] = true
		}
	}
	kept := r.mu.queue[:0]
	for _, b := range r.mu.queue {
		if r.mu.removed[b.split] {
			r.mu.bytes -= b.bytes
			continue
		}
		kept = append(kept, b)
	}
	clear(r.mu.queue[len(kept):])
	r.mu.queue = kept
	r.mu.Unlock()
	signal(r.space)
	if r.cur != nil && slices.Contains(splits, r.cur.split) {
		r.cur = nil
	}
	// Paused, not removed: removing partitions resets the consumer's fetch state,
	// and fetches in flight for the other partitions were then made again.
	r.cl.PauseFetchPartitions(map[string][]int32{r.topic: parts})
}

// Ready implements connector.SplitReader.
func (r *Reader) Ready() <-chan struct{} { return r.ready }

// Close implements connector.SplitReader: it stops the poller and the
// client and waits for them.
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		r.trbl.Close()
		r.cancel()
		<-r.done
		r.cl.Close()
	})
	return nil
}

func (r *Reader) pop() *batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.mu.queue) == 0 {
		return nil
	}
	b := r.mu.queue[0]
	r.mu.queue[0] = nil
	r.mu.queue = r.mu.queue[1:]
	r.mu.bytes -= b.bytes
	signal(r.space)
	return b
}

func (r *Reader) queued() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.queue) > 0
}

// poll fetches into the queue until ctx ends. Fetch errors are reported
// and retried: the client keeps each partition's position, so reading goes
// on at the next offset when the brokers come back.
func (r *Reader) poll(ctx context.Context) {
	defer close(r.done)
	var backoff time.Duration
	for {
		if !r.waitSpace(ctx) {
			return
		}
		fs := r.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		var added []*batch
		failed := false
		for _, f := range fs {
			for _, t := range f.Topics {
				for _, p := range t.Partitions {
					if p.Err == nil && p.HighWatermark >= 0 {
						r.noteHighWatermark(splitName(p.Partition), p.HighWatermark)
					}
					if p.Err != nil {
						failed = true
						r.fetchError(t.Topic, p.Partition, p.Err)
					}
					if len(p.Records) > 0 {
						added = append(added, r.newBatch(p))
					}
				}
			}
		}
		if len(added) > 0 {
			r.mu.Lock()
			for _, b := range added {
				if r.mu.removed[b.split] {
					continue
				}
				r.mu.queue = append(r.mu.queue, b)
				r.mu.bytes += b.bytes
			}
			r.mu.Unlock()
			signal(r.ready)
			backoff = 0
			continue
		}
		if failed {
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// newBatch makes a batch of p's records, noting a gap the log's truncation
// made (an offset out of range: the client went on at the log start).
func (r *Reader) newBatch(p kgo.FetchPartition) *batch {
	first, last := p.Records[0].Offset, p.Records[len(p.Records)-1].Offset
	if exp, ok := r.expect[p.Partition]; ok && exp >= 0 && first > exp && p.LogStartOffset > exp {
		r.trbl.ReportNow(fmt.Errorf("kafka source: topic %q partition %d: offsets %d to %d were deleted from the log (retention or DeleteRecords) before they were read; reading goes on from the log start, offset %d",
			r.topic, p.Partition, exp, p.LogStartOffset-1, first))
	}
	r.expect[p.Partition] = last + 1
	b := &batch{split: splitName(p.Partition), recs: p.Records}
	for _, rec := range p.Records {
		b.bytes += len(rec.Key) + len(rec.Value)
	}
	return b
}

func (r *Reader) fetchError(topic string, partition int32, err error) {
	var dl *kgo.ErrDataLoss
	switch {
	case errors.Is(err, context.Canceled):
		return
	case errors.As(err, &dl):
		r.trbl.ReportNow(fmt.Errorf("kafka source: topic %q partition %d: %w", topic, partition, err))
	case partition < 0:
		r.trbl.Report(fmt.Errorf("kafka source: topic %q: %w; retrying", topic, err))
	default:
		r.trbl.Report(fmt.Errorf("kafka source: topic %q partition %d: %w; retrying", topic, partition, err))
	}
}

// waitSpace waits until the queue has room, or ctx ends (false).
func (r *Reader) waitSpace(ctx context.Context) bool {
	for {
		r.mu.Lock()
		full := r.mu.bytes >= bufferBytes || len(r.mu.queue) >= bufferBatches
		r.mu.Unlock()
		if !full {
			return true
		}
		select {
		case <-r.space:
		case <-ctx.Done():
			return false
		}
	}
}

// signal wakes a waiter on ch (capacity 1) without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// connectHook reports failed connections to brokers.
type connectHook struct{ t *connector.TroubleLog }

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (h connectHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.t.Report(fmt.Errorf("kafka source: cannot connect to broker %s:%d: %w; retrying", meta.Host, meta.Port, err))
	}
}
