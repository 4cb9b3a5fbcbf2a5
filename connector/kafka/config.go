package kafka

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// Name is the connector option value.
const Name = "kafka"

// Format is the shape of a sink's messages.
type Format int

// The message formats.
const (
	// FormatPlain sends inserted rows (inserts and update-inserts) and
	// nothing for deletes: an append-only stream of rows.
	FormatPlain Format = iota
	// FormatUpsert sends each key's new row, or a tombstone (no value) when
	// the key's row is deleted: a compacted topic holds the sink's rows.
	FormatUpsert
	// FormatDebezium sends Debezium change events ({"before", "after", "op":
	// c|u|d, "ts_ms", "source": {"db": "dev", "table": <sink>}}) and a
	// tombstone after each delete; ts_ms is when the epoch's first Write
	// came, the same for all the epoch's events.
	FormatDebezium
)

func (f Format) String() string {
	switch f {
	case FormatPlain:
		return "plain"
	case FormatUpsert:
		return "upsert"
	case FormatDebezium:
		return "debezium"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// DefaultDeliveryTimeout is how long a record may wait for the brokers'
// acknowledgement before it fails (and with it its epoch's Commit), unless
// properties.message.timeout.ms says otherwise.
const DefaultDeliveryTimeout = 5 * time.Minute

// checkTimeout bounds Check unless its context has an earlier deadline.
const checkTimeout = 10 * time.Second

// Config is a Kafka sink's options.
type Config struct {
	// Brokers are the bootstrap brokers, host:port
	// (properties.bootstrap.server, comma-separated).
	Brokers []string
	// Topic is the topic produced to; it must exist.
	Topic  string
	Format Format
	// Key names the columns whose JSON object is every message's key
	// (primary_key, else the default key given to Parse). Upsert and
	// Debezium need one; a plain sink without one sends no keys.
	Key []string
	// DeliveryTimeout fails records the brokers have not acknowledged in
	// this time (properties.message.timeout.ms; DefaultDeliveryTimeout when
	// zero), so a Commit against unreachable brokers returns an error
	// rather than waiting forever.
	DeliveryTimeout time.Duration
}

// Parse reads the Kafka sink options of props (keys lower-case) and the
// FORMAT clause (format "plain", "upsert" or "debezium", "" when absent;
// encode "json" or ""). Without a FORMAT clause, type = 'upsert' means
// FormatUpsert and type = 'append-only' FormatPlain. An upsert or Debezium
// sink keys its messages by primary_key, else by defaultKey; key columns
// must be sink columns (primary_key's visible ones).
func Parse(props map[string]string, format, encode string, cols []connector.Column, defaultKey []string) (Config, error) {
	cfg := Config{DeliveryTimeout: DefaultDeliveryTimeout}
	for k, v := range props {
		switch k {
		case "connector", "type", "primary_key", "force_append_only":
		case "properties.bootstrap.server":
			cfg.Brokers = splitBrokers(v)
		case "topic":
			cfg.Topic = strings.TrimSpace(v)
		case "properties.message.timeout.ms":
			ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || ms <= 0 {
				return cfg, types.Errorf(types.ErrInvalidParameter, "properties.message.timeout.ms must be a positive integer, got %q", v)
			}
			cfg.DeliveryTimeout = time.Duration(ms) * time.Millisecond
		default:
			return cfg, types.Errorf(types.ErrInvalidParameter,
				"unknown kafka sink option %q (known: properties.bootstrap.server, topic, properties.message.timeout.ms, type, primary_key, force_append_only)", k)
		}
	}
	if len(cfg.Brokers) == 0 {
		return cfg, types.Errorf(types.ErrInvalidParameter, "a kafka sink needs properties.bootstrap.server = '<host:port>[,...]'")
	}
	if cfg.Topic == "" {
		return cfg, types.Errorf(types.ErrInvalidParameter, "a kafka sink needs topic = '<topic>'")
	}
	var force bool
	switch v := strings.ToLower(strings.TrimSpace(props["force_append_only"])); v {
	case "", "false":
	case "true":
		force = true
	default:
		return cfg, types.Errorf(types.ErrInvalidParameter, "force_append_only must be true or false, got %q", props["force_append_only"])
	}
	typ := strings.ToLower(strings.TrimSpace(props["type"]))
	switch typ {
	case "", "append-only", "upsert":
	default:
		return cfg, types.Errorf(types.ErrInvalidParameter, "a kafka sink's type must be 'append-only' or 'upsert', got %q", props["type"])
	}
	switch e := strings.ToLower(encode); e {
	case "", "json":
	default:
		return cfg, types.Errorf(types.ErrUnsupported, "kafka sink: ENCODE %s is not supported (supported: JSON)", strings.ToUpper(e))
	}
	switch f := strings.ToLower(format); f {
	case "":
		switch typ {
		case "upsert":
			cfg.Format = FormatUpsert
		case "append-only":
			cfg.Format = FormatPlain
		default:
			return cfg, types.Errorf(types.ErrInvalidParameter, "a kafka sink needs type = 'append-only' or 'upsert', or a FORMAT clause")
		}
	case "plain":
		if typ == "upsert" && !force {
			return cfg, types.Errorf(types.ErrInvalidParameter, "FORMAT PLAIN needs an append-only sink: use type = 'append-only' (with force_append_only = 'true' over a query that deletes), or FORMAT UPSERT")
		}
		cfg.Format = FormatPlain
	case "upsert":
		cfg.Format = FormatUpsert
	case "debezium":
		cfg.Format = FormatDebezium
	default:
		return cfg, types.Errorf(types.ErrUnsupported, "kafka sink: FORMAT %s is not supported (supported: PLAIN, UPSERT, DEBEZIUM)", strings.ToUpper(f))
	}

	given := strings.TrimSpace(props["primary_key"]) != ""
	switch {
	case given:
		for _, name := range strings.Split(props["primary_key"], ",") {
			cfg.Key = append(cfg.Key, strings.TrimSpace(name))
		}
	case cfg.Format != FormatPlain:
		cfg.Key = append(cfg.Key, defaultKey...)
	}
	if cfg.Format != FormatPlain && len(cfg.Key) == 0 {
		return cfg, types.Errorf(types.ErrInvalidParameter, "a kafka sink in format %s needs a key: give primary_key = '<columns>'", cfg.Format)
	}
	for i, name := range cfg.Key {
		j := keyColumn(cols, name)
		if j < 0 || (given && cols[j].Hidden) {
			return cfg, types.Errorf(types.ErrInvalidParameter, "kafka sink: key column %q is not a column of the sink", name)
		}
		cfg.Key[i] = cols[j].Name
		for _, prev := range cfg.Key[:i] {
			if prev == cols[j].Name {
				return cfg, types.Errorf(types.ErrInvalidParameter, "kafka sink: key column %q is given twice", name)
			}
		}
	}
	return cfg, nil
}

// keyColumn returns the index of the column named name (exactly, else
// ignoring case), or -1.
func keyColumn(cols []connector.Column, name string) int {
	for j, c := range cols {
		if c.Name == name {
			return j
		}
	}
	for j, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return j
		}
	}
	return -1
}

// splitBrokers splits properties.bootstrap.server's comma-separated
// host:port list, dropping empty entries.
func splitBrokers(v string) []string {
	var brokers []string
	for _, b := range strings.Split(v, ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	return brokers
}

// Check connects to the brokers and verifies that the topic exists, within
// ctx and at most checkTimeout.
func (c Config) Check(ctx context.Context) error {
	return checkTopic(ctx, "kafka sink", c.Brokers, c.Topic)
}

// checkTopic connects to brokers and verifies that topic exists, within ctx
// and at most checkTimeout; its errors (types.ErrInvalidParameter) start
// with what ("kafka sink") and name the brokers or the topic.
func checkTopic(ctx context.Context, what string, brokers []string, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID(clientID), dialer)
	if err != nil {
		return types.Errorf(types.ErrInvalidParameter, "%s: properties.bootstrap.server: %v", what, err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return connector.PeerErrorf(types.ErrInvalidParameter, err, "%s: cannot reach the brokers %s: %v", what, strings.Join(brokers, ","), err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		switch err := kerr.ErrorForCode(rt.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return types.Errorf(types.ErrInvalidParameter, "%s: topic %q does not exist on %s; create it first", what, topic, strings.Join(brokers, ","))
		case err != nil:
			return connector.PeerErrorf(types.ErrInvalidParameter, err, "%s: topic %q: %v", what, topic, err)
		}
		return nil
	}
	return types.Errorf(types.ErrInvalidParameter, "%s: topic %q does not exist on %s; create it first", what, topic, strings.Join(brokers, ","))
}

// clientID names this system's clients to the brokers.
const clientID = "tributary"

// clientOpts are the producer's options: idempotent, acks from all in-sync
// replicas, keyed records hashed (murmur2, as Kafka's own clients do) so a
// key's messages share a partition, and a bounded buffer: Write blocks
// when it is full.
//
// The delivery timeout also fails records that may have reached a broker
// (franz-go otherwise waits for their outcome forever, as brokers that are
// gone never say): the epoch then fails and is replayed whole, which may
// duplicate what did arrive, as a replay does anyway (at least once).
func (c Config) clientOpts() []kgo.Opt {
	timeout := c.DeliveryTimeout
	if timeout <= 0 {
		timeout = DefaultDeliveryTimeout
	}
	return []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		dialer,
		kgo.ClientID(clientID),
		kgo.DefaultProduceTopic(c.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
		kgo.MaxBufferedRecords(maxBufferedRecords),
		kgo.MaxBufferedBytes(maxBufferedBytes),
		kgo.RecordDeliveryTimeout(timeout),
		kgo.AllowIdempotentProduceCancellation(),
	}
}

// The producer's buffer bounds.
const (
	maxBufferedRecords = 10_000
	maxBufferedBytes   = 64 << 20
)
