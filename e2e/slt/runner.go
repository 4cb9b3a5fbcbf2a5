package slt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultEngine is the engine name `skipif`/`onlyif` match when Runner.Engine is empty.
const DefaultEngine = "tributary"

// Runner executes scripts against one server. Its zero value is not usable: set DSN.
// A Runner is used by one goroutine at a time; call Close when done.
type Runner struct {
	// DSN is the connection string every session (the default and each `connection <name>`) uses.
	DSN string
	// Vars are variables for `control substitution on`, looked up before the
	// environment (as an environment variable set for one run of the file).
	Vars map[string]string
	// Engine is matched by skipif/onlyif; DefaultEngine when empty.
	Engine string
	// Restart stops the server (SIGKILL when kill, else a clean shutdown) and starts it again on
	// the same data directory and address, returning once it accepts connections. Sessions are
	// closed before and reopened lazily after. Nil makes `restart` records fail.
	Restart func(ctx context.Context, kill bool) error
	// Rewrite replaces mismatching expected results (and wrong column-type counts) in the
	// script files instead of failing on them.
	Rewrite bool
	// RecordTimeout bounds each record; 60 s when zero.
	RecordTimeout time.Duration
	// Logf, when set, receives a line per rewritten record.
	Logf func(format string, args ...any)
	// KeepGoing runs every record even after one failed (Run then returns
	// the first failure at the end); OnRecord, when set, is told each
	// record's outcome (err nil: passed). Used to measure how much of a
	// foreign suite passes (RisingWave's e2e files).
	KeepGoing bool
	OnRecord  func(rec *Record, err error)
	// AnyColumnCount skips the check that a query's declared column types
	// count its result's columns (RisingWave's runner does not check it).
	AnyColumnCount bool

	conns map[string]*pgx.Conn
	edits map[string][]edit // file -> pending rewrites
	kc    *kafkaCluster     // the script's Kafka cluster, nil until used
	pg    *upstreamPG       // the script's upstream PostgreSQL, nil until used
}

// RunFile parses the script at path and runs it.
func (r *Runner) RunFile(ctx context.Context, path string) error {
	s, err := ParseFile(path)
	if err != nil {
		return err
	}
	return r.Run(ctx, s)
}

// Run executes the script's records in order and stops at the first failure, which it returns
// with the record's file:line and SQL. With Rewrite, result mismatches are written back into
// the files (even when a later record fails) rather than reported. A Kafka cluster the script
// used is stopped at its end.
func (r *Runner) Run(ctx context.Context, s *Script) (err error) {
	r.edits = map[string][]edit{}
	defer r.closeKafka()
	defer r.closeUpstream()
	defer func() {
		if werr := r.applyEdits(s); werr != nil && err == nil {
			err = werr
		}
	}()
	engine := r.Engine
	if engine == "" {
		engine = DefaultEngine
	}
	var first error
	for _, rec := range s.Records {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", rec.Pos, err)
		}
		if rec.Skipped(engine) {
			continue
		}
		if rec.Kind == KindHalt {
			return first
		}
		err := r.runRecord(ctx, rec)
		if r.OnRecord != nil {
			r.OnRecord(rec, err)
		}
		if err != nil && !r.KeepGoing {
			return err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Close closes every open session (and a Kafka cluster left by a Run that did not return).
func (r *Runner) Close(ctx context.Context) {
	r.closeKafka()
	r.closeUpstream()
	r.closeSessions(ctx)
}

func (r *Runner) closeSessions(ctx context.Context) {
	for name, c := range r.conns {
		_ = c.Close(ctx) // best effort: the server may already be gone
		delete(r.conns, name)
	}
}

func (r *Runner) runRecord(ctx context.Context, rec *Record) error {
	timeout := r.RecordTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch rec.Kind {
	case KindSleep:
		t := time.NewTimer(rec.Duration)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%s: sleep: %w", rec.Pos, ctx.Err())
		}
	case KindRestart:
		if r.Restart == nil {
			return fmt.Errorf("%s: restart: this runner cannot restart its server", rec.Pos)
		}
		r.closeSessions(ctx) // the Kafka cluster stays
		if err := r.Restart(ctx, rec.Kill); err != nil {
			return fmt.Errorf("%s: restart (kill=%v): %w", rec.Pos, rec.Kill, err)
		}
		return nil
	case KindKafka:
		if err := r.runKafka(ctx, rec.Kafka); err != nil {
			return fmt.Errorf("%s: kafka %s %s: %w", rec.Pos, rec.Kafka.Op, rec.Kafka.Topic, err)
		}
		return nil
	case KindSystem:
		command := rec.Command
		if rec.Substitute {
			command = substituteVars(command, rec.Pos.File, r.DSN, r.Vars)
		}
		if err := r.runSystem(ctx, command); err != nil {
			return fmt.Errorf("%s: system: %w", rec.Pos, err)
		}
		return nil
	case KindStatement, KindQuery:
		for attempt := 0; ; attempt++ {
			last := attempt >= rec.Retry
			err := r.runOnce(ctx, rec, last)
			if err == nil || last {
				return err
			}
			t := time.NewTimer(rec.Backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("%s: gave up retrying after %d attempts (%v), the last failure: %w", rec.Pos, attempt+1, ctx.Err(), err)
			}
		}
	}
	return fmt.Errorf("%s: cannot run a %s record", rec.Pos, rec.Kind)
}

// runOnce runs a statement or query record once; only the last attempt of a retried record
// rewrites its expected results.
func (r *Runner) runOnce(ctx context.Context, rec *Record, last bool) error {
	results, err := r.exec(ctx, rec)
	if rec.ExpectError {
		if err := checkError(rec, err); err != nil {
			return recordError(rec, err)
		}
		return nil
	}
	if err != nil {
		return recordError(rec, err)
	}
	if rec.Kind == KindStatement {
		return checkCount(rec, results)
	}
	return r.checkQuery(rec, results, last)
}

func recordError(rec *Record, err error) error {
	return fmt.Errorf("%s: %s failed: %w\nSQL:\n    %s", rec.Pos, rec.Kind, err,
		strings.ReplaceAll(rec.SQL, "\n", "\n    "))
}

func (r *Runner) session(ctx context.Context, name string) (*pgx.Conn, error) {
	if c, ok := r.conns[name]; ok && !c.IsClosed() {
		return c, nil
	}
	cfg, err := pgx.ParseConfig(r.DSN)
	if err != nil {
		return nil, fmt.Errorf("parse DSN: %w", err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect session %q: %w", name, err)
	}
	if r.conns == nil {
		r.conns = map[string]*pgx.Conn{}
	}
	r.conns[name] = c
	return c, nil
}

// exec sends rec.SQL as one simple-protocol query, so every value comes back as text and a
// record may hold several statements.
func (r *Runner) exec(ctx context.Context, rec *Record) ([]*pgconn.Result, error) {
	text := rec.SQL
	if rec.Substitute {
		text = substituteVars(text, rec.Pos.File, r.DSN, r.Vars)
	}
	sql, err := r.substitute(text)
	if err != nil {
		return nil, err
	}
	c, err := r.session(ctx, rec.Connection)
	if err != nil {
		return nil, err
	}
	return readAll(c.PgConn().Exec(ctx, sql))
}

// readAll is MultiResultReader.ReadAll, except that a result's columns are kept even when it
// has no rows (ReadAll only records them with the first row).
func readAll(mrr *pgconn.MultiResultReader) ([]*pgconn.Result, error) {
	var results []*pgconn.Result
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		res := &pgconn.Result{FieldDescriptions: append([]pgconn.FieldDescription(nil), rr.FieldDescriptions()...)}
		for rr.NextRow() {
			values := rr.Values()
			row := make([][]byte, len(values))
			for i, v := range values {
				if v != nil {
					row[i] = append(make([]byte, 0, len(v)), v...) // non-nil even when empty
				}
			}
			res.Rows = append(res.Rows, row)
		}
		res.CommandTag, res.Err = rr.Close()
		results = append(results, res)
	}
	return results, mrr.Close()
}

// checkError accepts err when it is a server error matching the record's expectation.
func checkError(rec *Record, err error) error {
	if err == nil {
		return errors.New("expected an error, got success")
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("expected a server error, got %w", err)
	}
	if rec.ErrorMessage != "" && strings.TrimSpace(pgErr.Message) != rec.ErrorMessage {
		return fmt.Errorf("error message mismatch\nexpected:\n    %s\nactual:\n    %s (SQLSTATE %s)",
			rec.ErrorMessage, pgErr.Message, pgErr.Code)
	}
	if rec.ErrorRegex != nil && !MatchError(rec.ErrorRegex.MatchString, pgErr) {
		return fmt.Errorf("error %q (SQLSTATE %s) does not match /%s/", pgErr.Message, pgErr.Code, rec.ErrorPattern)
	}
	return nil
}

// MatchError reports whether match accepts the error's SQLSTATE, its message, or its full
// "ERROR: message (SQLSTATE code)" text.
func MatchError(match func(string) bool, e *pgconn.PgError) bool {
	return match(e.Code) || match(e.Message) || match(e.Error())
}

func checkCount(rec *Record, results []*pgconn.Result) error {
	if rec.Count < 0 {
		return nil
	}
	var n int64
	if len(results) > 0 {
		n = results[len(results)-1].CommandTag.RowsAffected()
	}
	if n != rec.Count {
		return recordError(rec, fmt.Errorf("expected %d rows affected, got %d", rec.Count, n))
	}
	return nil
}

func (r *Runner) checkQuery(rec *Record, results []*pgconn.Result, last bool) error {
	rewrite := r.Rewrite && last
	var res *pgconn.Result
	if len(results) > 0 {
		res = results[len(results)-1] // the last statement's answer
	} else {
		res = &pgconn.Result{}
	}
	actual := make([]string, len(res.Rows))
	for i, row := range res.Rows {
		actual[i] = FormatRow(row)
	}
	if n := len(res.FieldDescriptions); n != len(rec.Types) && !r.AnyColumnCount && !rec.AnyTypes {
		if !rewrite {
			return recordError(rec, fmt.Errorf("query declares %d columns (%s) but the result has %d", len(rec.Types), rec.Types, n))
		}
		r.rewriteTypes(rec, TypesFor(res.FieldDescriptions))
	}
	at := Compare(rec.SortMode, rec.Expected, actual)
	if at < 0 {
		return nil
	}
	if rewrite {
		r.rewriteResult(rec, actual)
		return nil
	}
	return &MismatchError{Pos: rec.Pos, SQL: rec.SQL, Mode: rec.SortMode, Expected: rec.Expected, Actual: actual, At: at}
}

// TypesFor suggests column type letters for a result: I for integers, R for floating point and
// numeric, B for booleans, T for everything else.
func TypesFor(fields []pgconn.FieldDescription) string {
	b := make([]byte, len(fields))
	for i, f := range fields {
		switch f.DataTypeOID {
		case 20, 21, 23: // int8, int2, int4
			b[i] = 'I'
		case 700, 701, 1700: // float4, float8, numeric
			b[i] = 'R'
		case 16: // bool
			b[i] = 'B'
		default:
			b[i] = 'T'
		}
	}
	return string(b)
}
