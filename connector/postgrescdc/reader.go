package postgrescdc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
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

// Reader reads the table's one split (connector.SplitReader): a goroutine
// holds a replication connection and a query connection, copies the table
// in primary-key chunks interleaved with the change stream and then
// follows the stream, queueing segments of rows with the offset after
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
	split  string
	env    connector.ReaderEnv
	trbl   *connector.TroubleLog
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{}
	space  chan struct{}
	// committed is the LSN the engine has made durable (Committed); sent
	// to the upstream as the slot's confirmed flush position.
	committed atomic.Uint64
	// copyRate is the copy's rate limit in rows per second (< 0
	// unlimited, 0 paused; SetBackfillRate): the stream is not limited.
	copyRate atomic.Int64

	closeOnce sync.Once

	mu struct {
		sync.Mutex
		segs []*segment
		rows int
	}

	cur *segment // Read's
}

// segment is rows queued for Read, with the offset after any prefix; or,
// with truncate, an upstream TRUNCATE (no rows).
type segment struct {
	truncate bool
	ops      []types.Op
	rows     [][]types.Datum
	// copy: rows copied in key order; after k rows the offset is base with
	// PK = pks[k-1] and Rows + k. Otherwise (changes, markers) the offset
	// after any prefix is base.
	copy bool
	pks  [][]string
	base Offset
	pos  int // rows taken by Read
}

// marker: a segment of no rows that only moves the offset.
func (s *segment) marker() bool { return len(s.rows) == 0 && !s.truncate }

func (s *segment) after(k int) Offset {
	if !s.copy || k == 0 {
		return s.base
	}
	o := s.base
	o.PK = s.pks[k-1]
	o.Rows += int64(k)
	return o
}

func newReader(s *Source, offset []byte, env connector.ReaderEnv) (*Reader, error) {
	start, err := DecodeOffset(offset)
	if err != nil {
		return nil, fmt.Errorf("postgres-cdc %s: %w", s.spec.Relation, err)
	}
	r := &Reader{
		src: s, split: s.split(), env: env, trbl: &connector.TroubleLog{Fn: env.Trouble},
		done: make(chan struct{}), ready: make(chan struct{}, 1), space: make(chan struct{}, 1),
	}
	r.committed.Store(start.LSN)
	r.copyRate.Store(-1)
	publishProgress(env, s.spec.Relation, r.split, start)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.run(ctx, start)
	return r, nil
}

// Read implements connector.SplitReader: rows from the queued segments, up
// to limit (every prefix of the queue ends at a valid offset).
func (r *Reader) Read(dst *types.Chunk, limit int) (connector.ReadResult, error) {
	if limit <= 0 {
		return connector.ReadResult{}, nil
	}
	n := 0
	var o Offset
	took := false
	fresh := false // the rows taken are a copy's (ReadResult.Fresh)
	for n < limit {
		if r.cur == nil {
			if r.cur = r.pop(); r.cur == nil {
				break
			}
		}
		s := r.cur
		if len(s.rows) > s.pos {
			// Copied rows and changes are not mixed in one result: a
			// copy's rows are written without a lookup.
			if n > 0 && s.copy != fresh {
				break
			}
			fresh = s.copy
		}
		if s.truncate {
			if took {
				break // the rows before it first
			}
			r.cur = nil
			if r.queued() {
				signal(r.ready)
			}
			return connector.ReadResult{Split: r.split, Offset: EncodeOffset(s.base), Next: s.base.Rows, Truncate: true}, nil
		}
		k := min(limit-n, len(s.rows)-s.pos)
		for i := s.pos; i < s.pos+k; i++ {
			dst.AppendRowOp(s.ops[i], s.rows[i])
			s.rows[i] = nil
		}
		s.pos += k
		n += k
		o, took = s.after(s.pos), true
		if s.pos == len(s.rows) {
			r.cur = nil
		}
	}
	if !took {
		return connector.ReadResult{}, nil
	}
	if r.cur != nil || r.queued() {
		signal(r.ready)
	}
	return connector.ReadResult{Split: r.split, Rows: n, Offset: EncodeOffset(o), Next: o.Rows, Fresh: fresh && n > 0}, nil
}

// Committed implements connector.OffsetCommitter: the upstream may free
// the WAL below the offset's LSN; rw_cdc_progress shows the offset.
func (r *Reader) Committed(split string, offset []byte) {
	o, err := DecodeOffset(offset)
	if err != nil || split != r.split {
		return
	}
	for {
		old := r.committed.Load()
		if o.LSN <= old || r.committed.CompareAndSwap(old, o.LSN) {
			break
		}
	}
	publishProgress(r.env, r.src.spec.Relation, split, o)
}

// SetBackfillRate implements connector.BackfillRater: the copy reads at
// most rowsPerSecond rows a second (< 0 unlimited, 0 paused) while the
// change stream goes on unthrottled (for the keys copied so far).
func (r *Reader) SetBackfillRate(rowsPerSecond int64) { r.copyRate.Store(rowsPerSecond) }

// Ready implements connector.SplitReader.
func (r *Reader) Ready() <-chan struct{} { return r.ready }

// Close implements connector.SplitReader: it stops the goroutine and closes
// its connections.
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		r.trbl.Close()
		r.cancel()
		<-r.done
	})
	return nil
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
	r.mu.rows -= max(len(s.rows), 1)
	signal(r.space)
	return s
}

func (r *Reader) queued() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.segs) > 0
}

// run holds sessions with the upstream until ctx ends, retrying a failed
// one with a capped backoff. st is the offset after everything queued.
func (r *Reader) run(ctx context.Context, st Offset) {
	defer close(r.done)
	backoff := minBackoff
	for {
		s := &session{r: r, cfg: r.src.cfg, st: st}
		began := time.Now()
		err := s.run(ctx)
		st = s.st
		if ctx.Err() != nil {
			return
		}
		r.trbl.Report(fmt.Errorf("postgres-cdc %s: %w; retrying in %v", r.src.spec.Relation, err, backoff))
		if time.Since(began) > time.Minute {
			backoff = minBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// session is one connection to the upstream: the copy's remaining chunks,
// then the stream.
type session struct {
	r    *Reader
	cfg  Config
	st   Offset // the offset after everything queued
	conn *pgconn.PgConn
	repl *pgconn.PgConn
	b    *binding
	// The relation as the stream describes it.
	relID   uint32
	relCols []int // per upstream column in the stream: its Tributary column (-1: none)
	// The transaction being read.
	inTxn, skipTxn bool
	txnRows        bool
	// The chunk whose watermark is awaited (nil outside the copy).
	win *window
	// Watermarks.
	nonce string
	seq   int
	// Status.
	sentStatus uint64
	lastStatus time.Time
	lastMarker time.Time
	startLSN   uint64
	pkBuf      []types.Datum
	// The copy's rate limit (throttle).
	tokens     float64
	lastTokens time.Time
	// lastEstimate is when the upstream's row estimate was last asked for.
	lastEstimate time.Time
	// copied caches the parsed key of st.PK (copiedKey).
	copied    []types.Datum
	copiedFor []string
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
	up, err := describe(ctx, s.conn, s.cfg)
	if err != nil {
		return err
	}
	if s.b, err = bind(s.r.src.spec, s.cfg, up); err != nil {
		return fmt.Errorf("the upstream table changed: %w", err)
	}
	if s.repl, err = s.cfg.connect(ctx, true); err != nil {
		return err
	}
	defer s.repl.Close(context.Background())
	s.startLSN = s.st.LSN
	args := []string{"proto_version '1'", "publication_names " + quoteLiteral(s.cfg.Publication), "messages 'true'"}
	if err := pglogrepl.StartReplication(ctx, s.repl, s.cfg.Slot, pglogrepl.LSN(s.st.LSN), pglogrepl.StartReplicationOptions{PluginArgs: args}); err != nil {
		return fmt.Errorf("start replication from slot %q: %w", s.cfg.Slot, err)
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:]) // never fails
	s.nonce = hex.EncodeToString(nonce[:])
	for !s.st.Copied {
		s.estimate(ctx, up.oid)
		n, err := s.throttle(ctx)
		if err != nil {
			return err
		}
		if err := s.copyChunk(ctx, n); err != nil {
			return err
		}
	}
	return s.pump(ctx, nil, time.Time{})
}

// estimate reads the upstream's row estimate (pg_class.reltuples, summed
// over a partitioned table's partitions) when the offset has none yet, at
// most every estimateEvery; it stays unknown (0) while the table has never
// been analyzed. The offsets carry it from then on.
func (s *session) estimate(ctx context.Context, oid uint32) {
	if s.st.Estimate > 0 || s.st.Copied || time.Since(s.lastEstimate) < estimateEvery {
		return
	}
	s.lastEstimate = time.Now()
	rows, err := query(ctx, s.conn, fmt.Sprintf(`SELECT CASE WHEN min(reltuples) < 0 THEN -1 ELSE sum(reltuples)::int8 END FROM pg_class
		WHERE (oid = %[1]d AND relkind = 'r') OR oid IN (SELECT relid FROM pg_partition_tree(%[1]d::oid::regclass) WHERE isleaf)`, oid))
	if err != nil || len(rows) != 1 {
		return // unknown: the copy itself reports what is wrong with the connection
	}
	if n, err := strconv.ParseInt(rows[0][0], 10, 64); err == nil && n > 0 {
		s.st.Estimate = n
		_ = s.marker(ctx) // shown at once, even while the copy is paused (fails only when ctx ends)
	}
}

// throttle waits until the copy may read its next chunk under the backfill
// rate and returns the rows it may read: a chunk of a quarter second's rows
// (ChunkRows at most). Meanwhile it follows the stream, so changes to the
// keys copied so far keep flowing at any copy rate, 0 included.
func (s *session) throttle(ctx context.Context) (int, error) {
	for {
		rate := s.r.copyRate.Load()
		if rate < 0 {
			s.tokens, s.lastTokens = 0, time.Time{}
			return s.cfg.ChunkRows, nil
		}
		n := int(min(int64(s.cfg.ChunkRows), max(rate/4, 1)))
		now := time.Now()
		if !s.lastTokens.IsZero() {
			s.tokens = min(float64(n), s.tokens+now.Sub(s.lastTokens).Seconds()*float64(rate))
		}
		s.lastTokens = now
		if rate > 0 && s.tokens >= float64(n) {
			s.tokens -= float64(n)
			return n, nil
		}
		wait := throttleWait
		if rate > 0 {
			wait = min(wait, max(time.Duration((float64(n)-s.tokens)/float64(rate)*float64(time.Second)), time.Millisecond))
		}
		if err := s.pump(ctx, nil, now.Add(wait)); err != nil {
			return 0, err
		}
	}
}

// copyChunk copies the next chunk of up to n rows: select it, write its
// watermark, read the stream up to the watermark, then queue the chunk's
// rows whose keys no change touched.
func (s *session) copyChunk(ctx context.Context, n int) error {
	b := s.b
	var sql strings.Builder
	sql.WriteString("SELECT ")
	for i, name := range b.names {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString(quoteIdent(name))
	}
	sql.WriteString(" FROM " + s.cfg.QualifiedTable())
	keyCols := make([]string, len(b.pk))
	for i, k := range b.pk {
		keyCols[i] = quoteIdent(b.names[k])
		if b.collate[i] {
			keyCols[i] += ` COLLATE "C"`
		}
	}
	var params [][]byte
	if s.st.PK != nil {
		ph := make([]string, len(b.pk))
		for i := range b.pk {
			ph[i] = fmt.Sprintf("$%d", i+1)
			params = append(params, []byte(s.st.PK[i]))
		}
		fmt.Fprintf(&sql, " WHERE (%s) > (%s)", strings.Join(keyCols, ", "), strings.Join(ph, ", "))
	}
	fmt.Fprintf(&sql, " ORDER BY %s LIMIT %d", strings.Join(keyCols, ", "), n)
	res := s.conn.ExecParams(ctx, sql.String(), params, nil, nil, nil).Read()
	if res.Err != nil {
		return fmt.Errorf("copy %s: %w", s.cfg.QualifiedTable(), res.Err)
	}
	rows := res.Rows
	w := &window{lo: s.parseKey(s.st.PK), dirty: map[string]bool{}}
	if len(rows) == n {
		w.hi = s.rowKey(rows[len(rows)-1])
		if w.hi == nil {
			return fmt.Errorf("copy %s: a primary key value that does not parse", s.cfg.QualifiedTable())
		}
	}
	// The watermark: committed after the select, so every change the
	// select did not see commits after the changes it did.
	s.seq++
	w.wm = fmt.Sprintf("%s/%s/%d", s.cfg.Slot, s.nonce, s.seq)
	if _, err := query(ctx, s.conn, "SELECT pg_logical_emit_message(true, "+quoteLiteral(watermarkPrefix)+", "+quoteLiteral(w.wm)+")"); err != nil {
		return fmt.Errorf("write a watermark: %w", err)
	}
	s.win = w
	wctx, cancel := context.WithTimeout(ctx, watermarkTimeout)
	err := s.pump(wctx, func() bool { return w.seen }, time.Time{})
	cancel()
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return fmt.Errorf("the chunk's watermark did not arrive in the change stream within %v", watermarkTimeout)
		}
		return err
	}
	s.win = nil
	// Queue the chunk's untouched rows, in key order.
	seg := &segment{copy: true, base: s.st}
	last := s.st.PK
	for _, raw := range rows {
		pk := make([]string, len(b.pk))
		for i, k := range b.pk {
			pk[i] = string(raw[k])
		}
		last = pk
		if w.truncated || w.dirty[keyString(pk)] {
			continue
		}
		row, ok := s.parseRow(raw, s.st.Rows+int64(len(seg.rows)))
		if !ok {
			continue
		}
		seg.rows = append(seg.rows, row)
		seg.ops = append(seg.ops, types.OpInsert)
		seg.pks = append(seg.pks, pk)
	}
	if len(seg.rows) > 0 {
		if err := s.enqueue(ctx, seg); err != nil {
			return err
		}
		s.st = seg.after(len(seg.rows))
	}
	s.st.PK = last
	if len(rows) < n {
		s.st.Copied = true
	}
	return s.marker(ctx)
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
				if err := s.idle(ctx, uint64(ka.ServerWALEnd)); err != nil {
					return err
				}
			case pglogrepl.XLogDataByteID:
				x, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return fmt.Errorf("replication stream: %w", err)
				}
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

// status tells the upstream the committed LSN: every statusEvery, when it
// moved (at most once a second) or when asked (now).
func (s *session) status(ctx context.Context, now bool) error {
	lsn := max(s.r.committed.Load(), s.startLSN)
	since := time.Since(s.lastStatus)
	if !now && since < statusEvery && (lsn == s.sentStatus || since < time.Second) {
		return nil
	}
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: pglogrepl.LSN(lsn)})
	if err != nil {
		return fmt.Errorf("replication stream: send status: %w", err)
	}
	s.sentStatus, s.lastStatus = lsn, time.Now()
	return nil
}

// idle moves the offset's LSN to walEnd (the upstream's position, every
// commit below it read; 0: unknown) when no transaction is open, at most
// once per markerEvery, so a quiet table's slot still advances.
func (s *session) idle(ctx context.Context, walEnd uint64) error {
	if s.inTxn || walEnd <= s.st.LSN || time.Since(s.lastMarker) < markerEvery {
		return nil
	}
	s.st.LSN = walEnd
	return s.marker(ctx)
}

// marker queues the current offset with no rows.
func (s *session) marker(ctx context.Context) error {
	s.lastMarker = time.Now()
	return s.enqueue(ctx, &segment{base: s.st})
}

// message handles one pgoutput message.
func (s *session) message(ctx context.Context, data []byte) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("replication stream: %w", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		if m.Namespace == s.cfg.Schema && m.RelationName == s.cfg.Table {
			s.relID = m.RelationID
			s.relCols = make([]int, len(m.Columns))
			for i, c := range m.Columns {
				s.relCols[i] = -1
				for j, name := range s.b.names {
					if name == c.Name {
						s.relCols[i] = j
					}
				}
			}
			for j, name := range s.b.names {
				if indexInt(s.relCols, j) < 0 {
					return fmt.Errorf("the upstream table no longer has column %q", name)
				}
			}
		}
	case *pglogrepl.BeginMessage:
		s.inTxn, s.txnRows = true, false
		s.skipTxn = uint64(m.FinalLSN) <= s.st.LSN
	case *pglogrepl.CommitMessage:
		s.inTxn = false
		if s.skipTxn {
			return nil
		}
		if lsn := uint64(m.CommitLSN); lsn > s.st.LSN {
			s.st.LSN = lsn
		}
		if s.txnRows || time.Since(s.lastMarker) >= markerEvery {
			return s.marker(ctx)
		}
	case *pglogrepl.LogicalDecodingMessage:
		if m.Prefix == watermarkPrefix && s.win != nil && string(m.Content) == s.win.wm {
			s.win.seen = true
		}
	case *pglogrepl.InsertMessage:
		if m.RelationID == s.relID && !s.skipTxn {
			return s.change(ctx, nil, m.Tuple)
		}
	case *pglogrepl.UpdateMessage:
		if m.RelationID == s.relID && !s.skipTxn {
			return s.change(ctx, m.OldTuple, m.NewTuple)
		}
	case *pglogrepl.DeleteMessage:
		if m.RelationID == s.relID && !s.skipTxn {
			return s.change(ctx, m.OldTuple, nil)
		}
	case *pglogrepl.TruncateMessage:
		if !s.skipTxn && s.relID != 0 && containsUint32(m.RelationIDs, s.relID) {
			return s.truncate(ctx)
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
func (s *session) truncate(ctx context.Context) error {
	if s.win != nil {
		s.win.truncated = true
	}
	s.txnRows = true
	return s.enqueue(ctx, &segment{truncate: true, base: s.st})
}

// change applies one row change: old is the old key or row (updates that
// changed the key, deletes), new the new row (inserts, updates).
func (s *session) change(ctx context.Context, old, new *pglogrepl.TupleData) error {
	var ops []types.Op
	var rows [][]types.Datum
	var newKey []types.Datum
	if new != nil {
		row, pk, ok, err := s.tupleRow(ctx, new, old)
		if err != nil {
			return err
		}
		if ok {
			op := types.OpInsert
			if row == nil { // refetched and gone since
				op, row = types.OpDelete, s.keyRow(pk)
			}
			newKey = s.key(row)
			if s.take(newKey, pk) {
				ops, rows = append(ops, op), append(rows, row)
			}
		}
	}
	if old != nil {
		row, pk, ok, err := s.tupleRow(ctx, old, nil)
		if err != nil {
			return err
		}
		if ok && row == nil {
			row = s.keyRow(pk)
		}
		if ok {
			oldKey := s.key(row)
			if (newKey == nil || compareKeys(s.b.pkTypes, oldKey, newKey) != 0) && s.take(oldKey, pk) {
				// The delete goes first: the new key may equal another's old.
				ops, rows = append([]types.Op{types.OpDelete}, ops...), append([][]types.Datum{row}, rows...)
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	s.txnRows = true
	return s.enqueue(ctx, &segment{ops: ops, rows: rows, base: s.st})
}

// take decides whether a change of key applies now; a key in the awaited
// chunk's range becomes dirty.
func (s *session) take(key []types.Datum, pk []string) bool {
	if s.st.Copied {
		return true
	}
	w := s.win
	if w == nil {
		// Between chunks (a throttled copy): the keys copied so far.
		lo := s.copiedKey()
		return lo != nil && compareKeys(s.b.pkTypes, key, lo) <= 0
	}
	if w.lo != nil && compareKeys(s.b.pkTypes, key, w.lo) <= 0 {
		return true
	}
	if w.hi == nil || compareKeys(s.b.pkTypes, key, w.hi) <= 0 {
		w.dirty[keyString(pk)] = true
		return true
	}
	return false
}

// copiedKey is the last copied key, parsed (nil before the first).
func (s *session) copiedKey() []types.Datum {
	if !slices.Equal(s.copiedFor, s.st.PK) {
		s.copied, s.copiedFor = s.parseKey(s.st.PK), s.st.PK
	}
	return s.copied
}

// tupleRow makes a Tributary row of a tuple, and its key's text forms;
// unchanged TOASTed values are taken from other (the old row, with REPLICA
// IDENTITY FULL) or fetched again from the upstream. ok is false when the
// row cannot be made (its key is missing or does not parse; reported).
func (s *session) tupleRow(ctx context.Context, t, other *pglogrepl.TupleData) ([]types.Datum, []string, bool, error) {
	row := make([]types.Datum, len(s.b.types))
	for j := range row {
		row[j] = types.NullDatum
	}
	pk := make([]string, len(s.b.pk))
	keys := 0
	toasted := false
	for i, c := range t.Columns {
		if i >= len(s.relCols) || s.relCols[i] < 0 {
			continue
		}
		j := s.relCols[i]
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
		d, err := types.ParseText(s.b.types[j], string(c.Data))
		if k := indexInt(s.b.pk, j); k >= 0 {
			if err != nil {
				s.bad(fmt.Errorf("a change's key column %q: %w; the change is skipped", s.b.names[j], err))
				return nil, nil, false, nil
			}
			pk[k] = string(c.Data)
			keys++
		}
		if err != nil {
			s.bad(fmt.Errorf("column %q: %w; set to NULL", s.b.names[j], err))
			continue
		}
		row[j] = d
	}
	if keys != len(pk) {
		s.bad(errors.New("a change without its key (is the upstream table's REPLICA IDENTITY its primary key or FULL?); the change is skipped"))
		return nil, nil, false, nil
	}
	if toasted {
		return s.refetch(ctx, row, pk)
	}
	return row, pk, true, nil
}

// refetch reads the row with key pk from the upstream now (a change whose
// TOASTed values were not sent): the newest version, which later changes
// of the key overwrite again; nil when the row is gone since.
func (s *session) refetch(ctx context.Context, row []types.Datum, pk []string) ([]types.Datum, []string, bool, error) {
	var sql strings.Builder
	sql.WriteString("SELECT ")
	for i, name := range s.b.names {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString(quoteIdent(name))
	}
	sql.WriteString(" FROM " + s.cfg.QualifiedTable() + " WHERE ")
	params := make([][]byte, len(pk))
	for i, k := range s.b.pk {
		if i > 0 {
			sql.WriteString(" AND ")
		}
		fmt.Fprintf(&sql, "%s = $%d", quoteIdent(s.b.names[k]), i+1)
		params[i] = []byte(pk[i])
	}
	res := s.conn.ExecParams(ctx, sql.String(), params, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, nil, false, fmt.Errorf("fetch a row whose TOASTed values the stream did not send: %w", res.Err)
	}
	if len(res.Rows) == 0 {
		return nil, pk, true, nil // gone since: the caller deletes the key
	}
	r, ok := s.parseRow(res.Rows[0], -1)
	return r, pk, ok, nil
}

func (s *session) isKey(j int) bool { return indexInt(s.b.pk, j) >= 0 }

// parseRow parses a copied row (text values in the binding's column
// order); a value that does not parse is NULL (reported), a key that does
// not parse skips the row (reported).
func (s *session) parseRow(raw [][]byte, position int64) ([]types.Datum, bool) {
	row := make([]types.Datum, len(s.b.types))
	for j, v := range raw {
		if v == nil {
			row[j] = types.NullDatum
			continue
		}
		d, err := types.ParseText(s.b.types[j], string(v))
		if err != nil {
			if s.isKey(j) {
				s.badAt(position, fmt.Errorf("key column %q: %w; the row is skipped", s.b.names[j], err))
				return nil, false
			}
			s.badAt(position, fmt.Errorf("column %q: %w; set to NULL", s.b.names[j], err))
			d = types.NullDatum
		}
		row[j] = d
	}
	return row, true
}

// key returns row's key values, in key order (a fresh slice).
func (s *session) key(row []types.Datum) []types.Datum {
	k := make([]types.Datum, len(s.b.pk))
	for i, j := range s.b.pk {
		k[i] = row[j]
	}
	return k
}

// keyRow is a row of NULLs but for key pk (a delete's row).
func (s *session) keyRow(pk []string) []types.Datum {
	row := make([]types.Datum, len(s.b.types))
	for j := range row {
		row[j] = types.NullDatum
	}
	for i, j := range s.b.pk {
		row[j], _ = types.ParseText(s.b.types[j], pk[i]) // parsed before
	}
	return row
}

// rowKey parses a copied row's key (nil when it does not parse).
func (s *session) rowKey(raw [][]byte) []types.Datum {
	pk := make([]string, len(s.b.pk))
	for i, k := range s.b.pk {
		pk[i] = string(raw[k])
	}
	return s.parseKey(pk)
}

// parseKey parses key text forms (nil for nil or a key that does not parse).
func (s *session) parseKey(pk []string) []types.Datum {
	if pk == nil {
		return nil
	}
	k := make([]types.Datum, len(pk))
	for i, v := range pk {
		d, err := types.ParseText(s.b.pkTypes[i], v)
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

func (s *session) bad(err error) { s.badAt(-1, err) }

func (s *session) badAt(position int64, err error) {
	if s.r.env.BadMessage != nil {
		s.r.env.BadMessage(s.r.split, position, err)
	}
}

// enqueue queues seg, waiting while the queue is full (and telling the
// upstream where it stands meanwhile, so it keeps the connection).
func (s *session) enqueue(ctx context.Context, seg *segment) error {
	r := s.r
	t := time.NewTicker(statusEvery / 2)
	defer t.Stop()
	for {
		r.mu.Lock()
		if r.mu.rows < maxQueuedRows {
			// Markers in a row: the last one says it all.
			if n := len(r.mu.segs); n > 0 && seg.marker() && r.mu.segs[n-1].marker() {
				r.mu.segs[n-1] = seg
			} else {
				r.mu.segs = append(r.mu.segs, seg)
				r.mu.rows += max(len(seg.rows), 1)
			}
			r.mu.Unlock()
			signal(r.ready)
			return nil
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.space:
		case <-t.C:
			if err := s.status(ctx, true); err != nil {
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
