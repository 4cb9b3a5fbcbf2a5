package postgrescdc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// The reader's bounds.
const (
	// maxQueuedRows bounds the rows read from the upstream and not yet
	// taken by Read.
	maxQueuedRows = 16 * 1024
	// A copy reads ahead of what the engine committed at most
	// minReadAhead rows or a readAheadShare of the table's estimate,
	// whichever is more: what a crash makes it read again. While it has
	// less than minChunkRoom rows of room it waits readAheadWait.
	minReadAhead   = 48 * 1024
	readAheadShare = 20
	minChunkRoom   = 1024
	readAheadWait  = 5 * time.Millisecond
	// statusEvery is how often the reader tells the upstream where it
	// stands (also its keepalive: wal_sender_timeout is 60 s by default).
	statusEvery = 10 * time.Second
	// markerEvery: at most this often an idle stream advances the offset's
	// LSN to the upstream's position (so the slot can move on).
	markerEvery = time.Second
	// A failed session is retried after minBackoff, doubling up to maxBackoff.
	minBackoff = 200 * time.Millisecond
	maxBackoff = 30 * time.Second
	// watermarkTimeout bounds the wait for a chunk's watermark.
	watermarkTimeout = 2 * time.Minute
	// watermarkPrefix marks the reader's watermark messages in the WAL.
	watermarkPrefix = "tributary-cdc"
	// estimateEvery: while the upstream's row estimate is unknown (a table
	// never analyzed), the copy asks for it again at most this often.
	estimateEvery = 5 * time.Second
	// throttleWait bounds one wait of a throttled copy (a new rate applies
	// within it).
	throttleWait = 200 * time.Millisecond
)

// Reader reads splits of one table (connector.SplitReader): the table's
// one split, or an actor's share of a ranged table's key ranges. The
// table's hub (the goroutine of its replication slot, shared with the
// slot's other tables and the table's other readers) copies each split in
// primary-key chunks interleaved with the change stream and then follows
// the stream, queueing segments of rows with the split's offset after
// them; Read takes from the queue's head.
//
// The interleaving (DBLog's watermarks): for each chunk, select the next
// ChunkRows rows above the last copied key (the snapshot of one statement),
// then write a watermark into the WAL (pg_logical_emit_message in its own
// transaction, committed after the select) and read the stream up to it.
// Every change read before the watermark is applied when its key is at or
// below the chunk's last key, and such a key's chunk row is dropped (the
// change is as new as the snapshot or newer); changes above the chunk are
// dropped (a later chunk reads them). Then the chunk's other rows are
// queued and the copied position moves to the chunk's last key. Changes
// after the watermark are applied for keys at or below that position. A
// change's effect is a whole row (upsert) or a delete by key, so replaying
// the stream from any earlier commit converges to the same rows: after a
// crash the copy resumes after the persisted key and the stream after the
// persisted LSN.
type Reader struct {
	src    *Source
	name   string // the Tributary table's
	env    connector.ReaderEnv
	trbl   *connector.TroubleLog
	hub    *hub
	closed chan struct{}
	ready  chan struct{}
	space  chan struct{}
	// copyRate is the copy's rate limit in rows per second (< 0
	// unlimited, 0 paused; SetBackfillRate): the stream is not limited.
	copyRate atomic.Int64
	// splits are the reader's splits, in the order given (fixed).
	splits []*rsplit

	closeOnce sync.Once

	mu struct {
		sync.Mutex
		segs []*segment
		rows int
	}

	cur *segment      // Read's
	row []types.Datum // Read's: a copied row decoded
	raw [][]byte      // Read's: a copied row's values (rawRows.rowInto)
}

// rsplit is one split a Reader reads: the table's one split, or one key
// range of a Ranged table.
type rsplit struct {
	name string // connector.SplitOffset.Split
	key  string // the hub's: the relation and the split
	// committed is the LSN the engine has made durable for the split
	// (Committed); the slot's confirmed LSN is the least over its splits.
	committed atomic.Uint64
	// committedRows is the copied rows the engine has made durable
	// (Offset.Rows of the last Committed; the start offset's at first).
	committedRows atomic.Int64
	// st is the offset after everything queued; only the hub's session
	// goroutine uses it once the reader is registered.
	st Offset
}

// splitKey is a split's key in the hub: its table's and its own name.
func splitKey(relation, split string) string { return relation + "\x00" + split }

// allKeys are the hub keys of every split of r's table (those other
// actors read too, for a Ranged table).
func (r *Reader) allKeys() []string {
	names := r.src.splits()
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = splitKey(r.name, n)
	}
	return keys
}

func (r *Reader) split(name string) *rsplit {
	for _, sp := range r.splits {
		if sp.name == name {
			return sp
		}
	}
	return nil
}

// segment is rows queued for Read, with the offset of its split after any
// prefix; or, with truncate, an upstream TRUNCATE (no rows).
type segment struct {
	sp       *rsplit
	truncate bool
	// in (with truncate): the rows the TRUNCATE deletes are those of a
	// Ranged table's range (nil: all).
	in   func(row []types.Datum) bool
	ops  []types.Op
	rows [][]types.Datum
	// copy: rows copied in key order, rows at of raw as the upstream sent
	// them (decoded by Read with dec; ops and rows are empty); after k
	// rows the offset is base with PK = the key of the k-th and Rows + k.
	// Otherwise (changes, markers) the offset after any prefix is base.
	copy bool
	raw  *rawRows
	at   []int32
	dec  *binding
	// par: the rows are a parallel copy's, of range split
	// (Offset.Splits): after k rows, that range's PK and Rows move.
	par   bool
	split int
	// stale: copied rows whose keys the table may hold already (changes
	// applied before a restart in the middle of their chunk): written with
	// a lookup, not as fresh inserts.
	stale bool
	base  Offset
	pos   int // rows taken by Read
}

// marker: a segment of no rows that only moves the offset.
func (s *segment) marker() bool { return s.len() == 0 && !s.truncate }

// len is the segment's rows.
func (s *segment) len() int { return len(s.rows) + len(s.at) }

// add adds row i of raw to a copy's segment.
func (s *segment) add(raw *rawRows, i int) {
	s.raw = raw
	s.at = append(s.at, int32(i))
}

func (s *segment) after(k int) Offset {
	if !s.copy || k == 0 {
		return s.base
	}
	o := s.base
	o.Rows += int64(k)
	pk := rowPK(s.dec, s.raw.row(int(s.at[k-1])))
	if s.par {
		return o.withSplit(s.split, func(ss *SplitState) {
			ss.PK = pk
			ss.Rows += int64(k)
		})
	}
	o.PK = pk
	return o
}

func newReader(s *Source, splits []connector.SplitOffset, env connector.ReaderEnv) (*Reader, error) {
	r := &Reader{
		src: s, name: s.spec.Relation, env: env, trbl: &connector.TroubleLog{Fn: env.Trouble},
		closed: make(chan struct{}), ready: make(chan struct{}, 1), space: make(chan struct{}, 1),
	}
	for _, so := range splits {
		start, err := DecodeOffset(so.Offset)
		if err != nil {
			return nil, fmt.Errorf("postgres-cdc %s split %s: %w", s.spec.Relation, so.Split, err)
		}
		if i, ok := s.rangeOf(so.Split); ok && len(start.Splits) == 0 {
			start.Splits = []SplitState{rangeState(s.cfg.Bounds, i)} // the range's copy begins
		}
		sp := &rsplit{name: so.Split, key: splitKey(r.name, so.Split), st: start}
		sp.committed.Store(start.LSN)
		sp.committedRows.Store(start.Rows)
		r.splits = append(r.splits, sp)
		publishProgress(env, s.spec.Relation, sp.name, start)
	}
	r.copyRate.Store(-1)
	r.hub = hubFor(s.cfg)
	if err := r.hub.register(r, s.cfg.Siblings); err != nil {
		return nil, err
	}
	return r, nil
}

// Read implements connector.SplitReader: rows of one split from the
// queued segments, up to limit (every prefix of the queue ends at a valid
// offset).
func (r *Reader) Read(dst *types.Chunk, limit int) (connector.ReadResult, error) {
	if limit <= 0 {
		return connector.ReadResult{}, nil
	}
	n := 0
	var o Offset
	var sp *rsplit
	took := false
	fresh := false // the rows taken are a copy's (ReadResult.Fresh)
	for n < limit {
		if r.cur == nil {
			if r.cur = r.pop(); r.cur == nil {
				break
			}
		}
		s := r.cur
		if took && s.sp != sp {
			break // one split per result
		}
		if s.len() > s.pos {
			// Copied rows and changes are not mixed in one result: a
			// copy's rows are written without a lookup.
			if n > 0 && (s.copy && !s.stale) != fresh {
				break
			}
			fresh = s.copy && !s.stale
		}
		if s.truncate {
			if took {
				break // the rows before it first
			}
			r.cur = nil
			if r.queued() {
				signal(r.ready)
			}
			return connector.ReadResult{Split: s.sp.name, Offset: EncodeOffset(s.base), Next: s.base.Rows, Truncate: true, TruncateIn: s.in}, nil
		}
		k := min(limit-n, s.len()-s.pos)
		if s.raw != nil {
			n += r.decode(dst, s, k)
		} else {
			for i := s.pos; i < s.pos+k; i++ {
				dst.AppendRowOp(s.ops[i], s.rows[i])
				s.rows[i] = nil
			}
			n += k
		}
		s.pos += k
		o, took, sp = s.after(s.pos), true, s.sp
		if s.pos == s.len() {
			r.cur = nil
		}
	}
	if !took {
		return connector.ReadResult{}, nil
	}
	if r.cur != nil || r.queued() {
		signal(r.ready)
	}
	return connector.ReadResult{Split: sp.name, Rows: n, Offset: EncodeOffset(o), Next: o.Rows, Fresh: fresh && n > 0}, nil
}

// Committed implements connector.OffsetCommitter: the upstream may free
// the WAL below the offset's LSN once every split of the slot's tables has
// committed it; rw_cdc_progress shows the offset.
func (r *Reader) Committed(split string, offset []byte) {
	o, err := DecodeOffset(offset)
	sp := r.split(split)
	if err != nil || sp == nil {
		return
	}
	for {
		old := sp.committed.Load()
		if o.LSN <= old || sp.committed.CompareAndSwap(old, o.LSN) {
			break
		}
	}
	for {
		old := sp.committedRows.Load()
		if o.Rows <= old || sp.committedRows.CompareAndSwap(old, o.Rows) {
			break
		}
	}
	publishProgress(r.env, r.src.spec.Relation, split, o)
}

// LogLag implements connector.LogLagger: the upstream's WAL end as the
// replication stream last reported it, less the LSN the engine committed.
func (r *Reader) LogLag(split string) (int64, bool) {
	sp := r.split(split)
	if sp == nil {
		return 0, false
	}
	end, committed := r.hub.walEnd.Load(), sp.committed.Load()
	if end == 0 || committed == 0 {
		return 0, false
	}
	return int64(end - min(committed, end)), true
}

// SetBackfillRate implements connector.BackfillRater: the copy reads at
// most rowsPerSecond rows a second (< 0 unlimited, 0 paused) while the
// change stream goes on unthrottled (for the keys copied so far).
func (r *Reader) SetBackfillRate(rowsPerSecond int64) { r.copyRate.Store(rowsPerSecond) }

// Ready implements connector.SplitReader.
func (r *Reader) Ready() <-chan struct{} { return r.ready }

// Close implements connector.SplitReader: the reader leaves its hub (whose
// goroutine and connections stop with the last reader).
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		r.trbl.Close()
		close(r.closed)
		r.hub.unregister(r)
	})
	return nil
}

// decode appends the next k copied rows of s to dst and returns how many
// it appended (a row whose key does not parse is skipped, reported).
func (r *Reader) decode(dst *types.Chunk, s *segment, k int) int {
	if len(r.row) != len(s.dec.types) {
		r.row = make([]types.Datum, len(s.dec.types))
	}
	n := 0
	position := int64(-1)
	bad := func(err error) {
		if r.env.BadMessage != nil {
			r.env.BadMessage(s.sp.name, position, err)
		}
	}
	for i := s.pos; i < s.pos+k; i++ {
		if !s.par {
			position = s.base.Rows + int64(i)
		}
		r.raw = s.raw.rowInto(r.raw, int(s.at[i]))
		if s.dec.decodeRow(r.raw, r.row, bad) {
			dst.AppendRowOp(types.OpInsert, r.row)
			n++
		}
	}
	return n
}

func (r *Reader) pop() *segment {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.mu.segs) == 0 {
		return nil
	}
	s := r.mu.segs[0]
	r.mu.segs[0] = nil
	r.mu.segs = r.mu.segs[1:]
	r.mu.rows -= max(s.len(), 1)
	signal(r.space)
	return s
}

func (r *Reader) queued() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.segs) > 0
}

// errRestart ends a session that must read the stream again from an older
// LSN (a table joined whose offset is behind the stream).
var errRestart = errors.New("postgres-cdc: restart the stream for a table that joined")

// session is one connection to the upstream for a hub: the stream, routed
// to the tables, and the copies of those still copying, round robin.
type session struct {
	h    *hub
	cfg  Config // the connection and the slot
	conn *pgconn.PgConn
	repl *pgconn.PgConn
	// tables by split key (a table's split, or a key range of a Ranged
	// table, each with its own offset), their order (round robin) and by
	// relation id (a Ranged table's ranges in range order).
	tables map[string]*table
	order  []*table
	next   int
	byRel  map[uint32][]*table
	// rels are the stream's relations as last described (pgoutput
	// describes a relation once per session, before its first change,
	// whether or not a table reads it yet).
	rels map[uint32]*pglogrepl.RelationMessage
	// retryAt: when to try again to open tables that failed to open.
	retryAt time.Time
	// The transaction being read.
	inTxn bool
	// The table whose chunk's watermark is awaited (nil outside a copy).
	copying *table
	// Watermarks.
	nonce string
	seq   int
	// pos: every transaction committed at or below it has been read.
	pos uint64
	// seen: the transactions read lately (a copy's snapshot must see them).
	seen seenXids
	// The parallel copies' chunks in flight, by watermark; kick: one
	// finished (the pump returns to dispatch the range's next).
	wms  map[string]*psplit
	kick bool
	// pools are the parallel copies' workers, by reader (parallel.go).
	pools map[*Reader]*pool
	// The parallel copies' workers: stopped with the session; a failure
	// ends it.
	wctx    context.Context
	wcancel context.CancelFunc
	wg      sync.WaitGroup
	werrs   chan error
	// Status.
	sentStatus uint64
	lastStatus time.Time
}

// table is one split of a table in a session: the table's one split, or
// one key range of a Ranged table (whose ranges share the relation's
// changes, each taking the keys in its range).
type table struct {
	s   *session
	r   *Reader
	sp  *rsplit
	cfg Config // the table's (schema, table, chunk size)
	b   *binding
	oid uint32
	// The relation as the stream describes it.
	relID   uint32
	relCols []int // per upstream column in the stream: its Tributary column (-1: none)
	// The transaction being read.
	skipTxn, txnRows bool
	// par is the parallel copy (backfill.parallelism; nil: one range).
	par *pcopy
	// The chunk whose watermark is awaited (nil outside the copy).
	win        *window
	lastMarker time.Time
	pkBuf      []types.Datum
	// The copy's rate limit (a copy in one range).
	lim limiter
	// chunk: the rows of the copy's next chunk (0: Config.ChunkRows);
	// blocked: the reader's queue was full since the chunk size was last
	// chosen.
	chunk   int
	blocked bool
	// lastEstimate is when the upstream's row estimate was last asked for.
	lastEstimate time.Time
	// copied caches the parsed key of st.PK (copiedKey).
	copied    []types.Datum
	copiedFor []string
	// stale: when the table joined, its offset was in the middle of a
	// chunk (Offset.Win): copied rows up to this key (any, with staleAll)
	// may be held already.
	stale     []types.Datum
	staleText []string
	staleAll  bool
}

// window is the key range of the chunk being copied: changes read before
// its watermark are applied for keys at or below hi, and make a key above
// lo dirty (its chunk row is dropped); a TRUNCATE makes every key dirty.
type window struct {
	lo, hi    []types.Datum // nil lo: no key copied before; nil hi: the last chunk
	dirty     map[string]bool
	truncated bool
	wm        string
	seen      bool
}

func (s *session) run(ctx context.Context) error {
	var err error
	if s.conn, err = s.cfg.connect(ctx, false); err != nil {
		return err
	}
	defer s.conn.Close(context.Background())
	s.tables, s.byRel, s.rels = map[string]*table{}, map[uint32][]*table{}, map[uint32]*pglogrepl.RelationMessage{}
	s.wms, s.werrs, s.pools = map[string]*psplit{}, make(chan error, 1), map[*Reader]*pool{}
	s.wctx, s.wcancel = context.WithCancel(ctx)
	defer s.stopWorkers()
	rs, _ := s.h.readers(true)
	described := map[string]*opened{}
	for _, r := range rs {
		for _, sp := range r.splits {
			if err := s.open(ctx, r, sp, false, described); err != nil {
				return err
			}
		}
	}
	s.sortOrder()
	// The stream starts at the least LSN a split needs (0: the slot's
	// confirmed LSN, at or below every split's committed one).
	var start uint64
	fromSlot := false
	for _, t := range s.tables {
		if l := t.sp.st.LSN; l > 0 && (start == 0 || l < start) {
			start = l
		}
		fromSlot = fromSlot || t.sp.st.fromSlot()
	}
	if fromSlot {
		start = 0
	}
	s.pos = start
	if s.repl, err = s.cfg.connect(ctx, true); err != nil {
		return err
	}
	defer s.repl.Close(context.Background())
	args := []string{"proto_version '1'", "publication_names " + quoteLiteral(s.cfg.Publication), "messages 'true'"}
	if err := pglogrepl.StartReplication(ctx, s.repl, s.cfg.Slot, pglogrepl.LSN(start), pglogrepl.StartReplicationOptions{PluginArgs: args}); err != nil {
		return fmt.Errorf("start replication from slot %q: %w", s.cfg.Slot, err)
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:]) // never fails
	s.nonce = hex.EncodeToString(nonce[:])
	for {
		if err := s.sync(ctx); err != nil {
			return err
		}
		if err := s.workerErr(); err != nil {
			return err
		}
		pwait, err := s.dispatch(ctx, time.Now())
		if err != nil {
			return err
		}
		t, n, wait := s.nextCopy(ctx, time.Now())
		if t != nil {
			if err := t.copyChunk(ctx, n); err != nil {
				return err
			}
			continue
		}
		if wait < 0 || pwait >= 0 && pwait < wait {
			wait = pwait
		}
		if wait < 0 {
			wait = time.Second
		}
		s.kick = false
		done := func() bool { return !s.inTxn && s.h.changed() || s.kick || len(s.werrs) > 0 }
		if err := s.pump(ctx, done, time.Now().Add(wait)); err != nil {
			return err
		}
	}
}

// opened is an upstream table as a session described and bound it (once
// per sync for the splits of one table).
type opened struct {
	up  *upstreamTable
	b   *binding
	err error
}

// open adds split sp of r's table to the session: the upstream table as
// it is now, bound to the Tributary table's columns (described holds what
// this sync described already). A table whose binding fails stays out
// (reported; tried again later): the others go on. behind: the split's
// offset is behind the stream, which must restart (errRestart) once the
// table binds.
func (s *session) open(ctx context.Context, r *Reader, sp *rsplit, behind bool, described map[string]*opened) error {
	d := described[r.name]
	if d == nil {
		d = &opened{}
		d.up, d.err = describe(ctx, s.conn, r.src.cfg)
		if d.err == nil {
			d.b, d.err = bind(r.src.spec, r.src.cfg, d.up)
		}
		described[r.name] = d
	}
	if err := d.err; err != nil {
		if !errors.Is(err, errUpstream) && !isTableError(err) {
			return err
		}
		r.trbl.Report(fmt.Errorf("postgres-cdc %s: the upstream table changed: %w; trying again", r.src.spec.Relation, err))
		s.retryAt = time.Now().Add(estimateEvery)
		return nil
	}
	if behind {
		return errRestart
	}
	t := &table{s: s, r: r, sp: sp, cfg: r.src.cfg, b: d.b, oid: d.up.oid, staleAll: sp.st.WinAll}
	if parallel(t.cfg, sp.st) {
		t.newPcopy()
	}
	if sp.st.Win != nil && !sp.st.WinAll {
		t.staleText = sp.st.Win
		if t.stale = t.parseKey(sp.st.Win); t.stale == nil {
			t.staleAll = true // cannot tell: take every row as held
		}
	}
	for _, m := range s.rels {
		if m.Namespace == t.cfg.Schema && m.RelationName == t.cfg.Table {
			if err := t.relation(m); err != nil {
				return err
			}
		}
	}
	s.tables[sp.key] = t
	s.order = append(s.order, t)
	return nil
}

// sortOrder keeps the tables in split key order (open appends).
func (s *session) sortOrder() {
	slices.SortFunc(s.order, func(a, b *table) int { return strings.Compare(a.sp.key, b.sp.key) })
	s.order = slices.CompactFunc(s.order, func(a, b *table) bool { return a == b })
}

// leave takes t out of the session: its changes are no longer read.
func (s *session) leave(t *table) {
	delete(s.tables, t.sp.key)
	if t.relID != 0 {
		s.byRel[t.relID] = slices.DeleteFunc(s.byRel[t.relID], func(x *table) bool { return x == t })
		if len(s.byRel[t.relID]) == 0 {
			delete(s.byRel, t.relID)
		}
	}
	s.releasePool(t.r)
}

func isTableError(err error) bool {
	for _, k := range []error{types.ErrUndefinedTable, types.ErrUndefinedColumn, types.ErrDatatypeMismatch, types.ErrInvalidTableDefinition, types.ErrUnsupported} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// sync takes the hub's readers as they are now: tables that joined are
// opened (a table whose offset is behind the stream restarts it), tables
// that left are no longer read (their changes are ignored).
func (s *session) sync(ctx context.Context) error {
	if s.inTxn {
		return nil // a table joins between transactions: it skips or takes each whole
	}
	retry := !s.retryAt.IsZero() && time.Now().After(s.retryAt)
	rs, ok := s.h.readers(retry)
	if !ok {
		return nil
	}
	s.retryAt = time.Time{}
	now := map[string]*Reader{}
	for _, r := range rs {
		for _, sp := range r.splits {
			now[sp.key] = r
		}
	}
	for key, t := range s.tables {
		if now[key] != t.r {
			s.leave(t)
		}
	}
	s.order = s.order[:0]
	described := map[string]*opened{}
	for _, r := range rs {
		for _, sp := range r.splits {
			if t := s.tables[sp.key]; t != nil {
				s.order = append(s.order, t)
				continue
			}
			behind := sp.st.LSN > 0 && sp.st.LSN < s.pos || sp.st.fromSlot() && s.pos > 0
			if err := s.open(ctx, r, sp, behind, described); err != nil {
				return err
			}
		}
	}
	s.sortOrder()
	return nil
}

// nextCopy picks the next table (round robin) whose copy may read a chunk
// now and how many rows; else how long until one may (-1: none copies).
func (s *session) nextCopy(ctx context.Context, now time.Time) (*table, int, time.Duration) {
	wait := time.Duration(-1)
	for i := range s.order {
		k := (s.next + i) % len(s.order)
		t := s.order[k]
		if t.sp.st.Copied || t.par != nil {
			continue
		}
		t.estimate(ctx)
		room := t.readAheadRoom()
		if room < minChunkRoom {
			// What a crash would make it read again is at its bound: wait
			// for the engine to commit.
			if wait < 0 || readAheadWait < wait {
				wait = readAheadWait
			}
			continue
		}
		n, w := t.lim.allowance(t.r.copyRate.Load(), min(t.chunkRows(), room), now)
		if n > 0 {
			s.next = k + 1
			return t, n, 0
		}
		if wait < 0 || w < wait {
			wait = w
		}
	}
	return nil, 0, wait
}

// readAheadRoom is how many more rows the table's copy may read before
// the engine commits what it read (minReadAhead, readAheadShare).
func (t *table) readAheadRoom() int {
	limit := max(int64(minReadAhead), t.sp.st.Estimate/readAheadShare)
	ahead := t.sp.st.Rows - t.sp.committedRows.Load()
	return int(max(limit-ahead, 0))
}

// estimate reads the upstream's row estimate (pg_class.reltuples, summed
// over a partitioned table's partitions) when the offset has none yet, at
// most every estimateEvery; it stays unknown (0) while the table has never
// been analyzed. The offsets carry it from then on.
func (t *table) estimate(ctx context.Context) {
	st := &t.sp.st
	if st.Estimate > 0 || st.Copied || time.Since(t.lastEstimate) < estimateEvery {
		return
	}
	t.lastEstimate = time.Now()
	if n, ok := estimateRows(ctx, t.s.conn, t.oid); ok {
		if t.cfg.Ranged {
			// A range's share: the ranges are quantiles, about equal.
			k := int64(len(t.cfg.Bounds) + 1)
			n = (n + k - 1) / k
		}
		st.Estimate = n
		_ = t.marker(ctx) // shown at once, even while the copy is paused (fails only when ctx ends)
	}
}

// estimateRows is the upstream's row estimate of table oid
// (pg_class.reltuples, summed over a partitioned table's partitions); ok
// false while it is unknown (never analyzed) or cannot be read.
func estimateRows(ctx context.Context, conn *pgconn.PgConn, oid uint32) (int64, bool) {
	rows, err := query(ctx, conn, fmt.Sprintf(`SELECT CASE WHEN min(reltuples) < 0 THEN -1 ELSE sum(reltuples)::int8 END FROM pg_class
		WHERE (oid = %[1]d AND relkind = 'r') OR oid IN (SELECT relid FROM pg_partition_tree(%[1]d::oid::regclass) WHERE isleaf)`, oid))
	if err != nil || len(rows) != 1 {
		return 0, false // unknown: the copy itself reports what is wrong with the connection
	}
	n, err := strconv.ParseInt(rows[0][0], 10, 64)
	return n, err == nil && n > 0
}

// limiter is a copy's allowance under the backfill rate.
type limiter struct {
	tokens float64
	last   time.Time
}

// allowance returns the rows a copy may read now under rate (rows per
// second, < 0 unlimited, 0 paused): a chunk of a quarter second's rows,
// chunk at most, or 0 and how long until it may. Meanwhile the session
// follows the stream, so changes to the keys copied so far keep flowing
// at any copy rate, 0 included.
func (l *limiter) allowance(rate int64, chunk int, now time.Time) (int, time.Duration) {
	if rate < 0 {
		l.tokens, l.last = 0, time.Time{}
		return chunk, 0
	}
	n := int(min(int64(chunk), max(rate/4, 1)))
	if !l.last.IsZero() {
		l.tokens = min(float64(n), l.tokens+now.Sub(l.last).Seconds()*float64(rate))
	}
	l.last = now
	if rate > 0 && l.tokens >= float64(n) {
		l.tokens -= float64(n)
		return n, 0
	}
	wait := throttleWait
	if rate > 0 {
		wait = min(wait, max(time.Duration((float64(n)-l.tokens)/float64(rate)*float64(time.Second)), time.Millisecond))
	}
	return 0, wait
}

// copyChunk copies the table's next chunk of up to n rows: select it,
// write its watermark, read the stream up to the watermark (every table's
// changes), then queue the chunk's rows whose keys no change touched.
func (t *table) copyChunk(ctx context.Context, n int) error {
	s, b, st := t.s, t.b, &t.sp.st
	var sql strings.Builder
	sql.WriteString("SELECT ")
	for i, name := range b.names {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString(quoteIdent(name))
	}
	sql.WriteString(" FROM " + t.cfg.QualifiedTable())
	keyCols := make([]string, len(b.pk))
	for i, k := range b.pk {
		keyCols[i] = quoteIdent(b.names[k])
		if b.collate[i] {
			keyCols[i] += ` COLLATE "C"`
		}
	}
	var params [][]byte
	if st.PK != nil {
		ph := make([]string, len(b.pk))
		for i := range b.pk {
			ph[i] = fmt.Sprintf("$%d", i+1)
			params = append(params, []byte(st.PK[i]))
		}
		fmt.Fprintf(&sql, " WHERE (%s) > (%s)", strings.Join(keyCols, ", "), strings.Join(ph, ", "))
	}
	fmt.Fprintf(&sql, " ORDER BY %s LIMIT %d", strings.Join(keyCols, ", "), n)
	// The watermark: committed right after the select (in the same round
	// trip), so every change the select did not see commits after the
	// changes it did.
	s.seq++
	wm := fmt.Sprintf("%s/%s/%d", s.cfg.Slot, s.nonce, s.seq)
	emit := "COMMIT; SELECT pg_logical_emit_message(true, " + quoteLiteral(watermarkPrefix) + ", " + quoteLiteral(wm) + ")"
	rows, err := selectVisible(ctx, s.conn, sql.String(), params, b.resultFormats(), n, s.seen.list(), emit)
	if err != nil {
		return fmt.Errorf("copy %s: %w", t.cfg.QualifiedTable(), err)
	}
	count := rows.len()
	if count == n && n >= t.chunkRows() {
		t.chunk, t.blocked = nextChunk(t.cfg, n, len(rows.data), t.blocked), false
	}
	w := &window{lo: t.parseKey(st.PK), dirty: map[string]bool{}, wm: wm}
	if count == n {
		w.hi = t.rowKey(rows.row(count - 1))
		if w.hi == nil {
			return fmt.Errorf("copy %s: a primary key value that does not parse", t.cfg.QualifiedTable())
		}
	}
	// Until its rows are queued, the offsets say that keys up to the
	// chunk's end may be in the table (a resumed copy then looks them up).
	switch {
	case t.staleAll || w.hi == nil:
		st.Win, st.WinAll = nil, true
	case t.stale != nil && compareKeys(b.pkTypes, t.stale, w.hi) > 0:
		st.Win = t.staleText
	default:
		st.Win = rowPK(b, rows.row(count-1))
	}
	t.win, s.copying = w, t
	wctx, cancel := context.WithTimeout(ctx, watermarkTimeout)
	err = s.pump(wctx, func() bool { return w.seen }, time.Time{})
	cancel()
	t.win, s.copying = nil, nil
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return fmt.Errorf("the chunk's watermark did not arrive in the change stream within %v", watermarkTimeout)
		}
		return err
	}
	if s.tables[t.sp.key] != t {
		return nil // the table left while its chunk was read
	}
	// Queue the chunk's untouched rows, in key order: those whose keys the
	// table may hold from before a restart (stale) first, then the fresh.
	seg := &segment{copy: true, stale: t.staleAll, base: *st, dec: b}
	last := st.PK
	if count > 0 {
		last = rowPK(b, rows.row(count-1))
	}
	var raw [][]byte
	for i := range count {
		raw = rows.rowInto(raw, i)
		if w.truncated || len(w.dirty) > 0 && w.dirty[keyString(rowPK(b, raw))] {
			continue
		}
		stale := t.staleAll
		if !stale && t.stale != nil {
			k := t.rowKey(raw)
			stale = k == nil || compareKeys(b.pkTypes, k, t.stale) <= 0 // a key that does not parse: Read skips the row
		}
		if stale != seg.stale {
			if err := t.queueCopy(ctx, seg); err != nil {
				return err
			}
			seg = &segment{copy: true, stale: stale, base: *st, dec: b}
		}
		seg.add(rows, i)
	}
	if err := t.queueCopy(ctx, seg); err != nil {
		return err
	}
	st.PK = last
	st.Win, st.WinAll = nil, false
	switch {
	case count < n:
		st.Copied = true
		t.stale, t.staleText, t.staleAll = nil, nil, false
	case t.staleAll || t.stale != nil && compareKeys(b.pkTypes, t.stale, t.parseKey(last)) > 0:
		st.Win, st.WinAll = t.staleText, t.staleAll // the stale keys go on past this chunk
	default:
		t.stale, t.staleText = nil, nil
	}
	return t.marker(ctx)
}

// chunkRows is the rows of the copy's next chunk.
func (t *table) chunkRows() int {
	if t.chunk > 0 {
		return t.chunk
	}
	return t.cfg.ChunkRows
}

// queueCopy queues a segment of copied rows (none: nothing) and moves the
// table's offset past them.
func (t *table) queueCopy(ctx context.Context, seg *segment) error {
	if seg.len() == 0 {
		return nil
	}
	if err := t.enqueue(ctx, seg); err != nil {
		return err
	}
	t.sp.st = seg.after(seg.len())
	return nil
}

// rowPK is a copied row's key in text, in key order.
func rowPK(b *binding, raw [][]byte) []string {
	pk := make([]string, len(b.pk))
	for i, k := range b.pk {
		pk[i] = b.keyText(k, raw[k])
	}
	return pk
}

// pump reads the stream until done reports true or until passes (nil and
// zero: until ctx ends or the connection fails), answering keepalives and
// telling the upstream what the engine has committed.
func (s *session) pump(ctx context.Context, done func() bool, until time.Time) error {
	for done == nil || !done() {
		wait := time.Second
		if !until.IsZero() {
			left := time.Until(until)
			if left <= 0 {
				return nil
			}
			wait = min(wait, left)
		}
		if err := s.status(ctx, false); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, wait)
		msg, err := s.repl.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				if err := s.idle(ctx, 0); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("replication stream: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return fmt.Errorf("replication stream: %w", err)
				}
				if ka.ReplyRequested {
					if err := s.status(ctx, true); err != nil {
						return err
					}
				}
				s.h.walEnd.Store(uint64(ka.ServerWALEnd))
				if err := s.idle(ctx, uint64(ka.ServerWALEnd)); err != nil {
					return err
				}
			case pglogrepl.XLogDataByteID:
				x, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return fmt.Errorf("replication stream: %w", err)
				}
				s.h.walEnd.Store(uint64(x.ServerWALEnd))
				if err := s.message(ctx, x.WALData); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("replication stream: %w", pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyDone:
			return errors.New("replication stream: the upstream ended it")
		}
	}
	return nil
}

// status tells the upstream the LSN every table of the slot has committed:
// every statusEvery, when it moved (at most once a second) or when asked
// (now). 0 (not known for every table yet) confirms nothing.
func (s *session) status(ctx context.Context, now bool) error {
	since := time.Since(s.lastStatus)
	if !now && since < time.Second {
		return nil
	}
	lsn := s.h.confirmed()
	if !now && since < statusEvery && lsn == s.sentStatus {
		return nil
	}
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: pglogrepl.LSN(lsn)})
	if err != nil {
		return fmt.Errorf("replication stream: send status: %w", err)
	}
	s.sentStatus, s.lastStatus = lsn, time.Now()
	return nil
}

// idle moves the tables' LSNs to walEnd (the upstream's position, every
// commit below it read; 0: unknown) when no transaction is open, at most
// once per markerEvery per table, so a quiet table's slot still advances.
func (s *session) idle(ctx context.Context, walEnd uint64) error {
	if s.inTxn {
		return nil
	}
	s.pos = max(s.pos, walEnd)
	for _, t := range s.order {
		if walEnd <= t.sp.st.LSN || time.Since(t.lastMarker) < markerEvery {
			continue
		}
		t.sp.st.LSN = walEnd
		if err := t.marker(ctx); err != nil {
			return err
		}
	}
	return nil
}

// marker queues the table's current offset with no rows.
func (t *table) marker(ctx context.Context) error {
	t.lastMarker = time.Now()
	return t.enqueue(ctx, &segment{base: t.sp.st})
}

// message handles one pgoutput message.
func (s *session) message(ctx context.Context, data []byte) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("replication stream: %w", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		s.rels[m.RelationID] = m
		for _, t := range s.order {
			if m.Namespace == t.cfg.Schema && m.RelationName == t.cfg.Table {
				if err := t.relation(m); err != nil {
					return err
				}
			}
		}
	case *pglogrepl.BeginMessage:
		s.inTxn = true
		s.seen.add(m.Xid)
		for _, t := range s.order {
			t.txnRows = false
			t.skipTxn = uint64(m.FinalLSN) <= t.sp.st.LSN
		}
	case *pglogrepl.CommitMessage:
		s.inTxn = false
		lsn := uint64(m.CommitLSN)
		s.pos = max(s.pos, lsn)
		for _, t := range s.order {
			if t.skipTxn {
				continue
			}
			if lsn > t.sp.st.LSN {
				t.sp.st.LSN = lsn
			}
			if t.txnRows || time.Since(t.lastMarker) >= markerEvery {
				if err := t.marker(ctx); err != nil {
					return err
				}
			}
		}
	case *pglogrepl.LogicalDecodingMessage:
		if sp := s.wms[string(m.Content)]; m.Prefix == watermarkPrefix && sp != nil {
			delete(s.wms, string(m.Content))
			return s.finishChunk(ctx, sp)
		}
		if t := s.copying; m.Prefix == watermarkPrefix && t != nil && t.win != nil && string(m.Content) == t.win.wm {
			t.win.seen = true
		}
	case *pglogrepl.InsertMessage:
		if ts := s.byRel[m.RelationID]; ts != nil {
			return s.change(ctx, ts, nil, m.Tuple)
		}
	case *pglogrepl.UpdateMessage:
		if ts := s.byRel[m.RelationID]; ts != nil {
			return s.change(ctx, ts, m.OldTuple, m.NewTuple)
		}
	case *pglogrepl.DeleteMessage:
		if ts := s.byRel[m.RelationID]; ts != nil {
			return s.change(ctx, ts, m.OldTuple, nil)
		}
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			for _, t := range s.byRel[id] {
				if t.skipTxn {
					continue
				}
				if err := t.truncate(ctx); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// relation takes the stream's description of the table.
func (t *table) relation(m *pglogrepl.RelationMessage) error {
	byRel := t.s.byRel
	if t.relID != 0 {
		byRel[t.relID] = slices.DeleteFunc(byRel[t.relID], func(x *table) bool { return x == t })
		if len(byRel[t.relID]) == 0 {
			delete(byRel, t.relID)
		}
	}
	t.relID = m.RelationID
	if !slices.Contains(byRel[t.relID], t) {
		byRel[t.relID] = append(byRel[t.relID], t)
		// A Ranged table's ranges in range order (route searches them).
		slices.SortFunc(byRel[t.relID], func(a, b *table) int { return strings.Compare(a.sp.key, b.sp.key) })
		slices.SortStableFunc(byRel[t.relID], func(a, b *table) int { return a.rangeIndex() - b.rangeIndex() })
	}
	t.relCols = make([]int, len(m.Columns))
	for i, c := range m.Columns {
		t.relCols[i] = -1
		for j, name := range t.b.names {
			if name == c.Name {
				t.relCols[i] = j
			}
		}
	}
	for j, name := range t.b.names {
		if indexInt(t.relCols, j) < 0 {
			return fmt.Errorf("upstream table %s no longer has column %q", t.cfg.QualifiedTable(), name)
		}
	}
	return nil
}

// truncate mirrors an upstream TRUNCATE: a segment by which the executor
// deletes every row of the table, in order with the changes around it. In
// the copy, the keys copied so far are among those rows; the chunk being
// copied is dropped whole (its select may predate the truncate; what the
// table holds after it comes from the stream, and from the chunks after).
// A restart after the epoch holding it committed resumes after its
// transaction's commit; before, it replays the transaction, TRUNCATE
// included: either way once.
func (t *table) truncate(ctx context.Context) error {
	if t.win != nil {
		t.win.truncated = true
	}
	if t.par != nil {
		t.ptruncate()
	}
	t.txnRows = true
	return t.enqueue(ctx, &segment{truncate: true, in: t.rangeRows(), base: t.sp.st})
}

// change applies one row change to the relation's tables ts (a Ranged
// table's ranges: each key goes to the range holding it, so every change
// of a key is queued, in stream order, by the one reader that owns the
// key's range, after that range's copied rows of the key): old is the old
// key or row (updates that changed the key, deletes), new the new row
// (inserts, updates). A range not in the session (its reader not
// registered) drops its keys' changes: when its reader comes, its offset
// is behind the stream, which restarts for it (sync).
func (s *session) change(ctx context.Context, ts []*table, old, new *pglogrepl.TupleData) error {
	type item struct {
		t   *table
		op  types.Op
		row []types.Datum
	}
	var items []item
	t0 := ts[0] // the ranges share the relation's columns: any one parses
	var newKey []types.Datum
	if new != nil {
		row, pk, ok, err := t0.tupleRow(ctx, new, old)
		if err != nil {
			return err
		}
		if ok {
			op := types.OpInsert
			if row == nil { // refetched and gone since
				op, row = types.OpDelete, t0.keyRow(pk)
			}
			newKey = t0.key(row)
			if t := route(ts, newKey); t != nil && !t.skipTxn && t.take(newKey, pk, op, row) {
				items = append(items, item{t, op, row})
			}
		}
	}
	if old != nil {
		row, pk, ok, err := t0.tupleRow(ctx, old, nil)
		if err != nil {
			return err
		}
		if ok && row == nil {
			row = t0.keyRow(pk)
		}
		if ok {
			oldKey := t0.key(row)
			if newKey == nil || compareKeys(t0.b.pkTypes, oldKey, newKey) != 0 {
				if t := route(ts, oldKey); t != nil && !t.skipTxn && t.take(oldKey, pk, types.OpDelete, row) {
					// The delete goes first: the new key may equal another's old.
					items = append([]item{{t, types.OpDelete, row}}, items...)
				}
			}
		}
	}
	for len(items) > 0 {
		t := items[0].t
		seg := &segment{base: t.sp.st}
		rest := items[:0]
		for _, it := range items {
			if it.t == t {
				seg.ops, seg.rows = append(seg.ops, it.op), append(seg.rows, it.row)
			} else {
				rest = append(rest, it)
			}
		}
		items = rest
		t.txnRows = true
		if err := t.enqueue(ctx, seg); err != nil {
			return err
		}
	}
	return nil
}

// route returns the table of ts that takes key: the one table of a
// relation, or the range of a Ranged table holding it (nil: that range is
// not in the session). ts are in range order.
func route(ts []*table, key []types.Datum) *table {
	if len(ts) == 1 && !ts[0].cfg.Ranged {
		return ts[0]
	}
	pt := ts[0].b.pkTypes[0]
	i := sort.Search(len(ts), func(i int) bool {
		hi := ts[i].par.splits[0].hi
		return hi == nil || types.Compare(pt, &key[0], hi) <= 0
	})
	if i == len(ts) {
		return nil
	}
	if lo := ts[i].par.splits[0].lo; lo != nil && types.Compare(pt, &key[0], lo) <= 0 {
		return nil
	}
	return ts[i]
}

// rangeIndex is a Ranged table's range's index (-1: not a range).
func (t *table) rangeIndex() int {
	if i, ok := t.r.src.rangeOf(t.sp.name); ok {
		return i
	}
	return -1
}

// rangeRows is the predicate of the rows in t's range (nil: t is not a
// range of a Ranged table, it holds every row).
func (t *table) rangeRows() func(row []types.Datum) bool {
	if !t.cfg.Ranged || t.par == nil {
		return nil
	}
	sp, col, pt := t.par.splits[0], t.b.pk[0], t.b.pkTypes[0]
	lo, hi := sp.lo, sp.hi
	return func(row []types.Datum) bool {
		k := &row[col]
		return (lo == nil || types.Compare(pt, k, lo) > 0) && (hi == nil || types.Compare(pt, k, hi) <= 0)
	}
}

// take decides whether a change (op, row) of key applies now; a key in the
// awaited chunk's range becomes dirty.
func (t *table) take(key []types.Datum, pk []string, op types.Op, row []types.Datum) bool {
	if t.sp.st.Copied {
		return true
	}
	if t.par != nil {
		return t.ptake(key, pk, op, row)
	}
	w := t.win
	if w == nil {
		// Between chunks (a throttled copy, another table's chunk): the keys copied so far.
		lo := t.copiedKey()
		return lo != nil && compareKeys(t.b.pkTypes, key, lo) <= 0
	}
	if w.lo != nil && compareKeys(t.b.pkTypes, key, w.lo) <= 0 {
		return true
	}
	if w.hi == nil || compareKeys(t.b.pkTypes, key, w.hi) <= 0 {
		w.dirty[keyString(pk)] = true
		return true
	}
	return false
}

// copiedKey is the last copied key, parsed (nil before the first).
func (t *table) copiedKey() []types.Datum {
	if !slices.Equal(t.copiedFor, t.sp.st.PK) {
		t.copied, t.copiedFor = t.parseKey(t.sp.st.PK), t.sp.st.PK
	}
	return t.copied
}

// tupleRow makes a Tributary row of a tuple, and its key's text forms;
// unchanged TOASTed values are taken from other (the old row, with REPLICA
// IDENTITY FULL) or fetched again from the upstream. ok is false when the
// row cannot be made (its key is missing or does not parse; reported).
func (t *table) tupleRow(ctx context.Context, tup, other *pglogrepl.TupleData) ([]types.Datum, []string, bool, error) {
	row := make([]types.Datum, len(t.b.types))
	for j := range row {
		row[j] = types.NullDatum
	}
	pk := make([]string, len(t.b.pk))
	keys := 0
	toasted := false
	for i, c := range tup.Columns {
		if i >= len(t.relCols) || t.relCols[i] < 0 {
			continue
		}
		j := t.relCols[i]
		if c.DataType == pglogrepl.TupleDataTypeToast {
			if other == nil || i >= len(other.Columns) || other.Columns[i].DataType != pglogrepl.TupleDataTypeText {
				toasted = true
				continue
			}
			c = other.Columns[i]
		}
		if c.DataType != pglogrepl.TupleDataTypeText {
			continue // NULL
		}
		d, err := types.ParseText(t.b.types[j], string(c.Data))
		if k := indexInt(t.b.pk, j); k >= 0 {
			if err != nil {
				t.bad(fmt.Errorf("a change's key column %q: %w; the change is skipped", t.b.names[j], err))
				return nil, nil, false, nil
			}
			pk[k] = string(c.Data)
			keys++
		}
		if err != nil {
			t.bad(fmt.Errorf("column %q: %w; set to NULL", t.b.names[j], err))
			continue
		}
		row[j] = d
	}
	if keys != len(pk) {
		t.bad(errors.New("a change without its key (is the upstream table's REPLICA IDENTITY its primary key or FULL?); the change is skipped"))
		return nil, nil, false, nil
	}
	if toasted {
		return t.refetch(ctx, row, pk)
	}
	return row, pk, true, nil
}

// refetch reads the row with key pk from the upstream now (a change whose
// TOASTed values were not sent): the newest version, which later changes
// of the key overwrite again; nil when the row is gone since.
func (t *table) refetch(ctx context.Context, row []types.Datum, pk []string) ([]types.Datum, []string, bool, error) {
	var sql strings.Builder
	sql.WriteString("SELECT ")
	for i, name := range t.b.names {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString(quoteIdent(name))
	}
	sql.WriteString(" FROM " + t.cfg.QualifiedTable() + " WHERE ")
	params := make([][]byte, len(pk))
	for i, k := range t.b.pk {
		if i > 0 {
			sql.WriteString(" AND ")
		}
		fmt.Fprintf(&sql, "%s = $%d", quoteIdent(t.b.names[k]), i+1)
		params[i] = []byte(pk[i])
	}
	res := t.s.conn.ExecParams(ctx, sql.String(), params, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, nil, false, fmt.Errorf("fetch a row whose TOASTed values the stream did not send: %w", res.Err)
	}
	if len(res.Rows) == 0 {
		return nil, pk, true, nil // gone since: the caller deletes the key
	}
	r, ok := t.parseRow(res.Rows[0], -1)
	return r, pk, ok, nil
}

func (t *table) isKey(j int) bool { return indexInt(t.b.pk, j) >= 0 }

// parseRow parses a copied row (text values in the binding's column
// order); a value that does not parse is NULL (reported), a key that does
// not parse skips the row (reported).
func (t *table) parseRow(raw [][]byte, position int64) ([]types.Datum, bool) {
	row := make([]types.Datum, len(t.b.types))
	for j, v := range raw {
		if v == nil {
			row[j] = types.NullDatum
			continue
		}
		d, err := types.ParseText(t.b.types[j], string(v))
		if err != nil {
			if t.isKey(j) {
				t.badAt(position, fmt.Errorf("key column %q: %w; the row is skipped", t.b.names[j], err))
				return nil, false
			}
			t.badAt(position, fmt.Errorf("column %q: %w; set to NULL", t.b.names[j], err))
			d = types.NullDatum
		}
		row[j] = d
	}
	return row, true
}

// key returns row's key values, in key order (a fresh slice).
func (t *table) key(row []types.Datum) []types.Datum {
	k := make([]types.Datum, len(t.b.pk))
	for i, j := range t.b.pk {
		k[i] = row[j]
	}
	return k
}

// keyRow is a row of NULLs but for key pk (a delete's row).
func (t *table) keyRow(pk []string) []types.Datum {
	row := make([]types.Datum, len(t.b.types))
	for j := range row {
		row[j] = types.NullDatum
	}
	for i, j := range t.b.pk {
		row[j], _ = types.ParseText(t.b.types[j], pk[i]) // parsed before
	}
	return row
}

// rowKey parses a copied row's key (nil when it does not parse).
func (t *table) rowKey(raw [][]byte) []types.Datum {
	return t.parseKey(rowPK(t.b, raw))
}

// parseKey parses key text forms (nil for nil or a key that does not parse).
func (t *table) parseKey(pk []string) []types.Datum {
	if pk == nil {
		return nil
	}
	k := make([]types.Datum, len(pk))
	for i, v := range pk {
		d, err := types.ParseText(t.b.pkTypes[i], v)
		if err != nil {
			return nil
		}
		k[i] = d
	}
	return k
}

func keyString(pk []string) string { return strings.Join(pk, "\x00") }

// compareKeys orders two keys as the copy query does (text columns
// bytewise: their collation is C, or the query orders them COLLATE "C").
func compareKeys(ts []types.T, a, b []types.Datum) int {
	for i := range a {
		if c := types.Compare(ts[i], &a[i], &b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func (t *table) bad(err error) { t.badAt(-1, err) }

func (t *table) badAt(position int64, err error) {
	if t.r.env.BadMessage != nil {
		t.r.env.BadMessage(t.sp.name, position, err)
	}
}

// enqueue queues seg, waiting while the queue is full (and telling the
// upstream where it stands meanwhile, so it keeps the connection); a
// marker never waits (it holds no row, and the copy's next select then
// runs while the engine takes the chunk before it).
func (t *table) enqueue(ctx context.Context, seg *segment) error {
	r := t.r
	seg.sp = t.sp
	tick := time.NewTicker(statusEvery / 2)
	defer tick.Stop()
	for {
		r.mu.Lock()
		if r.mu.rows < maxQueuedRows || seg.marker() {
			// Markers in a row: the last one says it all.
			if n := len(r.mu.segs); n > 0 && seg.marker() && r.mu.segs[n-1].marker() && r.mu.segs[n-1].sp == seg.sp {
				r.mu.segs[n-1] = seg
			} else {
				r.mu.segs = append(r.mu.segs, seg)
				r.mu.rows += max(seg.len(), 1)
			}
			r.mu.Unlock()
			signal(r.ready)
			return nil
		}
		r.mu.Unlock()
		t.blocked = true
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.closed:
			return nil // the table left: nobody reads its rows
		case <-r.space:
		case <-tick.C:
			if err := t.s.status(ctx, true); err != nil {
				return err
			}
		}
	}
}

func indexInt(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func containsUint32(xs []uint32, x uint32) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// signal wakes a waiter on ch (capacity 1) without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (r *Reader) splitByKey(key string) *rsplit {
	for _, sp := range r.splits {
		if sp.key == key {
			return sp
		}
	}
	return nil
}
