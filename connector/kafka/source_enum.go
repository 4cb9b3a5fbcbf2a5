package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// Enumerator lists a topic's partitions and their offsets
// (connector.SplitEnumerator) with a client of its own that only asks for
// metadata and offsets.
type Enumerator struct {
	src *Source
	cl  *kgo.Client
}

func newEnumerator(s *Source) (*Enumerator, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...), kgo.ClientID(clientID), dialer)
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka source %s: %v", s.relation, err)
	}
	return &Enumerator{src: s, cl: cl}, nil
}

// Splits implements connector.SplitEnumerator: the topic's partitions now
// (a metadata request each call, so added partitions appear), in
// partition order ("2" before "10").
func (e *Enumerator) Splits(ctx context.Context) ([]string, error) {
	topic := e.src.cfg.Topic
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, e.cl)
	if err != nil {
		return nil, e.errorf("listing the partitions of topic %q: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return nil, e.errorf("listing the partitions of topic %q: %w", topic, err)
		}
		parts := make([]int32, 0, len(rt.Partitions))
		for _, p := range rt.Partitions {
			parts = append(parts, p.Partition)
		}
		slices.Sort(parts)
		splits := make([]string, len(parts))
		for i, p := range parts {
			splits[i] = splitName(p)
		}
		return splits, nil
	}
	return nil, e.errorf("listing the partitions of topic %q: %w", topic, kerr.UnknownTopicOrPartition)
}

// Bounds implements connector.SplitEnumerator: per partition, End is the
// high watermark and Start the startup position now (earliest: the log
// start; latest: the high watermark; timestamp: the first offset at or
// after the timestamp, else the high watermark). The start is asked first,
// so Start <= End.
func (e *Enumerator) Bounds(ctx context.Context, splits []string) (map[string]connector.SplitBounds, error) {
	parts := make([]int32, len(splits))
	for i, s := range splits {
		p, err := parseSplit(s)
		if err != nil {
			return nil, err
		}
		parts[i] = p
	}
	var starts map[int32]int64
	var err error
	switch cfg := e.src.cfg; cfg.Startup {
	case StartEarliest:
		starts, err = e.listOffsets(ctx, parts, -2)
	case StartTimestamp:
		starts, err = e.listOffsets(ctx, parts, cfg.StartupMillis)
	}
	if err != nil {
		return nil, err
	}
	ends, err := e.listOffsets(ctx, parts, -1)
	if err != nil {
		return nil, err
	}
	out := make(map[string]connector.SplitBounds, len(splits))
	for i, p := range parts {
		end := ends[p]
		start, ok := starts[p]
		if !ok || start < 0 || start > end { // latest, or no message at or after the timestamp
			start = end
		}
		out[splits[i]] = connector.SplitBounds{Start: EncodeOffset(start), StartPos: start, End: end}
	}
	return out, nil
}

// listOffsets asks the partitions' leaders for an offset per partition:
// ts -2 the log start, -1 the high watermark, else the first offset whose
// timestamp is at or after ts ms (-1 when there is none).
func (e *Enumerator) listOffsets(ctx context.Context, parts []int32, ts int64) (map[int32]int64, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	topic := e.src.cfg.Topic
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, ts
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, e.cl)
	if err != nil {
		return nil, e.errorf("listing the offsets of topic %q: %w", topic, err)
	}
	out := make(map[int32]int64, len(parts))
	for _, rt := range resp.Topics {
		if rt.Topic != topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, e.errorf("listing the offsets of topic %q partition %d: %w", topic, rp.Partition, err)
			}
			out[rp.Partition] = rp.Offset
		}
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, e.errorf("listing the offsets of topic %q: no answer for partition %d", topic, p)
		}
	}
	return out, nil
}

func (e *Enumerator) errorf(format string, args ...any) error {
	return fmt.Errorf("kafka source %s: "+format, append([]any{e.src.relation}, args...)...)
}

// Close implements connector.SplitEnumerator.
func (e *Enumerator) Close() error {
	e.cl.Close()
	return nil
}
