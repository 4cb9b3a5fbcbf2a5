package connector

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tributary/tributary/sql/types"
)

// The Meta of the columns a source connector fills besides the payload.
const (
	// MetaRowID is the hidden row id that keys a source's rows: a function
	// of the row's split and position, so a replayed row keeps its key.
	MetaRowID = "row_id"
	// MetaSplit and MetaPosition are the hidden columns of a shared
	// source's stream: each row's split and its position in that split, by
	// which a new job's backfill tells the rows it read itself from the
	// rows of the shared stream.
	MetaSplit    = "split"
	MetaPosition = "position"
	// The INCLUDE columns a connector may offer (INCLUDE partition | offset
	// | timestamp | key [AS name]).
	MetaPartition = "partition"
	MetaOffset    = "offset"
	MetaTimestamp = "timestamp"
	MetaKey       = "key"
)

// SourceColumn is one column of the rows a source connector fills.
type SourceColumn struct {
	Name string
	Type types.T
	// Meta says what fills the column: "" for the payload (a JSON field,
	// a generated value), else one of the Meta constants.
	Meta string
}

// SourceSpec is what a source connector's options are parsed against.
type SourceSpec struct {
	// Relation is the source's or table's qualified name, for messages.
	Relation string
	// Props are the WITH options, keys lower-cased ("connector" included).
	Props map[string]string
	// Format and Encode are the FORMAT ... ENCODE clause, lower-cased ("" when absent).
	Format, Encode string
	// Columns are the relation's columns, in order: every row a reader
	// appends has them all.
	Columns []SourceColumn
	// Key lists the primary key's column indices.
	Key []int
	// Table is true when the rows go into a table (CREATE TABLE ... WITH
	// (connector = ...)), false for a CREATE SOURCE.
	Table bool
}

// SourceConnector is a source connector as registered by name.
type SourceConnector struct {
	Name string
	// Shared connectors read an external system: a CREATE SOURCE runs one
	// reader job whose stream every job on the source shares, each
	// backfilling the splits' history first. The others (generators) are
	// read by each job on the source in its own job.
	Shared bool
	// ReadOnly tables mirror an external table (CDC): INSERT, UPDATE and
	// DELETE on them are refused.
	ReadOnly bool
	// Tables: a CREATE SOURCE of this connector holds no rows and has no
	// columns; tables are created FROM it (CREATE TABLE t (...) FROM source
	// TABLE 'name'), each mirroring one external table, sharing the
	// source's connection and change stream (PostgreSQL CDC).
	Tables bool
	// TableOf (with Tables) returns the options of a table mirroring the
	// external table named table ('schema.table' or 'table') of the source
	// named source whose options are props. Tables of one source that
	// mirror the same external table get equal options.
	TableOf func(props map[string]string, source, table string) (map[string]string, error)
	// TableOptions (with Tables) are the options a table created FROM the
	// source may set in its own WITH, over the source's (the copy's
	// parallelism); it takes no other.
	TableOptions []string
	// Parse checks the options against the columns and returns the typed
	// source; its errors name the bad option (types.ErrInvalidParameter,
	// types.ErrUnsupported).
	Parse func(spec SourceSpec) (Source, error)
	// Endpoints lists the host:port addresses the options make the
	// connector connect to (network.go); nil for connectors that reach no
	// other host.
	Endpoints func(props map[string]string) []string
}

// Source is a parsed source connector: typed options, validated.
type Source interface {
	// Check verifies at CREATE that the external system answers and has
	// what the options name (a topic); nil for generators.
	Check(ctx context.Context) error
	// Enumerator lists the splits.
	Enumerator(ctx context.Context) (SplitEnumerator, error)
	// Reader opens a reader of splits, each from its offset (nil: the
	// startup position the options give).
	Reader(ctx context.Context, splits []SplitOffset, env ReaderEnv) (SplitReader, error)
	// DefaultRate is the rows per second over all splits when no
	// source_rate_limit applies (< 0: as fast as possible).
	DefaultRate() int64
	// TotalRows is the number of rows over all splits, or -1 when the
	// source never ends.
	TotalRows() int64
	// ChunkRows bounds the rows of one Read.
	ChunkRows() int
	// Upsert reports that the rows carry deletes (FORMAT UPSERT: a
	// message without value deletes its key's row); the others are inserts.
	Upsert() bool
}

// FirstOffsetter is implemented by sources whose splits can appear while
// they run (Kafka partitions added to a topic): a split that appears after
// the source started is read from its first row, not from the startup
// position (which, for 'latest', would skip the rows written to it before
// it was listed).
type FirstOffsetter interface {
	FirstOffset(split string) []byte
}

// SplitRemover is implemented by readers that can stop reading some of
// their splits and go on with the others, keeping what they fetched of
// those (a backfill hands its finished splits over one by one).
type SplitRemover interface {
	RemoveSplits(splits []string)
}

// Newester is implemented by readers that know where each split's newest
// message is: Newest returns the position after it (Kafka: the partition's
// high watermark; PostgreSQL CDC: the server's WAL end), comparable to
// ReadResult.Next, so Newest - Next is how far reading is behind (ok false
// while unknown). It is called from the goroutine that calls Read and must
// not block.
type Newester interface {
	Newest(split string) (pos int64, ok bool)
}

// LogLagger is implemented by readers of a change log (PostgreSQL CDC's
// WAL) that know how far a split's committed position is behind the log's
// end, in bytes of log (ok false while unknown). It is called from the
// goroutine that calls Read and must not block.
type LogLagger interface {
	LogLag(split string) (bytes int64, ok bool)
}

// OffsetCommitter is implemented by readers that tell the external system
// what the engine has made durable (PostgreSQL CDC: the replication slot's
// confirmed LSN, so the upstream keeps its WAL exactly as long as a restart
// may need it). Committed is called with a split's offset once the epoch
// that stored it has committed, from the goroutine that calls Read, in
// commit order; it must not block.
type OffsetCommitter interface {
	Committed(split string, offset []byte)
}

// Progresser is implemented by sources whose splits begin with a finite
// part that a table must take before it is complete (a CDC table's copy of
// the upstream table): the source executor reports it as the job's
// backfill, so a blocking CREATE, WAIT, SHOW JOBS and rw_ddl_progress
// follow it. Progress reads a split's offset as stored (nil: the startup
// position): the rows of the finite part read before it, an estimate of
// that part's rows (<= 0: unknown) and whether it has been read whole.
type Progresser interface {
	Progress(split string, offset []byte) (rows, estimate int64, done bool)
}

// BackfillRater is implemented by readers of a Progresser source that can
// limit the rate of the finite part alone (backfill_rate_limit; the change
// stream goes on at its own rate): rows per second, < 0 unlimited, 0
// paused. It is called from the goroutine that calls Read and must not
// block.
type BackfillRater interface {
	SetBackfillRate(rowsPerSecond int64)
}

// SplitSharer is implemented by sources of tables whose splits are
// independent (a CDC table copied in key ranges fixed at CREATE): after
// Check, SharedSplits reports whether the table's job runs actors that share
// out its splits (catalog.Connector.Splits), so that its parallelism can
// change, and how many it starts with (0: the default).
type SplitSharer interface {
	SharedSplits() (ok bool, parallelism int)
}

// OptSiblings is the option by which the engine tells a table of a
// Tables source which other tables read the source (their qualified names,
// comma-separated), as the catalog lists them when the table's job is
// built.
const OptSiblings = "tributary.tables"

// Resolver is implemented by sources whose CREATE fixes options the user
// left out (a CDC source's slot and publication names) or makes something
// in the external system (a slot): after Check, Resolved returns the
// options to record with the relation in place of the ones given.
type Resolver interface {
	Resolved() map[string]string
}

// Dropper is implemented by sources that hold something in the external
// system for the relation (a replication slot): Drop releases it when the
// relation is dropped.
type Dropper interface {
	Drop(ctx context.Context) error
}

// SplitOffset is a split and where to read it from: the opaque offset a
// reader returned after its last rows (nil: the startup position).
type SplitOffset struct {
	Split  string
	Offset []byte
}

// SplitBounds is a split's extent now: where its startup position is and
// the position after its last row (Kafka: the high watermark).
type SplitBounds struct {
	Start    []byte // the offset of the startup position
	StartPos int64  // its position
	End      int64
}

// SplitEnumerator lists a source's splits. It is used by one goroutine.
type SplitEnumerator interface {
	// Splits lists the splits now, sorted; splits added to the external
	// system while running appear in later calls.
	Splits(ctx context.Context) ([]string, error)
	// Bounds returns each split's bounds now.
	Bounds(ctx context.Context, splits []string) (map[string]SplitBounds, error)
	Close() error
}

// ReaderEnv is how a reader reports what it could not read.
type ReaderEnv struct {
	// BadMessage is called for a message skipped or partly read (its
	// values that did not fit set to NULL): malformed, too large, a value
	// of the wrong type. May be nil.
	BadMessage func(split string, position int64, err error)
	// Trouble is called when the external system fails (unreachable,
	// topic gone); the reader retries with a capped backoff. May be nil.
	Trouble func(err error)
	// CDC is called with a CDC split's progress as committed. May be nil.
	CDC func(p CDCProgress)
}

// SplitReader reads a set of splits. Read is called by one goroutine; Ready
// may be waited on from it only.
type SplitReader interface {
	// Read appends to dst (whose columns are the spec's) up to limit rows
	// of one split and says which and where it stands after them. Rows == 0
	// with a nil error and no Split means nothing is available now: wait on
	// Ready. Rows == 0 with a Split means the reader passed messages that
	// carry no row (skipped as bad, tombstones of a plain topic): store
	// that split's Offset and Next as after rows, so a split whose last
	// messages are skipped still reaches its end; Ready is signalled if
	// more is available.
	Read(dst *types.Chunk, limit int) (ReadResult, error)
	// Ready is signalled when Read may find rows again.
	Ready() <-chan struct{}
	// Close releases the reader.
	Close() error
}

// ReadResult is what one Read did.
type ReadResult struct {
	Split string
	// Rows appended to dst.
	Rows int
	// Offset is the split's offset after them: a reader opened there goes
	// on with the next row.
	Offset []byte
	// Next is the position after them (the next row's position).
	Next int64
	// Exhausted: every split of the reader has ended (bounded sources).
	Exhausted bool
	// Truncate (with Rows == 0): the external table was truncated here;
	// every row of the table is deleted before Offset is stored, in the
	// same epoch (a CDC table mirroring an upstream TRUNCATE).
	Truncate bool
	// TruncateIn (with Truncate) limits the rows deleted to those for
	// which it is true (nil: every row): a split that holds a key range of
	// the table (a CDC table's range) truncates its range alone, in order
	// with its own changes, while other actors write the other ranges.
	TruncateIn func(row []types.Datum) bool
	// Bytes is the size of the messages read (payload and key; 0 when
	// the connector does not tell).
	Bytes int64
	// Fresh: the rows are inserts of keys the table does not hold (a CDC
	// copy's rows, whose keys no change has touched), written without a
	// lookup for an existing row.
	Fresh bool
}

var registry = struct {
	sync.RWMutex
	sources map[string]SourceConnector
	sinks   map[string]SinkConnector
}{sources: map[string]SourceConnector{}, sinks: map[string]SinkConnector{}}

// RegisterSource registers a source connector under its name (lower case);
// connectors register themselves in init.
func RegisterSource(c SourceConnector) {
	registry.Lock()
	defer registry.Unlock()
	registry.sources[strings.ToLower(c.Name)] = c
}

// LookupSource returns the source connector named by props["connector"]
// (matched case-insensitively), or a types.ErrUnsupported error naming the
// known ones.
func LookupSource(props map[string]string) (SourceConnector, error) {
	name := props["connector"]
	registry.RLock()
	defer registry.RUnlock()
	if c, ok := registry.sources[strings.ToLower(name)]; ok {
		return c, nil
	}
	var known []string
	for n := range registry.sources {
		known = append(known, n)
	}
	sort.Strings(known)
	if name == "" {
		return SourceConnector{}, types.Errorf(types.ErrUnsupported, "a connector option is needed (connector = %s)", quoteList(known))
	}
	return SourceConnector{}, types.Errorf(types.ErrUnsupported, "source connector %q is not supported (supported: %s)", name, strings.Join(known, ", "))
}

// ParseSource looks spec's connector up and parses its options.
func ParseSource(spec SourceSpec) (SourceConnector, Source, error) {
	c, err := LookupSource(spec.Props)
	if err != nil {
		return c, nil, err
	}
	src, err := c.Parse(spec)
	if err != nil {
		return c, nil, err
	}
	return c, src, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("'%s'", n)
	}
	return strings.Join(q, " | ")
}

// CDCProgress is a CDC table's copy and stream position as last committed
// (rw_catalog.rw_cdc_progress), reported by its reader (ReaderEnv.CDC).
type CDCProgress struct {
	Relation, Split string
	// PK is the last copied key, in text ("" before the first).
	PK string
	// Finished: every upstream row has been copied.
	Finished bool
	// Rows copied; Estimate is the upstream's row estimate (-1: unknown).
	Rows, Estimate int64
	// LSN is the change stream's committed position (PostgreSQL's 0/16B3748 form).
	LSN string
	// The copy's key ranges (backfill.parallelism; 1 for a copy in one
	// range): all of them, those copied, and those copied whose changes
	// the stream has caught up with.
	SplitTotal, SplitBackfilled, SplitCompleted int
	// Ranges are the copy's key ranges (one for a copy in one range).
	Ranges []CDCRange
}

// CDCRange is one key range of a CDC table's copy as last committed
// (rw_catalog.rw_cdc_splits).
type CDCRange struct {
	ID int
	// Lo and Hi bound the range's first key column, Lo < k <= Hi, in text
	// ("" with LoOpen or HiOpen: unbounded); PK is its last copied key.
	Lo, Hi          string
	LoOpen, HiOpen  bool
	PK              string
	Finished        bool
	Rows            int64
	LSNLow, LSNHigh string // "" when not known
}
