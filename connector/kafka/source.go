package kafka

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

func init() {
	connector.RegisterSource(connector.SourceConnector{Name: Name, Shared: true, Parse: func(spec connector.SourceSpec) (connector.Source, error) {
		s, err := ParseSource(spec)
		if err != nil {
			return nil, err
		}
		return s, nil
	}, Endpoints: Endpoints})
}

// The source options (WITH keys, lower case).
const (
	OptBootstrapServer = "properties.bootstrap.server"
	OptTopic           = "topic"
	OptStartupMode     = "scan.startup.mode"
	OptStartupMillis   = "scan.startup.timestamp.millis"
	OptMaxMessageBytes = "properties.message.max.bytes"
)

const sourceOptions = "connector, properties.bootstrap.server, topic, scan.startup.mode, scan.startup.timestamp.millis, properties.message.max.bytes"

// DefaultMaxMessageBytes is the size (key plus value) above which a message
// is skipped and reported, unless properties.message.max.bytes says otherwise.
const DefaultMaxMessageBytes = 4 << 20

// StartupMode is where a split is read from when no offset is stored for it
// (scan.startup.mode).
type StartupMode int

// The startup modes.
const (
	// StartEarliest reads from the log start.
	StartEarliest StartupMode = iota
	// StartLatest reads what is produced after the reader or the bounds ask
	// (the high watermark then).
	StartLatest
	// StartTimestamp reads from the first message whose timestamp is at or
	// after scan.startup.timestamp.millis (the high watermark if none is).
	StartTimestamp
)

func (m StartupMode) String() string {
	switch m {
	case StartEarliest:
		return "earliest"
	case StartLatest:
		return "latest"
	case StartTimestamp:
		return "timestamp"
	}
	return "StartupMode(" + strconv.Itoa(int(m)) + ")"
}

// SourceConfig is a Kafka source's options.
type SourceConfig struct {
	// Brokers are the bootstrap brokers, host:port.
	Brokers []string
	Topic   string
	Startup StartupMode
	// StartupMillis is the StartTimestamp position, Unix milliseconds.
	StartupMillis int64
	// MaxMessageBytes: a larger message (key plus value) is skipped.
	MaxMessageBytes int
	// Upsert is FORMAT UPSERT: the message key is the primary key, a
	// message without a value deletes its key's row.
	Upsert bool
}

// Source is a parsed Kafka source (connector.Source): its options and how
// its messages become rows.
type Source struct {
	cfg      SourceConfig
	relation string
	plan     *decodePlan
}

// ParseSource reads a Kafka source's options (spec.Props, keys lower case),
// FORMAT PLAIN | UPSERT ENCODE JSON and columns. Errors name the bad option
// or column: types.ErrInvalidParameter, or types.ErrUnsupported for a
// format, encoding or column type the source cannot read.
func ParseSource(spec connector.SourceSpec) (*Source, error) {
	cfg := SourceConfig{MaxMessageBytes: DefaultMaxMessageBytes}
	mode, millis := "", ""
	for k, v := range spec.Props {
		switch k {
		case "connector":
		case OptBootstrapServer:
			cfg.Brokers = splitBrokers(v)
		case OptTopic:
			cfg.Topic = strings.TrimSpace(v)
		case OptStartupMode:
			mode = strings.ToLower(strings.TrimSpace(v))
		case OptStartupMillis:
			millis = strings.TrimSpace(v)
		case OptMaxMessageBytes:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n <= 0 {
				return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: %s must be a positive integer (bytes), got %q", k, v)
			}
			cfg.MaxMessageBytes = n
		default:
			return nil, types.Errorf(types.ErrInvalidParameter, "unknown kafka source option %q (known: %s)", k, sourceOptions)
		}
	}
	if len(cfg.Brokers) == 0 {
		return nil, types.Errorf(types.ErrInvalidParameter, "a kafka source needs %s = '<host:port>[,...]'", OptBootstrapServer)
	}
	if cfg.Topic == "" {
		return nil, types.Errorf(types.ErrInvalidParameter, "a kafka source needs %s = '<topic>'", OptTopic)
	}
	switch mode {
	case "", "earliest":
		cfg.Startup = StartEarliest
	case "latest":
		cfg.Startup = StartLatest
	case "timestamp":
		cfg.Startup = StartTimestamp
	default:
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: %s must be 'earliest', 'latest' or 'timestamp', got %q", OptStartupMode, spec.Props[OptStartupMode])
	}
	switch {
	case cfg.Startup == StartTimestamp && millis == "":
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: %s = 'timestamp' needs %s", OptStartupMode, OptStartupMillis)
	case cfg.Startup != StartTimestamp && millis != "":
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: %s is only allowed with %s = 'timestamp'", OptStartupMillis, OptStartupMode)
	case millis != "":
		ms, err := strconv.ParseInt(millis, 10, 64)
		if err != nil || ms < 0 {
			return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: %s must be Unix milliseconds (an integer >= 0), got %q", OptStartupMillis, spec.Props[OptStartupMillis])
		}
		cfg.StartupMillis = ms
	}

	format, encode := strings.ToLower(spec.Format), strings.ToLower(spec.Encode)
	switch encode {
	case "", "json":
	default:
		return nil, types.Errorf(types.ErrUnsupported, "kafka source: ENCODE %s is not supported (supported: JSON)", strings.ToUpper(encode))
	}
	switch format {
	case "", "plain":
	case "upsert":
		if !spec.Table {
			return nil, types.Errorf(types.ErrUnsupported, "kafka source: FORMAT UPSERT needs a table to upsert into: use CREATE TABLE ... (...) WITH (connector = 'kafka', ...) FORMAT UPSERT ENCODE JSON")
		}
		cfg.Upsert = true
	default:
		return nil, types.Errorf(types.ErrUnsupported, "kafka source: FORMAT %s is not supported (supported: PLAIN, UPSERT)", strings.ToUpper(format))
	}
	plan, err := newDecodePlan(spec, cfg.Upsert)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, relation: spec.Relation, plan: plan}, nil
}

// Config returns the source's options.
func (s *Source) Config() SourceConfig { return s.cfg }

// Check implements connector.Source: the brokers answer and the topic
// exists, within ctx and at most 10 s (types.ErrInvalidParameter naming the
// brokers or the topic).
func (s *Source) Check(ctx context.Context) error {
	return checkTopic(ctx, "kafka source", s.cfg.Brokers, s.cfg.Topic)
}

// Enumerator implements connector.Source.
func (s *Source) Enumerator(context.Context) (connector.SplitEnumerator, error) {
	return newEnumerator(s)
}

// Reader implements connector.Source.
func (s *Source) Reader(_ context.Context, splits []connector.SplitOffset, env connector.ReaderEnv) (connector.SplitReader, error) {
	return newReader(s, splits, env)
}

// DefaultRate implements connector.Source: as fast as the brokers serve.
func (s *Source) DefaultRate() int64 { return -1 }

// TotalRows implements connector.Source: a topic never ends.
func (s *Source) TotalRows() int64 { return -1 }

// ChunkRows implements connector.Source.
func (s *Source) ChunkRows() int { return types.DefaultChunkSize }

// Upsert implements connector.Source.
func (s *Source) Upsert() bool { return s.cfg.Upsert }

// RowID is the hidden row id of the message at offset in partition:
// partition<<40 | offset, so a replayed message keeps its key (offsets stay
// below 2^40, partitions below 2^23).
func RowID(partition int32, offset int64) int64 {
	return int64(partition)<<40 | offset
}

// A split is a partition, named by its decimal number; its offset is the
// next Kafka offset to read, 8 bytes big-endian.

func splitName(p int32) string { return strconv.Itoa(int(p)) }

func parseSplit(s string) (int32, error) {
	p, err := strconv.ParseInt(s, 10, 32)
	if err != nil || p < 0 || strconv.Itoa(int(p)) != s {
		return 0, types.Errorf(types.ErrInvalidParameter, "kafka source: split %q is not a partition number", s)
	}
	return int32(p), nil
}

// EncodeOffset returns the opaque offset of a split whose next message is
// at Kafka offset next.
func EncodeOffset(next int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(next))
}

// DecodeOffset reads an offset made by EncodeOffset.
func DecodeOffset(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, types.Errorf(types.ErrInvalidParameter, "kafka source: an offset of %d bytes (want 8)", len(b))
	}
	n := int64(binary.BigEndian.Uint64(b))
	if n < 0 {
		return 0, types.Errorf(types.ErrInvalidParameter, "kafka source: offset %d is negative", n)
	}
	return n, nil
}

// FirstOffset implements connector.FirstOffsetter: offset 0 (a partition
// truncated by retention is read from its log start).
func (s *Source) FirstOffset(string) []byte { return EncodeOffset(0) }
