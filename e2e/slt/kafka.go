package slt

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaBrokerVar is replaced in every statement and query by the address of the script's
// Kafka cluster (started on first use).
const KafkaBrokerVar = "${KAFKA_BROKER}"

// NullMessage is a message line's value (or key) that stands for null: a tombstone.
const NullMessage = "<null>"

// KafkaCommand is a `kafka ...` directive:
//
//	kafka create-topic <topic> <partitions> [<config>=<value> ...]
//	kafka add-partitions <topic> <n>           (n more partitions)
//	kafka delete-topic <topic>
//	kafka produce <topic> [partition=<p>] [timestamp=<unix ms>] [count=<n> [from=<k>]]
//	<value> | <key><TAB><value>                (one message a line, until a blank line)
//
// With count=n the single message line is a template produced n times, ${i} in it replaced
// by k, k+1, ... k+n-1 (k is 0 unless from= says otherwise).
type KafkaCommand struct {
	Op        string // create-topic, add-partitions, delete-topic, produce
	Topic     string
	N         int32             // create-topic: partitions; add-partitions: how many more
	Configs   map[string]string // create-topic: topic configs
	Partition int32             // produce: -1 spreads the messages (see Runner)
	Timestamp int64             // produce: Unix ms, 0 for the produce time
	Count     int64             // produce: >0 repeats the one message line as a template
	From      int64             // produce: the first ${i} of a template
	Messages  []KafkaMessage    // produce
}

// KafkaMessage is one message line of `kafka produce`.
type KafkaMessage struct {
	Key   []byte // nil: no key
	Value []byte // nil: a tombstone (NullMessage)
}

// parseKafka parses the kafka directive whose words are f, at lines[i]; it returns the
// command and the index of the first line after it.
func parseKafka(f []string, lines []string, i int) (*KafkaCommand, int, error) {
	if len(f) < 3 {
		return nil, 0, errors.New("kafka wants a command and a topic, e.g. kafka create-topic t 1")
	}
	cmd := &KafkaCommand{Op: f[1], Topic: f[2], Partition: -1}
	count := func(s string) (int32, error) {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("kafka %s: bad partition count %q", cmd.Op, s)
		}
		return int32(n), nil
	}
	var err error
	switch cmd.Op {
	case "create-topic":
		if len(f) < 4 {
			return nil, 0, errors.New("kafka create-topic wants <topic> <partitions> [config=value ...]")
		}
		if cmd.N, err = count(f[3]); err != nil {
			return nil, 0, err
		}
		for _, kv := range f[4:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, 0, fmt.Errorf("kafka create-topic: %q is not config=value", kv)
			}
			if cmd.Configs == nil {
				cmd.Configs = map[string]string{}
			}
			cmd.Configs[k] = v
		}
		return cmd, i + 1, nil
	case "add-partitions":
		if len(f) != 4 {
			return nil, 0, errors.New("kafka add-partitions wants <topic> <n>")
		}
		if cmd.N, err = count(f[3]); err != nil {
			return nil, 0, err
		}
		return cmd, i + 1, nil
	case "delete-topic":
		if len(f) != 3 {
			return nil, 0, errors.New("kafka delete-topic wants <topic>")
		}
		return cmd, i + 1, nil
	case "produce":
	default:
		return nil, 0, fmt.Errorf("unknown kafka command %q (create-topic, add-partitions, delete-topic, produce)", cmd.Op)
	}
	for _, opt := range f[3:] {
		k, v, _ := strings.Cut(opt, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case k == "partition" && err == nil && n >= 0 && n < 1<<31:
			cmd.Partition = int32(n)
		case k == "timestamp" && err == nil && n > 0:
			cmd.Timestamp = n
		case k == "count" && err == nil && n > 0 && n <= 1e6:
			cmd.Count = n
		case k == "from" && err == nil:
			cmd.From = n
		default:
			return nil, 0, fmt.Errorf("kafka produce: bad option %q (partition=<n>, timestamp=<unix ms>, count=<n>, from=<k>)", opt)
		}
	}
	j := i + 1
	for ; j < len(lines) && !isBlank(lines[j]); j++ {
		var m KafkaMessage
		value := lines[j]
		if k, v, ok := strings.Cut(lines[j], "\t"); ok {
			value = v
			if k != NullMessage {
				m.Key = []byte(k)
			}
		}
		if value != NullMessage {
			m.Value = []byte(value)
		}
		cmd.Messages = append(cmd.Messages, m)
	}
	if len(cmd.Messages) == 0 {
		return nil, 0, errors.New("kafka produce wants one message a line after it")
	}
	if cmd.Count > 0 {
		if len(cmd.Messages) != 1 {
			return nil, 0, errors.New("kafka produce count=<n> wants exactly one template line")
		}
		tmpl := cmd.Messages[0]
		cmd.Messages = make([]KafkaMessage, cmd.Count)
		for n := range cmd.Messages {
			i := strconv.FormatInt(cmd.From+int64(n), 10)
			cmd.Messages[n] = KafkaMessage{Key: expand(tmpl.Key, i), Value: expand(tmpl.Value, i)}
		}
	}
	return cmd, j, nil
}

// expand replaces ${i} in b (nil stays nil).
func expand(b []byte, i string) []byte {
	if b == nil {
		return nil
	}
	return []byte(strings.ReplaceAll(string(b), "${i}", i))
}

// kafkaCluster is a script's in-process Kafka cluster and an admin client to it.
type kafkaCluster struct {
	cluster *kfake.Cluster
	client  *kgo.Client
	addrs   []string
	addr    string
	next    map[string]int // topic -> the partition of its next unkeyed message
}

func startKafka() (*kafkaCluster, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("start kafka: %w", err)
	}
	addrs := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return &kafkaCluster{cluster: c, client: cl, addrs: addrs, addr: strings.Join(addrs, ","), next: map[string]int{}}, nil
}

func (k *kafkaCluster) close() {
	k.client.Close()
	k.cluster.Close()
}

// kafka returns the script's cluster, starting it on first use.
func (r *Runner) kafka() (*kafkaCluster, error) {
	if r.kc == nil {
		kc, err := startKafka()
		if err != nil {
			return nil, err
		}
		r.kc = kc
	}
	return r.kc, nil
}

// closeKafka stops the script's cluster, if it started one.
func (r *Runner) closeKafka() {
	if r.kc != nil {
		r.kc.close()
		r.kc = nil
	}
}

// substitute replaces KafkaBrokerVar in sql, starting the cluster if sql uses it.
func (r *Runner) substitute(sql string) (string, error) {
	sql, err := r.substituteUpstream(sql)
	if err != nil {
		return "", err
	}
	if !strings.Contains(sql, KafkaBrokerVar) {
		return sql, nil
	}
	kc, err := r.kafka()
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(sql, KafkaBrokerVar, kc.addr), nil
}

// runKafka runs a kafka directive. Unkeyed messages without partition= go round robin over
// the topic's partitions (from partition 0 for the topic's first), keyed ones to
// fnv32a(key) mod partitions, so every run places them alike.
func (r *Runner) runKafka(ctx context.Context, cmd *KafkaCommand) error {
	kc, err := r.kafka()
	if err != nil {
		return err
	}
	switch cmd.Op {
	case "create-topic":
		return kc.cluster.CreateTopic(cmd.Topic, cmd.N, cmd.Configs)
	case "delete-topic":
		return kc.cluster.DeleteTopic(cmd.Topic)
	case "add-partitions":
		have := len(kc.cluster.PartitionInfos(cmd.Topic))
		if have == 0 {
			return fmt.Errorf("topic %q does not exist", cmd.Topic)
		}
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = cmd.Topic, int32(have)+cmd.N
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10_000
		resp, err := req.RequestWith(ctx, kc.client)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return fmt.Errorf("add partitions to %q: %w", cmd.Topic, err)
			}
		}
		return nil
	case "produce":
		n := len(kc.cluster.PartitionInfos(cmd.Topic))
		if n == 0 {
			return fmt.Errorf("topic %q does not exist", cmd.Topic)
		}
		recs := make([]*kgo.Record, len(cmd.Messages))
		for i, m := range cmd.Messages {
			rec := &kgo.Record{Topic: cmd.Topic, Key: m.Key, Value: m.Value, Partition: cmd.Partition}
			switch {
			case cmd.Partition >= 0:
			case m.Key != nil:
				h := fnv.New32a()
				h.Write(m.Key)
				rec.Partition = int32(h.Sum32() % uint32(n))
			default:
				rec.Partition = int32(kc.next[cmd.Topic] % n)
				kc.next[cmd.Topic]++
			}
			if cmd.Timestamp > 0 {
				rec.Timestamp = time.UnixMilli(cmd.Timestamp)
			}
			recs[i] = rec
		}
		// A producer of its own sees the topic's partitions as they are now.
		p, err := kgo.NewClient(kgo.SeedBrokers(kc.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			return err
		}
		defer p.Close()
		return p.ProduceSync(ctx, recs...).FirstErr()
	}
	return fmt.Errorf("unknown kafka command %q", cmd.Op)
}
