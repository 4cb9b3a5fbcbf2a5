package coordinator

import (
	"fmt"

	"github.com/tributary/tributary/catalog"

	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// builder builds one actor's executors from its fragment's plan nodes.
type builder struct {
	c       *Coordinator
	j       *job
	f       *fragment
	index   int // the actor's index within its fragment
	actx    *stream.ActorContext
	adds    map[stream.ActorID][]*stream.Output
	roots   map[stream.ActorID]*root // constant sources, registered once the job is built
	opts    JobOptions
	closers []func()
	// backfills are the actor's backfilling sources, which the watermark
	// filters over them hold their watermarks for.
	backfills map[*plan.StreamSource]stream.Backfiller
}

// build builds node n and its inputs within the fragment, each counting
// into its own OpStats (EXPLAIN ANALYZE of the running job).
func (b *builder) build(n plan.StreamNode) (stream.Executor, error) {
	exec, err := b.buildNode(n)
	if err != nil || b.c.cfg.NoStats {
		return exec, err
	}
	st := &stream.OpStats{}
	if b.f.ops == nil {
		b.f.ops = map[plan.StreamNode][]*stream.OpStats{}
	}
	if b.f.ops[n] == nil {
		b.f.ops[n] = make([]*stream.OpStats, b.f.parallel)
	}
	b.f.ops[n][b.index] = st
	if cc, ok := exec.(stream.OpCounter); ok {
		cc.CountInto(st)
	}
	return stream.Profile(exec, b.actx.Stats, st), nil
}

// buildNode is the one type switch from stream plan nodes to executors.
func (b *builder) buildNode(n plan.StreamNode) (stream.Executor, error) {
	switch n := n.(type) {
	case *plan.StreamExchange:
		chans := b.f.channels[n]
		if chans == nil {
			return nil, fmt.Errorf("exchange %s has no input fragment", n.Describe())
		}
		return b.merge(plan.Types(n.Schema()), chans[b.index]), nil
	case *plan.StreamSource:
		return b.source(n)
	case *plan.StreamValues:
		ch := make(chan *stream.Barrier, 1)
		b.roots[b.actx.ID] = &root{barriers: ch}
		return stream.NewValues(b.actx, n, ch)
	case *plan.StreamSourceScan:
		return b.sourceScan(n)
	case *plan.StreamConnectorSource:
		return b.connectorSource(n)
	case *plan.StreamProject:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewProject(b.actx, n, in)
	case *plan.StreamFilter:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewFilter(b.actx, n, in)
	case *plan.StreamGapFill:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewGapFill(b.actx, n, in)
	case *plan.StreamChangelog:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewChangelog(n, in), nil
	case *plan.StreamUnnest:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewUnnest(b.actx, n, in), nil
	case *plan.StreamLocalAgg:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewLocalAgg(n, in)
	case *plan.StreamAgg:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewAgg(b.actx, n, in)
	case *plan.StreamHashJoin:
		left, err := b.build(n.Left)
		if err != nil {
			return nil, err
		}
		right, err := b.build(n.Right)
		if err != nil {
			return nil, err
		}
		exec, aligner, err := stream.NewHashJoin(b.actx, n, left, right)
		if aligner != nil {
			b.closers = append(b.closers, aligner.Close)
		}
		return exec, err
	case *plan.StreamDynamicFilter:
		left, err := b.build(n.Left)
		if err != nil {
			return nil, err
		}
		right, err := b.build(n.Right)
		if err != nil {
			return nil, err
		}
		exec, aligner, err := stream.NewDynamicFilter(b.actx, n, left, right)
		if aligner != nil {
			b.closers = append(b.closers, aligner.Close)
		}
		return exec, err
	case *plan.StreamTemporalJoin:
		left, err := b.build(n.Left)
		if err != nil {
			return nil, err
		}
		return stream.NewTemporalJoin(b.actx, n, left)
	case *plan.StreamTopN:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewTopN(b.actx, n, in)
	case *plan.StreamOverWindow:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewOverWindow(b.actx, n, in)
	case *plan.StreamUnion:
		// The planner puts an exchange under every union input: the union is a
		// merge of all their channels.
		var chans []chan stream.Message
		for _, in := range n.Ins {
			e, ok := in.(*plan.StreamExchange)
			if !ok {
				return nil, fmt.Errorf("union input %s is not an exchange", in.Describe())
			}
			chans = append(chans, b.f.channels[e][b.index]...)
		}
		return b.merge(plan.Types(n.Schema()), chans), nil
	case *plan.StreamHopWindow:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewHopWindow(b.actx, n, in)
	case *plan.StreamWatermarkFilter:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		env, err := b.watermarkEnv(n)
		if err != nil {
			return nil, err
		}
		return stream.NewWatermarkFilter(b.actx, n, in, env)
	case *plan.StreamTemporalFilter:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewTemporalFilter(b.actx, n, in)
	case *plan.StreamMaterialize:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		return stream.NewMaterialize(b.actx, n, in)
	case *plan.StreamSink:
		in, err := b.build(n.Input)
		if err != nil {
			return nil, err
		}
		if b.index == 0 {
			// The log store's entries of earlier builds (of epochs through
			// the one committed now) are handed over by actor 0.
			b.f.handover = stream.NewSinkHandover(b.c.kv.CommittedEpoch())
		}
		exec, closer, err := stream.NewSink(b.actx, n, in, b.f.parallel, b.f.handover, b.index == 0)
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, closer)
		return exec, nil
	}
	return nil, fmt.Errorf("no stream executor for %T", n)
}

// source subscribes to the change stream of an upstream table or
// materialized view: one new output on each of its output actors.
func (b *builder) source(n *plan.StreamSource) (stream.Executor, error) {
	ups := b.c.mu.outputs[n.Relation.ID]
	if len(ups) == 0 {
		return nil, fmt.Errorf("relation %s has no running stream", n.Relation.QualifiedName())
	}
	if b.f.parallel != 1 {
		return nil, fmt.Errorf("a source fragment must run one actor")
	}
	chans := make([]chan stream.Message, 0, len(ups))
	for _, up := range ups {
		o := b.c.newOutputLocked()
		b.adds[up] = append(b.adds[up], o)
		chans = append(chans, o.Ch)
	}
	merge := b.merge(plan.Types(n.Schema()), chans)
	if !n.Backfill {
		return merge, nil
	}
	progress := b.c.progressFor(b.j, b.actx.ID, n.Relation.ID)
	if n.Relation.Kind == catalog.KindSource {
		exec, closer, err := stream.NewSourceBackfill(b.actx, n, merge, progress, b.opts.BackfillRate, b.c.cfg.Sinks)
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, closer)
		b.noteBackfill(n, exec)
		return exec, nil
	}
	newBackfill := stream.NewBackfill
	if n.Snapshot {
		newBackfill = stream.NewSnapshotBackfill
	}
	exec, closer, err := newBackfill(b.actx, n, merge, progress, b.opts.BackfillRate)
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, closer)
	b.noteBackfill(n, exec)
	return exec, nil
}

// noteBackfill records exec, n's backfill, for the watermark filter over it.
func (b *builder) noteBackfill(n *plan.StreamSource, exec stream.Executor) {
	if bf, ok := exec.(stream.Backfiller); ok {
		if b.backfills == nil {
			b.backfills = map[*plan.StreamSource]stream.Backfiller{}
		}
		b.backfills[n] = bf
	}
}

// watermarkEnv tells the watermark filter n (built) about the scan under
// it: where each row's split comes from and the backfill to wait for. The
// filter keeps every split's watermark in its one actor: the scan's
// fragment runs one actor, which reads every split.
func (b *builder) watermarkEnv(n *plan.StreamWatermarkFilter) (stream.WatermarkEnv, error) {
	env := stream.WatermarkEnv{SplitCol: -1}
	if b.f.parallel != 1 {
		return env, fmt.Errorf("a watermark filter must run one actor, not %d", b.f.parallel)
	}
	leaf := n.Input
	for len(leaf.Inputs()) == 1 {
		leaf = leaf.Inputs()[0]
	}
	s, ok := leaf.(*plan.StreamSource)
	if !ok {
		return env, nil
	}
	env.Backfill = b.backfills[s]
	rel := s.Relation
	switch {
	case rel.Kind == catalog.KindSource:
		env.SplitCol = stream.SplitColumn(rel, n.Input.Schema())
	case rel.Kind == catalog.KindMaterializedView && rel.Watermark != nil:
		// The view passes on its job's watermark: cap ours by it.
		up := b.c.mu.jobs[rel.ID]
		if up == nil || up.plan == nil {
			return env, fmt.Errorf("materialized view %s has no running job", rel.QualifiedName())
		}
		if col := rel.ColumnIndex(rel.Watermark.Column); col >= 0 {
			if f := plan.WatermarkSource(up.plan, col); f != nil && len(f.State()) > 0 {
				st := f.State()[0]
				env.Cap = &st
			}
		}
	}
	return env, nil
}

// sourceScan builds a source's reader (a shared source's reader job, or a
// generator read in a view's or sink's job): a root fed barriers like a
// constant source. A bounded source reports its progress as the job's
// backfill, so a blocking CREATE, WAIT and SHOW JOBS follow it.
func (b *builder) sourceScan(n *plan.StreamSourceScan) (stream.Executor, error) {
	if b.f.parallel != 1 && !n.Split {
		return nil, fmt.Errorf("a source fragment must run one actor")
	}
	_, src, err := stream.OpenSource(n.Source)
	if err != nil {
		return nil, err
	}
	var report stream.Progress
	if src.TotalRows() >= 0 {
		report = b.c.progressFor(b.j, b.actx.ID, n.Source.ID)
	}
	b.j.sources = append(b.j.sources, b.actx.ID)
	if b.j.scans == nil {
		b.j.scans = map[stream.ActorID]uint32{}
	}
	b.j.scans[b.actx.ID] = n.Source.ID
	ch := make(chan *stream.Barrier, 1)
	b.roots[b.actx.ID] = &root{barriers: ch}
	exec, closer, err := stream.NewSourceScan(b.actx, n, ch, report, b.c.cfg.Sinks, stream.SplitShare{Index: b.index, Of: b.f.parallel})
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, closer)
	return exec, nil
}

// connectorSource builds the root of a connector table's job: fed barriers
// like a constant source, writing its rows into the table as DML does. A
// bounded source, or one whose splits begin with a finite part (a CDC
// table's copy, which the job's backfill rate limits), reports its progress
// as the job's backfill, so a blocking CREATE, WAIT and SHOW JOBS follow it
// until its last row is in.
func (b *builder) connectorSource(n *plan.StreamConnectorSource) (stream.Executor, error) {
	conn, src, err := stream.OpenSource(n.Table)
	if err != nil {
		return nil, err
	}
	var report stream.Progress
	if stream.ReportsProgress(src) {
		report = b.c.progressFor(b.j, b.actx.ID, n.Table.ID)
	}
	b.j.sources = append(b.j.sources, b.actx.ID)
	if b.c.started() && !conn.Shared && !src.Upsert() {
		// A new table (recovery builds before Start) of a generator: nothing
		// but its source has written it yet, and its keys never repeat. An
		// external system's messages may repeat a key or delete one.
		b.c.mu.fresh[n.Table.ID] = true
	}
	ch := make(chan *stream.Barrier, 1)
	b.roots[b.actx.ID] = &root{barriers: ch}
	exec, closer, err := stream.NewConnectorSource(b.actx, n, ch, &tableWriter{c: b.c, rel: n.Table}, report, b.c.cfg.Sinks, b.opts.BackfillRate,
		stream.SplitShare{Index: b.index, Of: b.f.parallel})
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, closer)
	return exec, nil
}

// merge is a receiver over chans counting into the actor's stats.
func (b *builder) merge(schema []types.T, chans []chan stream.Message) *stream.Merge {
	m := stream.NewMerge(schema, chans)
	m.Stats = b.actx.Stats
	return m
}
