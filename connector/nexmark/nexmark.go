package nexmark

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Name is the connector's name in WITH (connector = ...).
const Name = "nexmark"

// Option keys and defaults (RisingWave's names).
const (
	OptTableType   = "nexmark.table.type"
	OptSplitNum    = "nexmark.split.num"
	OptEventNum    = "nexmark.event.num"
	OptMinEventGap = "nexmark.min.event.gap.in.ns"
	OptMaxChunk    = "nexmark.max.chunk.size"
	// OptNextEventRate is the event-time rate (events per second of event
	// time) when it should not follow the pacing gap.
	OptNextEventRate = "nexmark.next.event.rate"

	DefaultSplitNum    = 1
	DefaultMinEventGap = 100000 // ns: 10,000 events/s
	DefaultMaxChunk    = 1024
	maxSplits          = 1024
	maxChunkLimit      = 1 << 16
)

// BaseTime is the event time of event 0 in ms since 1970 (2015-07-15
// 00:00:00 UTC, what RisingWave pins in the nexmark.table.type mode).
const BaseTime = 1436918400000

// Table is one of the three Nexmark event types.
type Table uint8

const (
	Person Table = iota
	Auction
	Bid
)

// String is the type's name as nexmark.table.type spells it.
func (t Table) String() string { return [...]string{"Person", "Auction", "Bid"}[t] }

// Column is one column of the table the source fills.
type Column struct {
	Name string
	Type types.T
	// RowIndex marks a hidden row-id column: it gets the event number + 1,
	// so a replayed row keeps its key.
	RowIndex bool
}

// Config is a parsed nexmark source: which event type it generates into
// which columns, the event count, the gap and the split count.
type Config struct {
	Table  Table
	fields []field
	// Splits is the number of splits (nexmark.split.num).
	Splits int
	// Events is the number of events over all three tables
	// (nexmark.event.num), or -1 when unbounded.
	Events int64
	// GapNs is the synthetic event-time step between consecutive events
	// (nexmark.min.event.gap.in.ns); 0 gives every event the base time.
	GapNs int64
	// TimeStepNs, when above 0, replaces GapNs as the event-time step
	// (1e9 / nexmark.next.event.rate), so a fast run still spans many
	// windows of event time; GapNs then only paces.
	TimeStepNs float64
	// MaxChunk bounds the rows of one chunk (nexmark.max.chunk.size).
	MaxChunk int
}

func invalid(format string, args ...any) error {
	return types.Errorf(types.ErrInvalidParameter, "nexmark: "+format, args...)
}

// Parse checks a table's connector options against its columns. Keys are
// case-insensitive; "connector" must be "nexmark". The columns must be
// named after fields of the table type's reference schema (any subset, any
// order) with compatible types. Errors are types.ErrUnsupported (another
// connector), types.ErrInvalidParameter (a bad option or an unknown column)
// or types.ErrDatatypeMismatch (a column of the wrong type).
func Parse(props map[string]string, cols []Column) (*Config, error) {
	opts := map[string]string{}
	for k, v := range props {
		opts[strings.ToLower(k)] = v
	}
	if c := strings.ToLower(opts["connector"]); c != Name {
		return nil, types.Errorf(types.ErrUnsupported, "connector %q is not supported by the nexmark generator", opts["connector"])
	}
	cfg := &Config{Splits: DefaultSplitNum, Events: -1, GapNs: DefaultMinEventGap, MaxChunk: DefaultMaxChunk}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	haveType := false
	for _, k := range keys {
		v := strings.TrimSpace(opts[k])
		intOpt := func(lo, hi int64) (int64, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < lo || n > hi {
				return 0, invalid("%s must be an integer between %d and %d, got %q", k, lo, hi, opts[k])
			}
			return n, nil
		}
		var err error
		var n int64
		switch k {
		case "connector":
		case OptTableType:
			switch strings.ToLower(v) {
			case "person":
				cfg.Table = Person
			case "auction":
				cfg.Table = Auction
			case "bid":
				cfg.Table = Bid
			default:
				return nil, invalid("%s must be Person, Auction or Bid, got %q", k, opts[k])
			}
			haveType = true
		case OptSplitNum:
			n, err = intOpt(1, maxSplits)
			cfg.Splits = int(n)
		case OptEventNum:
			cfg.Events, err = intOpt(0, math.MaxInt64/2)
		case OptMinEventGap:
			cfg.GapNs, err = intOpt(0, 3600e9)
		case OptMaxChunk:
			n, err = intOpt(1, maxChunkLimit)
			cfg.MaxChunk = int(n)
		case OptNextEventRate:
			n, err = intOpt(1, 1e9)
			cfg.TimeStepNs = 1e9 / float64(n)
		default:
			return nil, invalid("unknown option %q", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveType {
		return nil, invalid("%s (Person, Auction or Bid) is required", OptTableType)
	}
	schema := schemas[cfg.Table]
	for _, c := range cols {
		if c.RowIndex {
			cfg.fields = append(cfg.fields, fRowIndex)
			continue
		}
		f, ok := fieldByName(schema, c.Name)
		if !ok {
			return nil, invalid("column %s is not a field of a %s event (%s)", c.Name, cfg.Table, schemaNames(schema))
		}
		if !compatible(f.kind, c.Type) {
			return nil, types.Errorf(types.ErrDatatypeMismatch, "nexmark: column %s is %s, but the %s field %s is %s", c.Name, c.Type.SQLName(), cfg.Table, f.name, f.kind)
		}
		cfg.fields = append(cfg.fields, f.f)
	}
	return cfg, nil
}

// compatible reports whether a column of type t can hold a field of kind k.
func compatible(k string, t types.T) bool {
	switch k {
	case "bigint":
		return t.ID == types.Int64
	case "varchar":
		return t.ID == types.Varchar && t.Width == 0
	case "timestamp":
		return t.ID == types.Timestamp || t.ID == types.Timestamptz
	}
	return false
}

func fieldByName(schema []schemaField, name string) (schemaField, bool) {
	for _, f := range schema {
		if strings.EqualFold(f.name, name) {
			return f, true
		}
	}
	return schemaField{}, false
}

func schemaNames(schema []schemaField) string {
	names := make([]string, len(schema))
	for i, f := range schema {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// eventsPerEpoch and the per-type counts are the 1:3:46 proportions: in
// each block of 50 events, event 0 is a person, 1-3 auctions, 4-49 bids.
const (
	eventsPerEpoch = 50
	personsPer     = 1
	auctionsPer    = 3
	bidsPer        = eventsPerEpoch - personsPer - auctionsPer
)

// perEpoch is how many events of the table one block of 50 holds, and first
// the offset of its first one in the block.
func (t Table) perEpoch() (n, first int64) {
	switch t {
	case Person:
		return personsPer, 0
	case Auction:
		return auctionsPer, personsPer
	}
	return bidsPer, personsPer + auctionsPer
}

// EventOf returns the event number of the table's row n (0-based).
func (t Table) EventOf(n int64) int64 {
	per, first := t.perEpoch()
	return n/per*eventsPerEpoch + first + n%per
}

// CountBelow returns how many of the events 0..events-1 are the table's.
func (t Table) CountBelow(events int64) int64 {
	per, first := t.perEpoch()
	rem := events % eventsPerEpoch
	return events/eventsPerEpoch*per + min(max(rem-first, 0), per)
}

// Total is the number of rows the table gets (-1: unbounded).
func (c *Config) Total() int64 {
	if c.Events < 0 {
		return -1
	}
	return c.Table.CountBelow(c.Events)
}

// SplitRows is the number of rows split produces in all (-1: unbounded).
// Split i of k owns the table's rows n with n % k == i.
func (c *Config) SplitRows(split int) int64 {
	total := c.Total()
	if total < 0 {
		return -1
	}
	if int64(split) >= total {
		return 0
	}
	return (total-int64(split)-1)/int64(c.Splits) + 1
}

// RowsPerSecond is the table's share of 1e9/GapNs events per second over
// all splits, so that the three tables advance through the event numbering
// together and event time follows the wall clock; -1 (unlimited) when the
// gap is 0.
func (c *Config) RowsPerSecond() int64 {
	if c.GapNs == 0 {
		return -1
	}
	per, _ := c.Table.perEpoch()
	return max(int64(1e9/float64(c.GapNs)*float64(per)/eventsPerEpoch), 1)
}

// String describes the config, for errors and logs.
func (c *Config) String() string {
	return fmt.Sprintf("nexmark(%s, %d columns, %d splits, %d events, gap %d ns)", c.Table, len(c.fields), c.Splits, c.Events, c.GapNs)
}
