package stream

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// Runtime expression errors in streaming jobs.
//
// A streaming job cannot refuse a row that a table or source already
// accepted, so an expression that fails on a row (division by zero, overflow,
// a bad cast) makes that value NULL (a failing filter or join condition is
// false) and the job and its epoch go on, as in RisingWave. The error is
// reported through the job's EvalErrors: at most one event per job per
// evalErrorInterval, carrying the count of rows affected since the last one.
// Batch queries are not affected: they raise the error as PostgreSQL does.

// EventExprError is the event type of a runtime expression error.
const EventExprError = "EXPR_ERROR"

// evalErrorInterval is the least time between two reports of one job.
const evalErrorInterval = time.Second

// EvalErrors collects one job's runtime expression errors (shared by its
// actors; a nil *EvalErrors discards them).
type EvalErrors struct {
	job    uint32
	events SinkMonitor // nil: no event log
	logger *slog.Logger
	now    func() time.Time

	mu struct {
		sync.Mutex
		last       time.Time // last report
		suppressed int64     // rows failed since the last report
	}
}

// NewEvalErrors returns the collector of job's expression errors, reporting
// to events (the event log; may be nil) and logger.
func NewEvalErrors(job uint32, events SinkMonitor, logger *slog.Logger) *EvalErrors {
	if logger == nil {
		logger = slog.Default()
	}
	return &EvalErrors{job: job, events: events, logger: logger, now: time.Now}
}

// Report records that rows rows of actor's input failed with err (the first
// of them): an event and a log line unless the job reported within the last
// evalErrorInterval, in which case they are counted into the next report.
func (e *EvalErrors) Report(actor ActorID, err error, rows int) {
	if e == nil || rows == 0 {
		return
	}
	now := e.now()
	e.mu.Lock()
	if !e.mu.last.IsZero() && now.Sub(e.mu.last) < evalErrorInterval {
		e.mu.suppressed += int64(rows)
		e.mu.Unlock()
		return
	}
	total := e.mu.suppressed + int64(rows)
	e.mu.last, e.mu.suppressed = now, 0
	e.mu.Unlock()
	msg := fmt.Sprintf("%v (%d rows evaluated to NULL since the last report)", err, total)
	e.logger.Warn("streaming job: expression error, value set to NULL", "job", e.job, "actor", actor, "err", err, "rows", total)
	if e.events != nil {
		e.events.Event(SinkEvent{Time: now.UTC(), Type: EventExprError, Job: e.job, Actor: actor, Err: msg})
	}
}

// rowError reports whether err is an error of the row's data (a
// *types.Error other than an internal one), which a streaming job turns into
// NULL, rather than a failure of the job.
func rowError(err error) bool {
	var te *types.Error
	return errors.As(err, &te) && !errors.Is(err, types.ErrInternal) && !errors.Is(err, types.ErrQueryCanceled)
}

// lenientEval evaluates expressions over chunks for a streaming executor:
// vectorised as usual, and row by row when that fails, with NULL for each
// row whose value fails (reported to errs).
type lenientEval struct {
	actor ActorID
	errs  *EvalErrors
	row   []types.Datum
}

func newLenientEval(actx *ActorContext) lenientEval {
	if actx == nil {
		return lenientEval{}
	}
	return lenientEval{actor: actx.ID, errs: actx.EvalErrors}
}

// eval evaluates x over c into out (Init'ed to out.Type by the caller, which
// it re-Inits on the slow path).
func (l *lenientEval) eval(ectx *expr.Ctx, x expr.Expr, c *types.Chunk, out *types.Vector) error {
	err := x.Eval(ectx, c, out)
	if err == nil || !rowError(err) {
		return err
	}
	n := c.Len()
	out.Init(out.Type, n)
	failed, first := 0, err
	for i := 0; i < n; i++ {
		l.row = c.Row(i, l.row[:0])
		d, err := x.EvalRow(ectx, l.row)
		if err != nil {
			if !rowError(err) {
				return err
			}
			if failed == 0 {
				first = err
			}
			failed++
			out.AppendNull()
			continue
		}
		out.Append(&d)
	}
	l.errs.Report(l.actor, first, failed)
	return nil
}

// evalRow evaluates x over one row; a failing value is NULL (reported).
func (l *lenientEval) evalRow(ectx *expr.Ctx, x expr.Expr, row []types.Datum) (types.Datum, error) {
	d, err := x.EvalRow(ectx, row)
	if err != nil {
		if !rowError(err) {
			return types.NullDatum, err
		}
		l.errs.Report(l.actor, err, 1)
		return types.NullDatum, nil
	}
	return d, nil
}
