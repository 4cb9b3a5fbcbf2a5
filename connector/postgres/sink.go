package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tributary/tributary/sql/types"
)

// flushBytes is how much statement data Commit queues before sending it: one
// round trip per flush.
const flushBytes = 4 << 20

// closeTimeout bounds Close and the ROLLBACK after a failed commit.
const closeTimeout = 10 * time.Second

var errEpochTooLarge = types.Errorf(types.ErrInsufficientRes,
	"postgres sink: an epoch's buffered rows exceed 4 GiB of text; commit more often")

// Sink writes a streaming job's changes into a PostgreSQL table, one
// transaction per epoch. It implements connector.Sink. An upsert sink's
// epochs are idempotent; an append-only sink has no key to make a replayed
// epoch converge, so replaying one inserts its rows again (at least once).
type Sink struct {
	cfg   Config
	cols  []Column
	tgt   *target
	stmts *statements

	// Per-connection state.
	conn     *pgx.Conn
	prepared map[string]*pgconn.StatementDescription // by SQL text

	// The open epoch.
	buf     *buffer
	keyOnly []bool // for deletes: encode the key columns only
	params  [][]byte
}

// Open connects to the target database, checks the target as Check does, and
// returns the sink.
func Open(ctx context.Context, c Config, cols []Column) (*Sink, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	tgt, err := describe(ctx, conn, c, cols)
	if err != nil {
		_ = closeConn(conn) // the describe error is the one to report
		return nil, err
	}
	s := &Sink{
		cfg:      c,
		cols:     append([]Column(nil), cols...),
		tgt:      tgt,
		stmts:    newStatements(tgt, c.Upsert),
		conn:     conn,
		prepared: map[string]*pgconn.StatementDescription{},
		buf:      newBuffer(len(cols)),
	}
	if c.Upsert {
		s.keyOnly = make([]bool, len(cols))
		for _, k := range tgt.key {
			s.keyOnly[k] = true
		}
	}
	return s, nil
}

// Write buffers the visible rows of c with their ops, as text; c may be
// reused once Write returns. An append-only sink drops deletes (and the old
// rows of updates); an upsert sink keeps only the key of those.
func (s *Sink) Write(_ context.Context, c *types.Chunk) error {
	if len(c.Cols) != len(s.cols) {
		return types.Errorf(types.ErrInternal, "postgres sink %s: chunk has %d columns, the sink %d",
			s.cfg.target(), len(c.Cols), len(s.cols))
	}
	var key []int
	if s.cfg.Upsert {
		key = s.tgt.key
	}
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		op := c.Op(i)
		var need []bool
		if !op.IsInsert() {
			if !s.cfg.Upsert {
				continue
			}
			need = s.keyOnly
		}
		if err := s.buf.add(c, i, op, need, key, s.tgt.cols); err != nil {
			return err
		}
	}
	return nil
}

// Commit applies the rows written since the last Commit in one transaction.
// An upsert sink applies the last change of each key: DELETE for deletes,
// then INSERT ... ON CONFLICT DO UPDATE for inserts, so applying an epoch
// again leaves the same table. On an error the transaction is rolled back and
// the rows stay buffered: calling Commit again retries the epoch. A broken
// connection is reopened once.
func (s *Sink) Commit(ctx context.Context, epoch uint64) error {
	if s.buf.len() == 0 {
		return nil
	}
	var err error
	for attempt := 0; ; attempt++ {
		err = nil
		if s.broken() {
			err = s.reconnect(ctx)
		}
		if err == nil {
			if err = s.apply(ctx); err == nil {
				break
			}
		}
		if attempt > 0 || ctx.Err() != nil || !s.broken() {
			return fmt.Errorf("postgres sink %s: commit epoch %d: %w", s.cfg.target(), epoch, err)
		}
	}
	s.buf.reset()
	return nil
}

// Close closes the connection; rows written since the last Commit are lost.
func (s *Sink) Close() error {
	if s.conn == nil {
		return nil
	}
	err := closeConn(s.conn)
	s.conn = nil
	return err
}

func closeConn(conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return conn.Close(ctx)
}

func (s *Sink) broken() bool { return s.conn == nil || s.conn.IsClosed() }

func (s *Sink) reconnect(ctx context.Context) error {
	if s.conn != nil {
		_ = s.Close() // the connection is broken: nothing to report
	}
	clear(s.prepared)
	conn, err := s.cfg.connect(ctx)
	if err != nil {
		return err
	}
	s.conn = conn
	return nil
}

// apply runs the epoch's statements in one transaction.
func (s *Sink) apply(ctx context.Context) error {
	pc := s.conn.PgConn()
	tx := txRun{conn: pc}
	var err error
	if s.cfg.Upsert {
		err = s.applyUpsert(ctx, &tx)
	} else {
		err = s.applyAppend(ctx, &tx)
	}
	if err == nil {
		err = tx.commit(ctx)
	}
	if err != nil && !pc.IsClosed() && pc.TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		if _, rerr := pc.Exec(rctx, "ROLLBACK").ReadAll(); rerr != nil {
			// The server rolls back when the connection ends; the next
			// Commit reconnects.
			_ = s.Close()
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
	}
	return err
}

func (s *Sink) applyAppend(ctx context.Context, tx *txRun) error {
	b := s.buf
	width := len(s.cols)
	per := rowsPerStatement(width)
	params, rows := s.params[:0], 0
	for i := 0; i < b.len(); i++ {
		for j := 0; j < width; j++ {
			params = append(params, b.value(i, j))
		}
		if rows++; rows == per {
			if err := s.exec(ctx, tx, s.stmts.insertSQL(rows), params, rows); err != nil {
				return err
			}
			params, rows = params[:0], 0
		}
	}
	s.params = params[:0]
	if rows > 0 {
		return s.exec(ctx, tx, s.stmts.insertSQL(rows), params, rows)
	}
	return nil
}

func (s *Sink) applyUpsert(ctx context.Context, tx *txRun) error {
	b := s.buf
	win := b.winners()
	key := s.tgt.key
	// Deletes first, so that a row inserted later may take over a unique
	// value (of another unique constraint) from one deleted.
	per := rowsPerStatement(len(key))
	params, rows := s.params[:0], 0
	for i := 0; i < b.len(); i++ {
		if !win[i] || b.nullKey[i] || b.ops[i].IsInsert() {
			continue
		}
		for _, j := range key {
			params = append(params, b.value(i, j))
		}
		if rows++; rows == per {
			if err := s.exec(ctx, tx, s.stmts.deleteSQL(rows), params, rows); err != nil {
				return err
			}
			params, rows = params[:0], 0
		}
	}
	if rows > 0 {
		if err := s.exec(ctx, tx, s.stmts.deleteSQL(rows), params, rows); err != nil {
			return err
		}
	}
	// A key with a NULL never conflicts in ON CONFLICT: delete it (whatever
	// its op) and insert it afresh.
	for i := 0; i < b.len(); i++ {
		if !win[i] || !b.nullKey[i] {
			continue
		}
		params = params[:0]
		for _, j := range key {
			params = append(params, b.value(i, j))
		}
		if err := s.exec(ctx, tx, s.stmts.deleteNullSQL(), params, 1); err != nil {
			return err
		}
	}
	width := len(s.cols)
	per = rowsPerStatement(width)
	params, rows = params[:0], 0
	for i := 0; i < b.len(); i++ {
		if !win[i] || !b.ops[i].IsInsert() {
			continue
		}
		for j := 0; j < width; j++ {
			params = append(params, b.value(i, j))
		}
		if rows++; rows == per {
			if err := s.exec(ctx, tx, s.stmts.insertSQL(rows), params, rows); err != nil {
				return err
			}
			params, rows = params[:0], 0
		}
	}
	s.params = params[:0]
	if rows > 0 {
		return s.exec(ctx, tx, s.stmts.insertSQL(rows), params, rows)
	}
	return nil
}

// exec queues one statement of rows rows (or keys). The statements used
// again and again (full-size batches, and the small ones of trickling
// epochs) are prepared once per connection; the others are parsed each time.
func (s *Sink) exec(ctx context.Context, tx *txRun, sql string, params [][]byte, rows int) error {
	var sd *pgconn.StatementDescription
	if s.stmts.cacheable(rows) {
		sd = s.prepared[sql]
		if sd == nil {
			name := fmt.Sprintf("tributary_sink_%d", len(s.prepared))
			var err error
			if sd, err = s.conn.PgConn().Prepare(ctx, name, sql, nil); err != nil {
				return fmt.Errorf("prepare: %w", err)
			}
			s.prepared[sql] = sd
		}
	}
	return tx.exec(ctx, sd, sql, params)
}

// txRun sends one transaction's statements in pipelined batches: BEGIN with
// the first, COMMIT with the last, a round trip per flushBytes of data.
type txRun struct {
	conn  *pgconn.PgConn
	batch *pgconn.Batch
	size  int
	began bool
}

func (t *txRun) exec(ctx context.Context, sd *pgconn.StatementDescription, sql string, params [][]byte) error {
	if t.batch == nil {
		t.batch, t.size = &pgconn.Batch{}, 0
	}
	if !t.began {
		t.batch.ExecParams("BEGIN", nil, nil, nil, nil)
		t.began = true
	}
	if sd != nil {
		t.batch.ExecStatement(sd, params, nil, nil)
	} else {
		t.batch.ExecParams(sql, params, nil, nil, nil)
		t.size += len(sql)
	}
	for _, p := range params {
		t.size += len(p) + 4
	}
	if t.size >= flushBytes {
		return t.flush(ctx)
	}
	return nil
}

func (t *txRun) flush(ctx context.Context) error {
	if t.batch == nil {
		return nil
	}
	batch := t.batch
	t.batch = nil
	_, err := t.conn.ExecBatch(ctx, batch).ReadAll()
	return err
}

// commit queues COMMIT and sends what is left.
func (t *txRun) commit(ctx context.Context) error {
	if !t.began {
		return nil
	}
	if t.batch == nil {
		t.batch = &pgconn.Batch{}
	}
	t.batch.ExecParams("COMMIT", nil, nil, nil, nil)
	if err := t.flush(ctx); err != nil {
		return err
	}
	if st := t.conn.TxStatus(); st != 'I' {
		return fmt.Errorf("transaction status %q after COMMIT", st)
	}
	return nil
}

// CommitsEpochsTogether implements connector.MultiEpochCommitter: an upsert
// applies the last change per key of everything given, so several epochs
// commit in one transaction, and a replay still converges.
func (s *Sink) CommitsEpochsTogether() bool { return true }
