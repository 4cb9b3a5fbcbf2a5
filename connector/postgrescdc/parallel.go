package postgrescdc

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/sql/types"
)

// The parallel copy (backfill.parallelism = n > 1, RisingWave's CDC
// backfill v2): CREATE finds n-1 quantiles of the upstream table's first
// key column (pg_stats, or a sample; backfill.num_rows_per_split sizes the
// ranges instead), which split the key space into ranges, recorded with
// the table (OptRanges, Config.Bounds). Each range is a split of the table
// ("0" to "n-1") with its own offset (an Offset whose Splits hold the one
// range: bounds, position, rows, finished, window, LSNs; its LSN the
// stream's position for the range), so the engine stores, shares out and
// moves the ranges as any splits: the table's source actors (n of them at
// CREATE, ALTER TABLE ... SET PARALLELISM changes it at any time) each
// read their share, and after a rescale or a crash each range resumes
// from its committed offset, whichever actor reads it.
//
// Where the changes are filtered. The slot is read once, by the hub's
// session goroutine, which holds every registered range of the process as
// a table of its own (their positions in memory, each range's offset as
// queued): it routes each change to the range holding its key (route) and
// filters it there against that range's copy exactly as for a table in
// one range, then queues it on the Reader of the actor owning the range.
// So the check is made in one goroutine against the range's own position,
// in stream order with the range's copied rows, and a key's rows and
// changes all go through one actor's queue in order: no two actors ever
// write the same key, and no position is shared between goroutines
// except through the windows below. A range whose reader is not
// registered (its actor not started yet) drops its changes: when it
// registers, its offset's LSN is behind the stream, which restarts from
// there (errRestart), and each range skips the transactions at or below
// its own LSN. A rescale stops every actor (the hub stops with its last
// reader, dropping what was queued and not committed) and starts the new
// ones over the committed offsets: the same as a restart.
//
// Each actor's reader copies its ranges a chunk at a time over a worker
// connection of its own (pool), while the session reads the stream:
//
//   - the worker publishes the chunk's window (pwindow, through an atomic
//     pointer: the keys above the range's position), selects the next
//     ChunkRows rows above the position (the chunk ends at the last one's
//     key, hi, or at the range's end when fewer come), then writes the
//     chunk's watermark into the WAL on its connection (the select's
//     snapshot sees every transaction the session read before: snapshot.go);
//   - the session applies a change to a key when the key's range has copied
//     past it (or finished); it holds back a change to a key above the
//     position of a range whose window is published, and drops the others
//     (the range's later selects read them). A change the session read
//     before the window was published committed before the select began,
//     so the select sees it;
//   - at the watermark the session applies the held-back changes to keys up
//     to hi (those keys are dirty: their chunk rows are dropped, the change
//     is as new as the select or newer) and drops the others (a later
//     select reads them), queues the chunk's other rows and moves the
//     range's position to hi.
//
// A table created before ranges were fixed at CREATE with
// backfill.parallelism > 1 keeps its ranges in its one split's offset
// (planned when its copy began: planSplits), copied backfill.parallelism
// at a time by its one actor, as before.

// sampleBlocks bounds the blocks the split sampling reads per range
// (TABLESAMPLE SYSTEM above it, at least minSampleBlocks): the quantiles
// need not be exact, and the sample is read besides the copy.
const (
	sampleBlocks    = 16
	minSampleBlocks = 128
)

// pcopy is a parallel copy in a session: the ranges of a table created
// before ranges were fixed at CREATE, or the one range of a Ranged
// table's split.
type pcopy struct {
	splits []*psplit
}

// pool is the copy workers of a reader, each with its own connection: at
// most limit, started as ranges need them, a chunk per job; jobs is closed
// when none of the reader's ranges copies any more or the reader leaves.
// busy counts the chunks in flight (at most limit: jobs never fills). A
// reader of a Ranged table's ranges (one actor's share) copies one chunk
// at a time, so the copy's concurrency is the actors copying; a reader of
// an older table's one split copies backfill.parallelism at a time.
type pool struct {
	jobs    chan pjob
	limit   int
	workers int
	busy    int
	lim     limiter
}

// pool returns t's reader's pool, made on first use.
func (s *session) pool(t *table) *pool {
	p := s.pools[t.r]
	if p == nil {
		p = &pool{limit: max(t.cfg.Parallelism, 1)}
		if t.cfg.Ranged {
			p.limit = 1
		}
		p.jobs = make(chan pjob, p.limit)
		s.pools[t.r] = p
	}
	return p
}

// releasePool closes r's pool when none of r's tables in the session is
// copying in ranges any more: its workers end after their chunks in
// flight, whose watermarks are then ignored if their tables left.
func (s *session) releasePool(r *Reader) {
	p := s.pools[r]
	if p == nil {
		return
	}
	for _, t := range s.tables {
		if t.r == r && t.par != nil && !t.sp.st.Copied {
			return
		}
	}
	close(p.jobs)
	delete(s.pools, r)
}

// psplit is one range of a parallel copy in a session.
type psplit struct {
	t *table
	i int // in Offset.Splits
	// The range's bounds on the first key column (nil: open), parsed, and
	// their text forms for the queries.
	lo, hi         *types.Datum
	loText, hiText *string
	// stale: copied rows of the range up to this key (every row, with
	// staleAll) may be in the table from before a restart (SplitState.Win).
	stale     []types.Datum
	staleText []string
	staleAll  bool
	// pos caches the parsed range position.
	pos    []types.Datum
	posFor []string
	// The chunk in flight: busy from dispatch to its watermark (in pool);
	// win is published by the worker before its select, cur is the window
	// once the session has seen it.
	busy bool
	pool *pool
	sent time.Time
	win  atomic.Pointer[pwindow]
	cur  *pwindow
}

// pjob asks a worker for a range's next chunk.
type pjob struct {
	sp  *psplit
	pos []string // the range's position (nil: its start)
	n   int      // rows
	wm  string   // the watermark to write after the select
}

// pwindow is a chunk of a range: keys above lo (nil: the range's start) up
// to hi (nil: the range's end, the last chunk). The worker sets hi and the
// rows and closes ready before writing the watermark; held and truncated
// are the session's.
type pwindow struct {
	lo, hi    []types.Datum
	hiText    []string
	rows      *rawRows
	ready     chan struct{}
	held      []heldChange
	truncated bool
}

// heldChange is a change held back until its chunk's end is known.
type heldChange struct {
	op  types.Op
	row []types.Datum
	key []types.Datum
	pk  []string
}

// newPcopy makes the session's state of t's parallel copy from its offset
// (nil splits: not planned yet).
func (t *table) newPcopy() {
	p := &pcopy{}
	for i, ss := range t.sp.st.Splits {
		sp := &psplit{t: t, i: i, loText: ss.Lo, hiText: ss.Hi, staleAll: ss.WinAll}
		sp.lo, sp.hi = t.parseBound(ss.Lo), t.parseBound(ss.Hi)
		if ss.Win != nil && !ss.WinAll {
			sp.staleText = ss.Win
			if sp.stale = t.parseKey(ss.Win); sp.stale == nil {
				sp.staleAll = true
			}
		}
		p.splits = append(p.splits, sp)
	}
	t.par = p
}

func (t *table) parseBound(s *string) *types.Datum {
	if s == nil {
		return nil
	}
	d, err := types.ParseText(t.b.pkTypes[0], *s)
	if err != nil {
		return nil // not made by us: the range is then open on that side
	}
	return &d
}

// parallel reports whether t copies in ranges: it is a range of a Ranged
// table, its offset has them, or it asks for them and has not begun
// copying.
func parallel(cfg Config, o Offset) bool {
	if cfg.Ranged || len(o.Splits) > 0 {
		return true
	}
	return (cfg.Parallelism > 1 || cfg.RowsPerSplit > 0) && !o.Copied && o.PK == nil && o.Rows == 0 && o.Win == nil && !o.WinAll
}

// planSplits splits the key space into ranges by quantiles of the first
// key column (planBounds), and puts them in the offset (queued as a
// marker, so the next commit keeps them): the copy of a table created
// before its ranges were fixed at CREATE (not Ranged), all in its one
// split.
func (t *table) planSplits(ctx context.Context) error {
	bs, err := planBounds(ctx, t.s.conn, t.cfg, t.b, t.oid, t.sp.st.Estimate)
	if err != nil {
		return err
	}
	splits := make([]SplitState, len(bs)+1)
	for i := range splits {
		splits[i] = rangeState(bs, i)
	}
	t.sp.st.Splits = splits
	t.newPcopy()
	return t.marker(ctx)
}

// rangeState is range i's state before its copy begins: its bounds among bs.
func rangeState(bs []string, i int) SplitState {
	ss := SplitState{ID: i}
	if i > 0 {
		ss.Lo = &bs[i-1]
	}
	if i < len(bs) {
		ss.Hi = &bs[i]
	}
	return ss
}

// planBounds returns the bounds that split the key space of cfg's table
// into ranges (n-1 for n ranges, sorted, distinct, in text): quantiles of
// the first key column (quantiles). Repeated quantiles (a skewed column)
// make fewer ranges; an empty table makes one. est is the upstream's row
// estimate (0: unknown).
func planBounds(ctx context.Context, conn *pgconn.PgConn, cfg Config, b *binding, oid uint32, est int64) ([]string, error) {
	n, err := rangeCount(ctx, conn, cfg, oid, est)
	if err != nil {
		return nil, fmt.Errorf("split %s for a parallel copy: %w", cfg.QualifiedTable(), err)
	}
	qs, err := quantiles(ctx, conn, cfg, b, oid, n)
	if err != nil {
		return nil, fmt.Errorf("split %s for a parallel copy: %w", cfg.QualifiedTable(), err)
	}
	type bound struct {
		text string
		d    types.Datum
	}
	var bs []bound
	for _, q := range qs {
		d, err := types.ParseText(b.pkTypes[0], q)
		if err != nil {
			return nil, fmt.Errorf("split %s for a parallel copy: a key value %q: %w", cfg.QualifiedTable(), q, err)
		}
		bs = append(bs, bound{q, d})
	}
	sort.Slice(bs, func(i, j int) bool { return types.Compare(b.pkTypes[0], &bs[i].d, &bs[j].d) < 0 })
	bs = slices.CompactFunc(bs, func(x, y bound) bool { return types.Compare(b.pkTypes[0], &x.d, &y.d) == 0 })
	out := make([]string, len(bs))
	for i, x := range bs {
		out[i] = x.text
	}
	return out, nil
}

// rangeCount is how many ranges the copy is split into: Parallelism, or with
// RowsPerSplit the upstream's rows (its estimate est, or a count over a sample
// when it has none) over it, from 1 to MaxRanges.
func rangeCount(ctx context.Context, conn *pgconn.PgConn, cfg Config, oid uint32, est int64) (int, error) {
	if cfg.RowsPerSplit <= 0 {
		return cfg.Parallelism, nil
	}
	if est <= 0 {
		rows, err := query(ctx, conn, fmt.Sprintf("SELECT pg_relation_size(%d) / current_setting('block_size')::int8", oid))
		if err != nil {
			return 0, err
		}
		sample, scale := "", 1.0
		if blocks, _ := strconv.ParseInt(rows[0][0], 10, 64); blocks > minSampleBlocks {
			scale = float64(blocks) / minSampleBlocks
			sample = fmt.Sprintf(" TABLESAMPLE SYSTEM (%g)", 100/scale)
		}
		if rows, err = query(ctx, conn, "SELECT count(*) FROM "+cfg.QualifiedTable()+sample); err != nil {
			return 0, err
		}
		n, _ := strconv.ParseInt(rows[0][0], 10, 64)
		est = int64(float64(n) * scale)
	}
	return int(min(max((est+cfg.RowsPerSplit-1)/cfg.RowsPerSplit, 1), MaxRanges)), nil
}

// quantiles returns n-1 quantiles of the first key column (fewer when
// they repeat), in text: from the column's histogram in pg_stats when the
// table has been analyzed and the column alone is the key (unique, no
// most common values; its order the copy's: no COLLATE "C"), else over a
// sample of the table (TABLESAMPLE SYSTEM of sampleBlocks a range, at
// least minSampleBlocks, on tables larger than that).
func quantiles(ctx context.Context, conn *pgconn.PgConn, cfg Config, b *binding, oid uint32, n int) ([]string, error) {
	if n <= 1 {
		return nil, nil
	}
	col := quoteIdent(b.names[b.pk[0]])
	if len(b.pk) == 1 && !b.collate[0] {
		rows, err := query(ctx, conn, fmt.Sprintf(`SELECT v FROM unnest((SELECT histogram_bounds::text::text[] FROM pg_stats
			WHERE schemaname = %s AND tablename = %s AND attname = %s ORDER BY inherited DESC LIMIT 1)) WITH ORDINALITY AS h(v, i) ORDER BY i`,
			quoteLiteral(cfg.Schema), quoteLiteral(cfg.Table), quoteLiteral(b.names[b.pk[0]])))
		if err != nil {
			return nil, err
		}
		if len(rows) >= 2*n {
			qs := make([]string, n-1)
			for i := range qs {
				qs[i] = rows[(i+1)*(len(rows)-1)/n][0]
			}
			return qs, nil
		}
	}
	if b.collate[0] {
		col += ` COLLATE "C"`
	}
	rows, err := query(ctx, conn, fmt.Sprintf("SELECT pg_relation_size(%d) / current_setting('block_size')::int8", oid))
	if err != nil {
		return nil, err
	}
	sample := ""
	want := max(minSampleBlocks, sampleBlocks*n)
	if blocks, _ := strconv.ParseInt(rows[0][0], 10, 64); blocks > int64(want) {
		sample = fmt.Sprintf(" TABLESAMPLE SYSTEM (%g)", 100*float64(want)/float64(blocks))
	}
	fr := make([]string, n-1)
	for i := range fr {
		fr[i] = strconv.FormatFloat(float64(i+1)/float64(n), 'f', -1, 64)
	}
	rows, err = query(ctx, conn, fmt.Sprintf("SELECT DISTINCT q::text FROM unnest((SELECT percentile_disc(ARRAY[%s]::float8[]) WITHIN GROUP (ORDER BY %s) FROM %s%s)) AS q",
		strings.Join(fr, ", "), col, cfg.QualifiedTable(), sample))
	if err != nil {
		return nil, err
	}
	qs := make([]string, len(rows))
	for i, r := range rows {
		qs[i] = r[0]
	}
	return qs, nil
}

// find returns the range holding key.
func (p *pcopy) find(ts []types.T, key []types.Datum) *psplit {
	i := sort.Search(len(p.splits), func(i int) bool {
		hi := p.splits[i].hi
		return hi == nil || types.Compare(ts[0], &key[0], hi) <= 0
	})
	return p.splits[min(i, len(p.splits)-1)]
}

// observe returns the range's chunk window once its worker has published
// it (nil before).
func (sp *psplit) observe() *pwindow {
	if sp.cur != nil || !sp.busy {
		return sp.cur
	}
	if w := sp.win.Load(); w != nil {
		sp.cur = w
	}
	return sp.cur
}

// ptake decides whether a change (op, row) of key applies now (take, for a
// parallel copy); a change held back by its range's window is not (yet).
func (t *table) ptake(key []types.Datum, pk []string, op types.Op, row []types.Datum) bool {
	if len(t.sp.st.Splits) == 0 {
		return false // not planned yet: nothing copied
	}
	sp := t.par.find(t.b.pkTypes, key)
	ss := &t.sp.st.Splits[sp.i]
	if ss.Copied {
		return true
	}
	if w := sp.observe(); w != nil {
		if w.lo != nil && compareKeys(t.b.pkTypes, key, w.lo) <= 0 {
			return true
		}
		w.held = append(w.held, heldChange{op: op, row: row, key: key, pk: pk})
		return false
	}
	if !slices.Equal(sp.posFor, ss.PK) {
		sp.pos, sp.posFor = t.parseKey(ss.PK), ss.PK
	}
	return sp.pos != nil && compareKeys(t.b.pkTypes, key, sp.pos) <= 0
}

// ptruncate marks every published window truncated (their selects may
// predate the TRUNCATE: their rows are dropped, and the keys they cover
// take the stream's changes after it) and drops the changes they held
// (the TRUNCATE deletes them).
func (t *table) ptruncate() {
	for _, sp := range t.par.splits {
		if w := sp.observe(); w != nil {
			w.truncated, w.held = true, nil
		}
	}
}

// dispatch gives each idle range of the parallel copies its next chunk
// (within the backfill rate), planning the ranges first when a copy has
// none yet; it returns how long until the rate allows more (-1: not
// limited).
func (s *session) dispatch(ctx context.Context, now time.Time) (time.Duration, error) {
	wait := time.Duration(-1)
	for _, t := range s.order {
		if t.par == nil || t.sp.st.Copied {
			continue
		}
		t.estimate(ctx)
		if len(t.sp.st.Splits) == 0 {
			if err := t.planSplits(ctx); err != nil {
				return 0, err
			}
		}
		p := s.pool(t)
		for _, sp := range t.par.splits {
			ss := t.sp.st.Splits[sp.i]
			if p.busy >= p.limit {
				break
			}
			if sp.busy || ss.Copied {
				continue
			}
			n, w := p.lim.allowance(t.r.copyRate.Load(), t.chunkRows(), now)
			if n == 0 {
				if wait < 0 || w < wait {
					wait = w
				}
				break
			}
			if ss.LSNLow == 0 {
				lsn := max(t.sp.st.LSN, s.pos)
				t.sp.st = t.sp.st.withSplit(sp.i, func(ss *SplitState) { ss.LSNLow = lsn })
			}
			if p.workers <= p.busy {
				s.startWorker(p)
			}
			s.seq++
			wm := fmt.Sprintf("%s/%s/%d", s.cfg.Slot, s.nonce, s.seq)
			sp.busy, sp.sent, sp.cur, sp.pool = true, now, nil, p
			p.busy++
			sp.win.Store(nil)
			s.wms[wm] = sp
			p.jobs <- pjob{sp: sp, pos: ss.PK, n: n, wm: wm} // busy <= limit: never blocks
		}
	}
	return wait, nil
}

// workerConns counts the connections the workers open (tests).
var workerConns atomic.Int64

// startWorker starts a worker of p: its own connection, a chunk per job,
// until p is released (jobs closed) or the session's workers stop. A
// failure ends the session (workerErr).
func (s *session) startWorker(p *pool) {
	p.workers++
	jobs, ctx := p.jobs, s.wctx
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var conn *pgconn.PgConn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		for {
			var j pjob
			var ok bool
			select {
			case <-ctx.Done():
				return
			case j, ok = <-jobs:
				if !ok {
					return // the copy is done: the connection closes
				}
			}
			sp := j.sp
			var err error
			if conn == nil {
				workerConns.Add(1)
				if conn, err = sp.t.cfg.connect(ctx, false); err != nil {
					s.workerFailed(fmt.Errorf("copy range %d of %s: %w", sp.i, sp.t.cfg.QualifiedTable(), err))
					return
				}
			}
			if err := sp.copyChunk(ctx, conn, j); err != nil {
				s.workerFailed(fmt.Errorf("copy range %d of %s: %w", sp.i, sp.t.cfg.QualifiedTable(), err))
				return
			}
		}
	}()
}

func (s *session) workerFailed(err error) {
	select {
	case s.werrs <- err:
	default: // one is enough: it ends the session
	}
}

// workerErr returns a worker's failure, or a chunk whose watermark is
// overdue.
func (s *session) workerErr() error {
	select {
	case err := <-s.werrs:
		return err
	default:
	}
	for _, sp := range s.wms {
		if time.Since(sp.sent) > watermarkTimeout {
			return fmt.Errorf("copy range %d of %s: the chunk's watermark did not arrive in the change stream within %v", sp.i, sp.t.cfg.QualifiedTable(), watermarkTimeout)
		}
	}
	return nil
}

// stopWorkers ends the workers (their chunks in flight are dropped: the
// ranges' positions have not moved).
func (s *session) stopWorkers() {
	if s.wcancel != nil {
		s.wcancel()
	}
	s.wg.Wait()
}

// keyColumns are the key's columns in the copy's order (text columns of a
// non-C collation COLLATE "C").
func (b *binding) keyColumns() []string {
	keyCols := make([]string, len(b.pk))
	for i, k := range b.pk {
		keyCols[i] = quoteIdent(b.names[k])
		if b.collate[i] {
			keyCols[i] += ` COLLATE "C"`
		}
	}
	return keyCols
}

// where builds a copy query's conditions: keys above pos (nil: above the
// range's start), up to hi (nil: up to the range's end).
func (sp *psplit) where(keyCols []string, pos, hi []string) (string, [][]byte) {
	var conds []string
	var params [][]byte
	tuple := func(op string, key []string) {
		ph := make([]string, len(key))
		for i, v := range key {
			params = append(params, []byte(v))
			ph[i] = fmt.Sprintf("$%d", len(params))
		}
		conds = append(conds, fmt.Sprintf("(%s) %s (%s)", strings.Join(keyCols, ", "), op, strings.Join(ph, ", ")))
	}
	bound := func(op string, v string) {
		params = append(params, []byte(v))
		conds = append(conds, fmt.Sprintf("%s %s $%d", keyCols[0], op, len(params)))
	}
	switch {
	case pos != nil:
		tuple(">", pos)
	case sp.loText != nil:
		bound(">", *sp.loText)
	}
	switch {
	case hi != nil:
		tuple("<=", hi)
	case sp.hiText != nil:
		bound("<=", *sp.hiText)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), params
}

// copyChunk is the worker's part of a chunk: publish its window, select
// its rows, write its watermark.
func (sp *psplit) copyChunk(ctx context.Context, conn *pgconn.PgConn, j pjob) error {
	t, b := sp.t, sp.t.b
	keyCols := b.keyColumns()
	w := &pwindow{lo: t.parseKey(j.pos), ready: make(chan struct{})}
	sp.win.Store(w)
	cols := make([]string, len(b.names))
	for i, name := range b.names {
		cols[i] = quoteIdent(name)
	}
	where, params := sp.where(keyCols, j.pos, nil)
	// The transactions read before the window was published: the select
	// must see them (their changes to the window's keys were dropped).
	seen := t.s.seen.list()
	rows, err := selectVisible(ctx, conn, "SELECT "+strings.Join(cols, ", ")+" FROM "+t.cfg.QualifiedTable()+where+
		" ORDER BY "+strings.Join(keyCols, ", ")+fmt.Sprintf(" LIMIT %d", j.n), params, b.resultFormats(), j.n, seen, "COMMIT")
	if err != nil {
		return fmt.Errorf("select: %w", err)
	}
	if n := rows.len(); n == j.n {
		w.hiText = rowPK(b, rows.row(n-1))
		if w.hi = t.parseKey(w.hiText); w.hi == nil {
			return fmt.Errorf("a primary key value that does not parse: %v", w.hiText)
		}
	}
	w.rows = rows
	close(w.ready)
	if _, err := query(ctx, conn, "SELECT pg_logical_emit_message(true, "+quoteLiteral(watermarkPrefix)+", "+quoteLiteral(j.wm)+")"); err != nil {
		return fmt.Errorf("write a watermark: %w", err)
	}
	return nil
}

// finishChunk is the session's part of a chunk, at its watermark: queue
// the rows whose keys no change touched (those the table may hold from
// before a restart as stale, written with a lookup), then move the range's
// position to the chunk's end (the range is copied after its last chunk).
func (s *session) finishChunk(ctx context.Context, sp *psplit) error {
	w := sp.observe()
	sp.busy, sp.cur = false, nil
	sp.pool.busy--
	sp.win.Store(nil)
	s.kick = true
	t := sp.t
	if w == nil || s.tables[t.sp.key] != t {
		return nil // the table left
	}
	<-w.ready // closed before the watermark was written
	b := t.b
	if w.hi != nil && w.rows.len() >= t.chunkRows() { // a full chunk
		t.chunk, t.blocked = nextChunk(t.cfg, w.rows.len(), len(w.rows.data), t.blocked), false
	}
	// From here the table may hold keys of the chunk (a resumed copy looks
	// its rows up).
	t.sp.st = t.sp.st.withSplit(sp.i, func(ss *SplitState) {
		switch {
		case sp.staleAll || w.hi == nil:
			ss.Win, ss.WinAll = nil, true
		case sp.stale != nil && compareKeys(b.pkTypes, sp.stale, w.hi) > 0:
			ss.Win = sp.staleText
		default:
			ss.Win = w.hiText
		}
	})
	// The changes held back: those up to the chunk's end apply (their keys'
	// chunk rows are dropped), the others are dropped (a later chunk reads
	// them).
	dirty := map[string]bool{}
	ch := &segment{base: t.sp.st}
	for _, c := range w.held {
		if w.hi == nil || compareKeys(b.pkTypes, c.key, w.hi) <= 0 {
			dirty[keyString(c.pk)] = true
			ch.ops, ch.rows = append(ch.ops, c.op), append(ch.rows, c.row)
		}
	}
	if len(ch.rows) > 0 {
		t.txnRows = true
		if err := t.enqueue(ctx, ch); err != nil {
			return err
		}
	}
	seg := &segment{copy: true, par: true, split: sp.i, stale: sp.staleAll, base: t.sp.st, dec: b}
	var raw [][]byte
	for k := range w.rows.len() {
		raw = w.rows.rowInto(raw, k)
		if w.truncated || len(dirty) > 0 && dirty[keyString(rowPK(b, raw))] {
			continue
		}
		stale := sp.staleAll
		if !stale && sp.stale != nil {
			key := t.rowKey(raw)
			stale = key == nil || compareKeys(b.pkTypes, key, sp.stale) <= 0 // a key that does not parse: Read skips the row
		}
		if stale != seg.stale {
			if err := t.queueCopy(ctx, seg); err != nil {
				return err
			}
			seg = &segment{copy: true, par: true, split: sp.i, stale: stale, base: t.sp.st, dec: b}
		}
		seg.add(w.rows, k)
	}
	if err := t.queueCopy(ctx, seg); err != nil {
		return err
	}
	lsn := max(t.sp.st.LSN, s.pos)
	keepStale := w.hi != nil && (sp.staleAll || sp.stale != nil && compareKeys(b.pkTypes, sp.stale, w.hi) > 0)
	t.sp.st = t.sp.st.withSplit(sp.i, func(ss *SplitState) {
		ss.Win, ss.WinAll = nil, false
		switch {
		case w.hi == nil:
			ss.Copied, ss.LSNHigh = true, lsn
		case keepStale:
			ss.PK = w.hiText
			ss.Win, ss.WinAll = sp.staleText, sp.staleAll // the stale keys go on past this chunk
		default:
			ss.PK = w.hiText
		}
	})
	if !keepStale {
		sp.stale, sp.staleText, sp.staleAll = nil, nil, false
	}
	copied := true
	for _, ss := range t.sp.st.Splits {
		copied = copied && ss.Copied
	}
	if t.sp.st.Copied = copied; copied {
		s.releasePool(t.r)
	}
	return t.marker(ctx)
}
