package stream

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector/datagen"
	"github.com/tributary/tributary/connector/nexmark"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// TableWriter writes a connector source's rows into its table, exactly as
// DML does: into the table's state and its change stream, in one epoch.
type TableWriter interface {
	// Write writes c's rows in epoch and returns true, or returns false and
	// writes nothing when epoch is no longer the open epoch (its barrier is
	// on its way to the source) or the table is gone.
	Write(ctx context.Context, epoch uint64, c *types.Chunk) (bool, error)
}

// Generator is a connector's row generator, read split by split: the rows
// of split s are a pure function of s and their offset (how many of its rows
// came before), so a split resumes exactly from its committed offset.
type Generator interface {
	// SplitCount is the number of splits.
	SplitCount() int
	// TotalRows is the number of rows over all splits, or -1 when the
	// source never ends.
	TotalRows() int64
	// DefaultRate is the rows per second over all splits when no
	// source_rate_limit applies (-1: as fast as possible).
	DefaultRate() int64
	// ChunkRows bounds the rows of one chunk.
	ChunkRows() int
	// Fill appends up to limit rows of split, from its offset off, as Insert
	// rows to dst (whose columns are the table's) and returns how many: fewer
	// than limit only when the split is exhausted.
	Fill(dst *types.Chunk, split int, off int64, limit int) int
}

// ParseConnector checks a connector table's options against its columns
// (the errors CREATE TABLE reports) and returns its generator. Keys are
// matched case-insensitively.
func ParseConnector(rel *catalog.Relation, props map[string]string) (Generator, error) {
	var name string
	for k, v := range props {
		if strings.EqualFold(k, "connector") {
			name = v
		}
	}
	switch {
	case strings.EqualFold(name, datagen.Name):
		cols := make([]datagen.Column, len(rel.Columns))
		for i, c := range rel.Columns {
			cols[i] = datagen.Column{Name: c.Name, Type: c.Type, RowIndex: isRowID(c)}
		}
		cfg, err := datagen.Parse(props, cols)
		if err != nil {
			return nil, err
		}
		return datagenGen{cfg}, nil
	case strings.EqualFold(name, nexmark.Name):
		cols := make([]nexmark.Column, len(rel.Columns))
		for i, c := range rel.Columns {
			cols[i] = nexmark.Column{Name: c.Name, Type: c.Type, RowIndex: isRowID(c)}
		}
		cfg, err := nexmark.Parse(props, cols)
		if err != nil {
			return nil, err
		}
		return nexmarkGen{cfg}, nil
	}
	return nil, types.Errorf(types.ErrUnsupported, "connector %q is not supported (supported: datagen, nexmark)", name)
}

func isRowID(c catalog.Column) bool { return c.Hidden && c.Name == catalog.RowIDColumn }

type datagenGen struct{ *datagen.Config }

func (g datagenGen) SplitCount() int    { return g.Splits }
func (g datagenGen) TotalRows() int64   { return g.Total }
func (g datagenGen) DefaultRate() int64 { return g.RowsPerSecond }
func (g datagenGen) ChunkRows() int     { return types.DefaultChunkSize }

type nexmarkGen struct{ *nexmark.Config }

func (g nexmarkGen) SplitCount() int    { return g.Splits }
func (g nexmarkGen) TotalRows() int64   { return g.Total() }
func (g nexmarkGen) DefaultRate() int64 { return g.RowsPerSecond() }
func (g nexmarkGen) ChunkRows() int     { return g.MaxChunk }

// sourceConfig is a connector source's fixed configuration.
type sourceConfig struct {
	gen    Generator
	ts     []types.T
	rel    *catalog.Relation
	writer TableWriter
	report Progress
}

// sourceExec is the root of a connector table's job: between barriers it
// reads rows from its splits at the allowed rate and writes them into the
// table through a TableWriter, in the epoch its last barrier opened; each
// split's offset goes to a state table with the same epoch, so a restart
// resumes exactly after the last committed rows. It emits only barriers,
// and never makes one wait: a barrier is handled as soon as it arrives.
type sourceExec struct {
	sourceConfig
	actx     *ActorContext
	barriers <-chan *Barrier
	state    *state.Table

	// per-run state
	started   bool
	done      bool
	epoch     uint64 // the epoch rows are written in (0 before the first barrier)
	offsets   []int64
	dirty     []bool
	next      int          // the split to read next (round robin)
	pending   *types.Chunk // rows read but refused (their epoch had ended)
	pendSplit int
	blocked   bool // a write was refused: wait for the barrier
	exhausted bool
	rate      int64 // rows per second over all splits (< 0 unlimited, 0 paused)
	tokens    float64
	last      time.Time
	produced  int64
	epochRows int64 // rows written in the current epoch
	asked     bool  // a barrier was requested for this epoch
	// emit: the rows are this executor's output (a source scan), not
	// written into a table; out is the chunk to return next.
	emit bool
	out  *types.Chunk
}

// SourceEpochRows bounds the rows a connector source writes in one epoch;
// then it asks for the next barrier and waits for it. Every row of an epoch
// is held in memory (table buffers, the commit batch) until the epoch
// commits, so this bounds the memory and the commit time an unthrottled
// source causes.
const SourceEpochRows = 32 * types.DefaultChunkSize

// NewConnectorSource returns the executor of a StreamConnectorSource fed by
// barriers; w writes its rows into the table and report (may be nil)
// receives its progress for bounded sources.
func NewConnectorSource(actx *ActorContext, n *plan.StreamConnectorSource, barriers <-chan *Barrier, w TableWriter, report Progress) (Executor, error) {
	gen, err := ParseConnector(n.Table, n.Props)
	if err != nil {
		return nil, fmt.Errorf("source of %s: %w", n.Table.QualifiedName(), err)
	}
	st, err := actx.NewTable(stateSchema(n.State))
	if err != nil {
		return nil, fmt.Errorf("source of %s: %w", n.Table.QualifiedName(), err)
	}
	rate := gen.DefaultRate()
	if n.RateLimit >= 0 {
		rate = n.RateLimit
	}
	return &sourceExec{
		sourceConfig: sourceConfig{gen: gen, ts: n.Table.ColumnTypes(), rel: n.Table, writer: w, report: report},
		actx:         actx, barriers: barriers, state: st, rate: rate,
		offsets: make([]int64, gen.SplitCount()), dirty: make([]bool, gen.SplitCount()),
	}, nil
}

// NewSourceScan returns the executor of a StreamSourceScan: a connector
// source whose rows are its output (a view or sink over a CREATE SOURCE),
// fed barriers like a constant source.
func NewSourceScan(actx *ActorContext, n *plan.StreamSourceScan, barriers <-chan *Barrier, report Progress) (Executor, error) {
	gen, err := ParseConnector(n.Source, n.Props)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", n.Source.QualifiedName(), err)
	}
	if len(n.State()) != 1 {
		return nil, fmt.Errorf("source %s: no split state assigned", n.Source.QualifiedName())
	}
	st, err := actx.NewTable(stateSchema(n.State()[0]))
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", n.Source.QualifiedName(), err)
	}
	rate := gen.DefaultRate()
	if n.RateLimit >= 0 {
		rate = n.RateLimit
	}
	return &sourceExec{
		sourceConfig: sourceConfig{gen: gen, ts: n.Source.ColumnTypes(), rel: n.Source, report: report},
		actx:         actx, barriers: barriers, state: st, rate: rate, emit: true,
		offsets: make([]int64, gen.SplitCount()), dirty: make([]bool, gen.SplitCount()),
	}, nil
}

func stateSchema(t plan.StateTable) state.Schema {
	return state.Schema{TableID: t.ID, Types: t.Types, PK: t.PK, PKDesc: t.PKDesc, DistKey: t.Dist}
}

func (e *sourceExec) Schema() []types.T {
	if e.emit {
		return e.ts
	}
	return nil
}

func (e *sourceExec) Next(ctx context.Context) (Message, error) {
	if e.done {
		return Message{}, io.EOF
	}
	for {
		select {
		case b := <-e.barriers:
			return e.onBarrier(ctx, b)
		default:
		}
		wait := e.wait(time.Now())
		if wait == 0 {
			if err := e.produce(ctx); err != nil {
				return Message{}, fmt.Errorf("source of %s: %w", e.rel.QualifiedName(), err)
			}
			if e.out != nil {
				c := e.out
				e.out = nil
				return ChunkMsg(c), nil
			}
			continue
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			fire = timer.C
		}
		select {
		case b := <-e.barriers:
			if timer != nil {
				timer.Stop()
			}
			return e.onBarrier(ctx, b)
		case <-fire:
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return Message{}, ctx.Err()
		}
	}
}

// wait returns 0 when a chunk may be read now, how long until one may, or
// -1 when only a barrier can change that.
func (e *sourceExec) wait(now time.Time) time.Duration {
	if e.epoch == 0 || e.blocked || e.exhausted || e.rate == 0 {
		return -1
	}
	if e.epochRows >= SourceEpochRows {
		if !e.asked && e.actx.RequestBarrier != nil {
			e.asked = true
			e.actx.RequestBarrier()
		}
		return -1
	}
	if e.rate < 0 || e.pending != nil {
		return 0
	}
	// Tokens accrue at the rate, up to a tenth of a second's worth; a chunk
	// is read once a full one (or the whole burst) is available.
	burst := max(float64(e.rate)/10, 1)
	e.tokens = min(burst, e.tokens+now.Sub(e.last).Seconds()*float64(e.rate))
	e.last = now
	want := min(burst, float64(e.gen.ChunkRows()))
	if e.tokens >= want {
		return 0
	}
	return max(time.Duration((want-e.tokens)/float64(e.rate)*float64(time.Second)), time.Millisecond)
}

// produce reads one chunk (or retries the refused one) and writes it.
func (e *sourceExec) produce(ctx context.Context) error {
	if e.pending == nil {
		n := e.gen.ChunkRows()
		if e.rate > 0 {
			n = min(n, int(e.tokens))
		}
		for i := 0; i < len(e.offsets); i++ {
			s := (e.next + i) % len(e.offsets)
			c := types.NewChunk(e.ts, n)
			if e.gen.Fill(c, s, e.offsets[s], n) > 0 {
				e.pending, e.pendSplit = c, s
				break
			}
		}
		if e.pending == nil {
			e.exhausted = true
			// The last rows commit (and a bounded source's job finishes)
			// with the next barrier: ask for it rather than wait for the
			// interval.
			if e.actx.RequestBarrier != nil {
				e.actx.RequestBarrier()
			}
			return nil
		}
	}
	if e.emit {
		e.out = e.pending // the stream itself: it belongs to the open epoch
	} else {
		ok, err := e.writer.Write(ctx, e.epoch, e.pending)
		if err != nil {
			return err
		}
		if !ok {
			e.blocked = true
			return nil
		}
	}
	n := e.pending.Len()
	e.offsets[e.pendSplit] += int64(n)
	e.dirty[e.pendSplit] = true
	e.produced += int64(n)
	e.epochRows += int64(n)
	e.tokens -= float64(n)
	e.next = e.pendSplit + 1
	e.pending = nil
	return nil
}

func (e *sourceExec) onBarrier(ctx context.Context, b *Barrier) (Message, error) {
	if b == nil {
		return Message{}, fmt.Errorf("source of %s: barrier channel closed without a stop barrier", e.rel.QualifiedName())
	}
	if !e.started {
		e.started = true
		if err := e.load(ctx); err != nil {
			return Message{}, fmt.Errorf("source of %s: %w", e.rel.QualifiedName(), err)
		}
		e.last = time.Now()
	}
	for s, d := range e.dirty {
		if d {
			if err := e.state.Insert([]types.Datum{types.DInt(int64(s)), types.DInt(e.offsets[s])}); err != nil {
				return Message{}, fmt.Errorf("source of %s: save split %d: %w", e.rel.QualifiedName(), s, err)
			}
			e.dirty[s] = false
		}
	}
	b.ForEachMutation(func(m Mutation) {
		if r, ok := m.(*SetRateLimit); ok && r.Actors[e.actx.ID] {
			e.rate = r.RowsPerSecond
			if e.rate < 0 {
				e.rate = e.gen.DefaultRate()
			}
		}
	})
	if b.Stops(e.actx.ID) {
		e.done = true
		return BarrierMsg(b), nil
	}
	e.epoch = b.Epoch.Curr
	e.blocked, e.epochRows, e.asked = false, 0, false
	e.reportProgress()
	return BarrierMsg(b), nil
}

// load reads the committed split offsets; a split with none starts at 0.
func (e *sourceExec) load(ctx context.Context) error {
	it, err := e.state.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
	if err != nil {
		return err
	}
	defer it.Close()
	for {
		if err := it.Next(); err != nil {
			if err == io.EOF {
				return it.Close()
			}
			return err
		}
		row := it.Row()
		s := int(row[0].I)
		if s < 0 || s >= len(e.offsets) {
			return fmt.Errorf("split %d saved, but the source has %d splits", s, len(e.offsets))
		}
		e.offsets[s] = row[1].I
		e.produced += row[1].I
	}
}

// reportProgress tells a bounded source's progress: done once every row has
// been written in an epoch now sealed (the barrier being handled seals it).
func (e *sourceExec) reportProgress() {
	total := e.gen.TotalRows()
	if e.report == nil || total < 0 {
		return
	}
	if !e.exhausted && e.produced >= total {
		e.exhausted = true
	}
	r := BackfillReport{Rows: e.produced, Estimate: total, Done: e.exhausted && e.pending == nil}
	if total > 0 {
		r.Covered = float64(e.produced) / float64(total)
	}
	e.report(r)
}
