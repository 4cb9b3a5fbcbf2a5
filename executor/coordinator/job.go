package coordinator

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
)

// JobOptions are a job's settings.
type JobOptions struct {
	// Parallelism of hash-distributed fragments (0: the coordinator's default).
	Parallelism int
	// BackfillRate limits backfill reads in rows per second (< 0: unlimited, 0: paused).
	BackfillRate int64
	// Adaptive makes the coordinator steer BackfillRate so that barrier latency
	// stays under TargetLatency (additive increase, multiplicative decrease).
	Adaptive      bool
	TargetLatency time.Duration
	// Statement, Background and BackfillType describe the job for SHOW JOBS.
	Statement    string
	Background   bool
	BackfillType string
	// Started, PercentFloor and RowsFloor carry a rebuilt job's progress
	// over (a rescale, a recovery): when it started, and the share and rows
	// it had shown, which its progress never goes below (its new actors
	// report their restored rows one by one).
	Started      time.Time
	PercentFloor float64
	RowsFloor    int64
}

// JobInfo is a job's backfill progress, for SHOW JOBS and rw_ddl_progress.
type JobInfo struct {
	ID         uint32
	Statement  string
	Background bool
	Started    time.Time
	Rows       int64 // rows backfilled so far
	// Estimate is the rows the backfill will read, extrapolated from the
	// vnodes read so far (0: unknown yet); Percent is the share done, which
	// never goes down.
	Estimate int64
	Percent  float64
	Done     bool
	// BackfillType is "SnapshotBackfill" or "ArrangementBackfill".
	BackfillType string
}

// backfill is one backfilling source's progress.
type backfill struct {
	upstream uint32 // the relation it backfills from
	last     stream.BackfillReport
	vnodes   []stream.VnodeReport // from the last report that had them
	splits   []stream.SplitReport // likewise
}

// job is a running streaming job (a materialized view).
type job struct {
	id     uint32
	actors []stream.ActorID
	// backfills tracks the job's backfilling sources (guarded by Coordinator.progress).
	backfills map[stream.ActorID]*backfill
	info      JobInfo // guarded by Coordinator.progress
	// rowsFloor is the most backfilled rows shown so far (guarded by
	// Coordinator.progress): the rows never go below it.
	rowsFloor int64
	// sources are the job's connector source actors (SetSourceRate).
	sources []stream.ActorID
	// scans maps the job's source-scan actors to the source each reads
	// (SetSourceScanRate).
	scans map[stream.ActorID]uint32
	// adaptive rate control (barrier loop only)
	adaptive bool
	target   time.Duration
	rate     int64
	// upstream lists the outputs this job attached to other actors' dispatchers.
	upstream map[stream.ActorID][]stream.OutputID
	roots    []stream.ActorID // its constant sources (barrier entry points)
	// fragments describe the job's fragments, children first (rw_fragments).
	fragments []FragmentInfo
	// plan is the job's stream plan; ops its nodes' counters and fragment.
	plan plan.StreamNode
	ops  map[plan.StreamNode]opCounters
}

// opCounters are one plan node's counters in each actor of its fragment.
type opCounters struct {
	fragment int
	stats    []*stream.OpStats
}

// FragmentInfo is one fragment of a running job.
type FragmentInfo struct {
	Job uint32
	// ID numbers the job's fragments from 0, children first.
	ID int
	// Kind names the fragment's top operator.
	Kind   string
	Actors []stream.ActorID
	// Vnodes[i] is how many vnodes actor i owns (all of them, VnodeCount,
	// for a fragment of one actor).
	Vnodes []int
	// Stats[i] are actor i's counters (rows in and out, busy and blocked time).
	Stats []*stream.ActorStats
	// Inputs are the fragments feeding this one through exchanges, by ID,
	// with how each is distributed ("hash", "broadcast", "single").
	Inputs []FragmentInput
	// Ops are the counters of every operator in every actor of the fragment.
	Ops []*stream.OpStats
}

// FragmentInput is an edge of a job's fragment graph.
type FragmentInput struct {
	From int
	Dist string
}

// Fragments lists every running job's fragments, by job and fragment.
func (c *Coordinator) Fragments() []FragmentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []FragmentInfo
	for _, j := range c.mu.jobs {
		out = append(out, j.fragments...)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Job != out[b].Job {
			return out[a].Job < out[b].Job
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// AddTable starts the DML source of table id: an actor forwarding the
// table's change chunks (and barriers) to the jobs that read the table.
func (c *Coordinator) AddTable(id uint32, schema []types.T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	aid := c.newActorIDLocked()
	ch := make(chan stream.Message, stream.ChannelCapacity)
	a := &stream.Actor{
		Ctx:        &stream.ActorContext{ID: aid, Store: c.kv},
		Root:       stream.NewMerge(schema, []chan stream.Message{ch}),
		Dispatcher: stream.NewDispatcher(stream.DispatchSimple, nil, nil, nil, schema),
		Report:     c.report,
	}
	r := &running{actor: a}
	c.mu.actors[aid] = r
	c.mu.roots[aid] = &root{msgs: ch, table: true}
	c.mu.sources[id] = aid
	c.mu.outputs[id] = []stream.ActorID{aid}
	if c.mu.started {
		// Its first message is the next barrier: launch it now, so DML can feed it.
		c.launchLocked(r)
		return
	}
	c.mu.starting = append(c.mu.starting, r)
}

// DropTable stops a table's DML source with the next barrier and waits for it.
func (c *Coordinator) DropTable(ctx context.Context, id uint32) error {
	c.mu.Lock()
	aid, ok := c.mu.sources[id]
	if !ok {
		c.mu.Unlock()
		return nil
	}
	delete(c.mu.sources, id)
	delete(c.mu.outputs, id)
	c.mu.tables.Forget(id)
	c.mu.pending = append(c.mu.pending, &stream.StopActors{Actors: map[stream.ActorID]bool{aid: true}})
	epoch := c.mu.epoch
	c.mu.Unlock()
	c.RequestBarrier()
	return c.WaitCommitted(ctx, epoch)
}

func (c *Coordinator) newActorIDLocked() stream.ActorID {
	c.mu.nextActor++
	return c.mu.nextActor
}

func (c *Coordinator) newOutputLocked() *stream.Output {
	c.mu.nextOut++
	return stream.NewOutput(c.mu.nextOut)
}

// AddJob builds the actors of a job whose plan is root (a StreamMaterialize
// for relation id) and attaches them to their upstream relations with the
// next barrier. Before Start (recovery) it wires everything directly and
// returns at once; afterwards it returns when that barrier has committed,
// i.e. the job sees every change after it.
func (c *Coordinator) AddJob(ctx context.Context, id uint32, root plan.StreamNode, opts JobOptions) error {
	c.mu.Lock()
	running := c.started()
	if opts.Parallelism <= 0 {
		opts.Parallelism = c.cfg.Parallelism
	}
	j, adds, err := c.buildJobLocked(id, root, opts)
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("build job %d: %w", id, err)
	}
	c.mu.jobs[id] = j
	if !running {
		// Nothing runs yet: attach the outputs directly.
		for aid, outs := range adds {
			d := c.mu.actors[aid].actor.Dispatcher
			d.Outputs = append(d.Outputs, outs...)
			if r := c.mu.roots[aid]; r != nil {
				r.outputs += len(outs)
			}
		}
		c.mu.Unlock()
		return nil
	}
	if len(adds) > 0 {
		c.mu.pending = append(c.mu.pending, &stream.AddOutputs{Outputs: adds})
	}
	epoch := c.mu.epoch
	c.mu.Unlock()
	c.RequestBarrier()
	return c.WaitCommitted(ctx, epoch)
}

// started reports whether Start ran (the barrier loop is live); call with mu held.
func (c *Coordinator) started() bool { return c.mu.started }

// DropJob detaches and stops a job's actors with the next barrier and waits
// for it to commit.
func (c *Coordinator) DropJob(ctx context.Context, id uint32) error {
	c.mu.Lock()
	j, ok := c.mu.jobs[id]
	if !ok {
		c.mu.Unlock()
		return nil
	}
	delete(c.mu.jobs, id)
	delete(c.mu.outputs, id)
	stop := &stream.StopActors{Actors: map[stream.ActorID]bool{}}
	for _, a := range j.actors {
		stop.Actors[a] = true
	}
	c.mu.pending = append(c.mu.pending, stop)
	if len(j.upstream) > 0 {
		c.mu.pending = append(c.mu.pending, &stream.RemoveOutputs{Outputs: j.upstream})
	}
	epoch := c.mu.epoch
	c.mu.Unlock()
	c.RequestBarrier()
	return c.WaitCommitted(ctx, epoch)
}

// fragment is a piece of a job's plan between exchanges, run by parallel actors.
type fragment struct {
	root     plan.StreamNode
	parallel int
	actors   []*stream.Actor
	// inputs maps each exchange inside this fragment to the fragment below it.
	inputs map[*plan.StreamExchange]*fragment
	// channels[e][j]: the channels parent actor j reads for exchange e.
	channels map[*plan.StreamExchange][][]chan stream.Message
	// handover is a sink fragment's log store handover, shared by its actors.
	handover *stream.SinkHandover
	// ops are the counters of each plan node built in the fragment, by actor.
	ops map[plan.StreamNode][]*stream.OpStats
}

// buildJobLocked cuts the plan into fragments, creates their actors, wires
// exchanges, and returns the outputs to attach on upstream actors.
func (c *Coordinator) buildJobLocked(id uint32, jobRoot plan.StreamNode, opts JobOptions) (*job, map[stream.ActorID][]*stream.Output, error) {
	parallelism := opts.Parallelism
	frags := map[plan.StreamNode]*fragment{}
	var cut func(n plan.StreamNode) *fragment
	cut = func(top plan.StreamNode) *fragment {
		f := &fragment{root: top, inputs: map[*plan.StreamExchange]*fragment{}, channels: map[*plan.StreamExchange][][]chan stream.Message{}}
		var walk func(n plan.StreamNode)
		walk = func(n plan.StreamNode) {
			if e, ok := n.(*plan.StreamExchange); ok && n != top {
				f.inputs[e] = cut(e.Input)
				return
			}
			for _, in := range n.Inputs() {
				walk(in)
			}
		}
		if e, ok := top.(*plan.StreamExchange); ok {
			// A fragment never starts with an exchange; treat it as its input's.
			return cut(e.Input)
		}
		walk(top)
		frags[top] = f
		return f
	}
	top := cut(jobRoot)
	// Parallelism: hash-fed fragments run Parallelism actors, others one.
	var order []*fragment // children before parents
	var visit func(f *fragment)
	visit = func(f *fragment) {
		for _, in := range f.inputs {
			visit(in)
		}
		f.parallel = 1
		for e := range f.inputs {
			if e.Dist == plan.DistHash || e.Dist == plan.DistBroadcast {
				f.parallel = parallelism
			}
		}
		if s, ok := f.root.(*plan.StreamSourceScan); ok && s.Split {
			f.parallel = parallelism // readers sharing out the splits
		}
		if s, ok := f.root.(*plan.StreamConnectorSource); ok && s.Split {
			f.parallel = parallelism
		}
		order = append(order, f)
	}
	visit(top)

	j := &job{id: id, upstream: map[stream.ActorID][]stream.OutputID{}, backfills: map[stream.ActorID]*backfill{},
		info: JobInfo{ID: id, Statement: opts.Statement, Background: opts.Background, Started: time.Now(), BackfillType: opts.BackfillType,
			Percent: opts.PercentFloor},
		adaptive: opts.Adaptive, target: opts.TargetLatency, rate: opts.BackfillRate, rowsFloor: opts.RowsFloor}
	if !opts.Started.IsZero() {
		j.info.Started = opts.Started
	}
	adds := map[stream.ActorID][]*stream.Output{}
	// Create actors (ids, contexts) first, parents need children's counts for channels.
	ids := map[*fragment][]stream.ActorID{}
	for _, f := range order {
		for i := 0; i < f.parallel; i++ {
			aid := c.newActorIDLocked()
			ids[f] = append(ids[f], aid)
			j.actors = append(j.actors, aid)
		}
	}
	// Channels and dispatchers for every exchange: child actor i → parent actor k.
	dispatchers := map[*fragment][]*stream.Dispatcher{}
	for _, f := range order {
		for e, child := range f.inputs {
			chans := make([][]chan stream.Message, f.parallel) // per parent actor
			ds := make([]*stream.Dispatcher, child.parallel)
			for i := 0; i < child.parallel; i++ {
				outs := make([]*stream.Output, f.parallel)
				for k := 0; k < f.parallel; k++ {
					o := c.newOutputLocked()
					outs[k] = o
					chans[k] = append(chans[k], o.Ch)
				}
				kind := stream.DispatchSimple
				var vmap []int
				switch {
				case e.Dist == plan.DistBroadcast:
					kind = stream.DispatchBroadcast
				case e.Dist == plan.DistHash && f.parallel > 1:
					kind, vmap = stream.DispatchHash, stream.VnodeMapFor(f.parallel)
				}
				ds[i] = stream.NewDispatcher(kind, outs, e.Keys, vmap, plan.Types(e.Schema()))
			}
			f.channels[e] = chans
			dispatchers[child] = ds
		}
	}
	// Build every actor first; register them only when all succeeded.
	evalErrs := stream.NewEvalErrors(id, c.cfg.Sinks, c.cfg.Logger)
	var built []*running
	roots := map[stream.ActorID]*root{}
	for _, f := range order {
		vmap := stream.VnodeMapFor(f.parallel)
		for i, aid := range ids[f] {
			var stats *stream.ActorStats
			if !c.cfg.NoStats {
				stats = &stream.ActorStats{}
			}
			actx := &stream.ActorContext{ID: aid, Store: c.kv, Stats: stats, CacheRows: c.cfg.CacheRows, Memory: c.cfg.Memory, Job: id,
				RequestBarrier: c.RequestBarrier, Foreground: c.Foreground,
				BarrierLatency: c.cfg.Barriers.Latency, Sinks: c.cfg.Sinks, SinkInto: c.WriteSinkRows, WaitCommitted: c.WaitCommitted,
				OpenEpoch: c.OpenEpoch, Flushing: c.flushing, EvalErrors: evalErrs}
			if f.parallel > 1 {
				actx.Vnodes = stream.VnodesOf(vmap, i)
			}
			b := &builder{c: c, j: j, f: f, index: i, actx: actx, adds: adds, roots: roots, opts: opts}
			exec, err := b.build(f.root)
			if err != nil {
				// None of the actors built will run: return their caches' memory.
				actx.Release()
				for _, r := range built {
					r.actor.Ctx.Release()
				}
				return nil, nil, err
			}
			a := &stream.Actor{Ctx: actx, Root: exec, Report: c.report, Closers: b.closers}
			if ds := dispatchers[f]; ds != nil {
				a.Dispatcher = ds[i]
			} else {
				// The job's top fragment: its output is the relation's change stream.
				a.Dispatcher = stream.NewDispatcher(stream.DispatchSimple, nil, nil, nil, exec.Schema())
			}
			built = append(built, &running{actor: a, job: id})
		}
	}
	for _, r := range built {
		c.mu.actors[r.actor.Ctx.ID] = r
		c.mu.starting = append(c.mu.starting, r)
	}
	index := map[*fragment]int{}
	for i, f := range order {
		index[f] = i
	}
	j.plan, j.ops = jobRoot, map[plan.StreamNode]opCounters{}
	for i, f := range order {
		var ops []*stream.OpStats
		for n, st := range f.ops {
			j.ops[n] = opCounters{fragment: i, stats: st}
			for _, o := range st {
				if o != nil {
					ops = append(ops, o)
				}
			}
		}
		var inputs []FragmentInput
		for e, child := range f.inputs {
			inputs = append(inputs, FragmentInput{From: index[child], Dist: distName(e.Dist)})
		}
		sort.Slice(inputs, func(a, b int) bool { return inputs[a].From < inputs[b].From })
		kind := f.root.Describe()
		if sp := strings.IndexByte(kind, ' '); sp > 0 {
			kind = kind[:sp]
		}
		vnodes := make([]int, len(ids[f]))
		vmap := stream.VnodeMapFor(f.parallel)
		for k := range vnodes {
			vnodes[k] = codec.VnodeCount
			if f.parallel > 1 {
				vnodes[k] = len(stream.VnodesOf(vmap, k))
			}
		}
		stats := make([]*stream.ActorStats, len(ids[f]))
		for k, aid := range ids[f] {
			if r := c.mu.actors[aid]; r != nil {
				stats[k] = r.actor.Ctx.Stats
			}
		}
		j.fragments = append(j.fragments, FragmentInfo{Job: id, ID: i, Kind: kind, Actors: ids[f], Vnodes: vnodes, Stats: stats, Inputs: inputs, Ops: ops})
	}
	for aid, r := range roots {
		c.mu.roots[aid] = r
		j.roots = append(j.roots, aid)
	}
	c.mu.outputs[id] = ids[top]
	for aid, outs := range adds {
		for _, o := range outs {
			j.upstream[aid] = append(j.upstream[aid], o.ID)
		}
	}
	return j, adds, nil
}

// progressFor returns the Progress callback of an actor backfilling from upstream.
func (c *Coordinator) progressFor(j *job, aid stream.ActorID, upstream uint32) stream.Progress {
	c.progress.Lock()
	bf := &backfill{upstream: upstream}
	j.backfills[aid] = bf
	c.progress.Unlock()
	return func(r stream.BackfillReport) {
		c.progress.Lock()
		if r.Vnodes != nil {
			bf.vnodes = r.Vnodes
		}
		if r.Splits != nil {
			bf.splits = r.Splits
		}
		r.Vnodes, r.Splits = nil, nil
		bf.last = r
		c.progress.Unlock()
		c.progress.cond.Broadcast()
	}
}

// BackfillProgress reports a job's backfill: rows read so far and whether
// every source finished (ok is false for an unknown job).
func (c *Coordinator) BackfillProgress(id uint32) (rows int64, done bool, ok bool) {
	c.mu.Lock()
	j, ok := c.mu.jobs[id]
	c.mu.Unlock()
	if !ok {
		return 0, false, false
	}
	c.progress.Lock()
	defer c.progress.Unlock()
	info := j.summaryLocked()
	return info.Rows, info.Done, true
}

// snapshotRead reports whether every backfill of job id has read its whole
// snapshot (what remains is catching up, which moves at barriers).
func (c *Coordinator) snapshotRead(id uint32) bool {
	c.mu.Lock()
	j, ok := c.mu.jobs[id]
	c.mu.Unlock()
	if !ok {
		return false
	}
	c.progress.Lock()
	defer c.progress.Unlock()
	for _, bf := range j.backfills {
		if bf.last.Covered < 1 {
			return false
		}
	}
	return true
}

// WaitBackfill blocks until job id's backfill finished (or ctx ends, or the
// job goes away), calling tick with the progress at most every interval.
func (c *Coordinator) WaitBackfill(ctx context.Context, id uint32, interval time.Duration, tick func(rows int64)) error {
	stop := context.AfterFunc(ctx, func() { c.progress.cond.Broadcast() })
	defer stop()
	// A waiting client wants the backfill to end soon: once its snapshot is
	// read it moves between phases at barriers, so ask for barriers often then
	// (not before: every epoch rewrites the job's dirty state).
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if c.snapshotRead(id) {
					c.RequestBarrier()
				}
				c.progress.cond.Broadcast()
			}
		}
	}()
	last := time.Now()
	for {
		rows, done, ok := c.BackfillProgress(id)
		if !ok {
			return fmt.Errorf("job %d is gone", id)
		}
		c.mu.Lock()
		failed, stopped := c.mu.failed, c.mu.stopped
		c.mu.Unlock()
		if failed != nil {
			return failed
		}
		if stopped {
			return ErrStopped
		}
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Since(last) >= interval {
			tick(rows)
			last = time.Now()
		}
		c.progress.Lock()
		c.progress.cond.Wait()
		c.progress.Unlock()
	}
}

// jobList returns the running jobs.
func (c *Coordinator) jobList() []*job {
	c.mu.Lock()
	defer c.mu.Unlock()
	jobs := make([]*job, 0, len(c.mu.jobs))
	for _, j := range c.mu.jobs {
		jobs = append(jobs, j)
	}
	return jobs
}

// Jobs lists the jobs whose backfill has not finished.
func (c *Coordinator) Jobs() []JobInfo {
	jobs := c.jobList()
	c.progress.Lock()
	defer c.progress.Unlock()
	var out []JobInfo
	for _, j := range jobs {
		info := j.summaryLocked()
		if !info.Done {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// summaryLocked sums a job's backfills into its JobInfo (the caller holds
// c.progress): rows, the estimate once every source has one, and the share
// done, kept from going down as estimates sharpen.
func (j *job) summaryLocked() JobInfo {
	info := j.info
	info.Done = true
	known := true
	for _, bf := range j.backfills {
		info.Rows += bf.last.Rows
		info.Estimate += bf.last.Estimate
		info.Done = info.Done && bf.last.Done
		// A backfill done with nothing to read (a source actor whose share
		// holds no split) needs no estimate.
		known = known && (bf.last.Estimate > 0 || bf.last.Done && bf.last.Rows == 0)
	}
	if !known {
		info.Estimate = 0
	}
	info.Rows = max(info.Rows, j.rowsFloor) // never fewer than shown before
	j.rowsFloor = info.Rows
	pct := 0.0
	switch {
	case info.Done:
		pct = 100
	case info.Estimate > 0:
		pct = min(100*float64(info.Rows)/float64(info.Estimate), 99.99)
	}
	j.info.Percent = max(j.info.Percent, pct)
	info.Percent = j.info.Percent
	return info
}

// VnodeProgress is one upstream vnode of a running job's backfill.
type VnodeProgress struct {
	Job      uint32
	Actor    stream.ActorID
	Upstream uint32
	stream.VnodeReport
}

// BackfillVnodes lists the per-vnode state of every backfill that has not
// finished, by job, actor and vnode.
func (c *Coordinator) BackfillVnodes() []VnodeProgress {
	var out []VnodeProgress
	c.eachUnfinishedBackfill(func(j *job, aid stream.ActorID, bf *backfill) {
		for _, v := range bf.vnodes {
			out = append(out, VnodeProgress{Job: j.id, Actor: aid, Upstream: bf.upstream, VnodeReport: v})
		}
	})
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Job != y.Job {
			return x.Job < y.Job
		}
		if x.Actor != y.Actor {
			return x.Actor < y.Actor
		}
		return x.Vnode < y.Vnode
	})
	return out
}

// eachUnfinishedBackfill calls fn with every backfill of the jobs whose
// backfill has not finished, holding c.progress.
func (c *Coordinator) eachUnfinishedBackfill(fn func(j *job, aid stream.ActorID, bf *backfill)) {
	jobs := c.jobList()
	c.progress.Lock()
	defer c.progress.Unlock()
	for _, j := range jobs {
		if j.summaryLocked().Done {
			continue
		}
		for aid, bf := range j.backfills {
			fn(j, aid, bf)
		}
	}
}

// FragmentBackfill is one fragment's backfill from one upstream relation,
// summed over the fragment's actors.
type FragmentBackfill struct {
	Job      uint32
	Fragment int
	Upstream uint32
	Rows     int64
	// Estimate is the upstream's snapshot rows extrapolated from the vnodes
	// read so far (0: unknown yet); Done that every actor finished.
	Estimate int64
	Done     bool
}

// BackfillFragments lists the backfills of the jobs whose backfill has not
// finished, by job, fragment and upstream.
func (c *Coordinator) BackfillFragments() []FragmentBackfill {
	type key struct {
		job      uint32
		fragment int
		upstream uint32
	}
	sums := map[key]*FragmentBackfill{}
	c.eachUnfinishedBackfill(func(j *job, aid stream.ActorID, bf *backfill) {
		frag := -1
		for _, f := range j.fragments {
			if slices.Contains(f.Actors, aid) {
				frag = f.ID
				break
			}
		}
		k := key{j.id, frag, bf.upstream}
		fb, ok := sums[k]
		if !ok {
			fb = &FragmentBackfill{Job: j.id, Fragment: frag, Upstream: bf.upstream, Done: true}
			sums[k] = fb
		}
		fb.Rows += bf.last.Rows
		fb.Estimate += bf.last.Estimate
		fb.Done = fb.Done && bf.last.Done
	})
	out := make([]FragmentBackfill, 0, len(sums))
	for _, fb := range sums {
		out = append(out, *fb)
	}
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Job != y.Job {
			return x.Job < y.Job
		}
		if x.Fragment != y.Fragment {
			return x.Fragment < y.Fragment
		}
		return x.Upstream < y.Upstream
	})
	return out
}

// SplitProgress is one split of a running job's shared source backfill.
type SplitProgress struct {
	Job      uint32
	Actor    stream.ActorID
	Upstream uint32
	stream.SplitReport
}

// BackfillSplits lists the per-split state of every shared source backfill
// of the jobs whose backfill has not finished, by job, actor and split.
func (c *Coordinator) BackfillSplits() []SplitProgress {
	var out []SplitProgress
	c.eachUnfinishedBackfill(func(j *job, aid stream.ActorID, bf *backfill) {
		for _, s := range bf.splits {
			out = append(out, SplitProgress{Job: j.id, Actor: aid, Upstream: bf.upstream, SplitReport: s})
		}
	})
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Job != y.Job {
			return x.Job < y.Job
		}
		if x.Actor != y.Actor {
			return x.Actor < y.Actor
		}
		return stream.CompareSplits(x.Split, y.Split) < 0
	})
	return out
}

// SetBackfillRate changes a job's backfill rate limit online: a barrier
// mutation reaches its backfilling actors. opts.BackfillRate is the rate
// (< 0: unlimited, 0: paused); with opts.Adaptive it is the starting rate,
// steered towards opts.TargetLatency from then on.
func (c *Coordinator) SetBackfillRate(ctx context.Context, id uint32, opts JobOptions) error {
	rowsPerSecond := opts.BackfillRate
	c.mu.Lock()
	j, ok := c.mu.jobs[id]
	if !ok {
		c.mu.Unlock()
		return fmt.Errorf("job %d is not running", id)
	}
	j.adaptive, j.target, j.rate = opts.Adaptive, opts.TargetLatency, rowsPerSecond
	m := &stream.SetRateLimit{Actors: map[stream.ActorID]bool{}, RowsPerSecond: rowsPerSecond, Backfill: true}
	c.progress.Lock()
	for aid := range j.backfills {
		m.Actors[aid] = true
	}
	c.progress.Unlock()
	return c.mutateUnlock(ctx, m)
}

// SetSourceRate changes the rate of job id's connector sources online (rows
// per second over all splits; < 0: the connector's own rate; 0: paused) by a
// barrier mutation, and returns once that barrier committed.
func (c *Coordinator) SetSourceRate(ctx context.Context, id uint32, rowsPerSecond int64) error {
	c.mu.Lock()
	j, ok := c.mu.jobs[id]
	if !ok || len(j.sources) == 0 {
		c.mu.Unlock()
		return fmt.Errorf("job %d has no running source", id)
	}
	// Its actors share the rate (a shared source's readers each read a
	// share of the splits).
	m := &stream.SetRateLimit{Actors: map[stream.ActorID]bool{}, RowsPerSecond: stream.ShareRate(rowsPerSecond, len(j.sources))}
	for _, aid := range j.sources {
		m.Actors[aid] = true
	}
	return c.mutateUnlock(ctx, m)
}

// SetSinkRate changes the delivery rate of job id's decoupled sink online
// (rows per second over its actors; < 0: unlimited; 0: paused) by a barrier
// mutation, and returns once that barrier committed.
func (c *Coordinator) SetSinkRate(ctx context.Context, id uint32, rowsPerSecond int64) error {
	c.mu.Lock()
	if _, ok := c.mu.jobs[id]; !ok {
		c.mu.Unlock()
		return fmt.Errorf("job %d is not running", id)
	}
	// The sink runs in the job's top fragment: its actors share the rate.
	top := c.mu.outputs[id]
	m := &stream.SetSinkRate{Actors: map[stream.ActorID]bool{}, RowsPerSecond: stream.ShareRate(rowsPerSecond, len(top))}
	for _, aid := range top {
		m.Actors[aid] = true
	}
	return c.mutateUnlock(ctx, m)
}

// SetSourceScanRate changes online the rate at which every running job reads
// source id (rows per second over its splits; < 0: the connector's own rate;
// 0: paused) by one barrier mutation, and returns once it committed.
func (c *Coordinator) SetSourceScanRate(ctx context.Context, source uint32, rowsPerSecond int64) error {
	c.mu.Lock()
	m := &stream.SetRateLimit{Actors: map[stream.ActorID]bool{}, RowsPerSecond: rowsPerSecond}
	for _, j := range c.mu.jobs {
		for aid, src := range j.scans {
			if src == source {
				m.Actors[aid] = true
			}
		}
	}
	if len(m.Actors) == 0 {
		c.mu.Unlock()
		return nil // nothing reads it now; new readers take the recorded rate
	}
	return c.mutateUnlock(ctx, m)
}

// mutateUnlock queues m for the next barrier, releases c.mu (held by the
// caller), asks for that barrier and waits for it to commit.
func (c *Coordinator) mutateUnlock(ctx context.Context, m stream.Mutation) error {
	c.mu.pending = append(c.mu.pending, m)
	epoch := c.mu.epoch
	c.mu.Unlock()
	c.RequestBarrier()
	return c.WaitCommitted(ctx, epoch)
}

// Adaptive rate bounds, rows per second.
const (
	adaptiveMinRate = 1_000
	adaptiveMaxRate = 10_000_000
	adaptiveStep    = 5_000
)

// steerBackfills adjusts adaptive backfill rates after an epoch whose barrier
// took latency: above a job's target the rate halves, below it the rate grows
// by a quarter plus a step. Changes ride the next barrier. Call with mu held.
func (c *Coordinator) steerBackfillsLocked(latency time.Duration) {
	for _, j := range c.mu.jobs {
		if !j.adaptive {
			continue
		}
		c.progress.Lock()
		done := len(j.backfills) > 0
		actors := map[stream.ActorID]bool{}
		for aid, bf := range j.backfills {
			done = done && bf.last.Done
			actors[aid] = true
		}
		c.progress.Unlock()
		if done || len(actors) == 0 {
			continue
		}
		rate := j.rate
		if latency > j.target {
			rate = max(rate/2, adaptiveMinRate)
		} else {
			rate = min(rate+rate/4+adaptiveStep, adaptiveMaxRate)
		}
		if rate != j.rate {
			j.rate = rate
			c.mu.pending = append(c.mu.pending, &stream.SetRateLimit{Actors: actors, RowsPerSecond: rate, Backfill: true})
			c.cfg.Logger.Debug("adaptive backfill rate", "job", j.id, "rows_per_second", rate, "barrier_latency", latency)
		}
	}
}

// distName names an exchange's distribution for FragmentInput.
func distName(d plan.DistKind) string {
	switch d {
	case plan.DistHash:
		return "hash"
	case plan.DistBroadcast:
		return "broadcast"
	}
	return "single"
}

// OperatorStats is one operator of a running job, its counters summed over
// the actors of its fragment.
type OperatorStats struct {
	Node plan.StreamNode
	// Depth is its depth in the plan tree (the root's is 0); Fragment the
	// fragment that runs it and Actors how many actors do.
	Depth, Fragment, Actors int
	// RowsOut, BusyNanos, CacheHits and CacheMisses sum stream.OpStats.
	RowsOut, BusyNanos, CacheHits, CacheMisses int64
}

// JobOperators lists the operators of running job id in plan order (a
// node, then its inputs' subtrees); ok is false when no such job runs.
func (c *Coordinator) JobOperators(id uint32) (ops []OperatorStats, ok bool) {
	c.mu.Lock()
	j, ok := c.mu.jobs[id]
	c.mu.Unlock()
	if !ok || j.plan == nil {
		return nil, false
	}
	var walk func(n plan.StreamNode, depth int)
	walk = func(n plan.StreamNode, depth int) {
		o := OperatorStats{Node: n, Depth: depth, Fragment: -1}
		if oc, ok := j.ops[n]; ok {
			o.Fragment = oc.fragment
			for _, st := range oc.stats {
				if st == nil {
					continue
				}
				o.Actors++
				o.RowsOut += st.RowsOut.Load()
				o.BusyNanos += st.BusyNanos.Load()
				o.CacheHits += st.CacheHits.Load()
				o.CacheMisses += st.CacheMisses.Load()
			}
		}
		ops = append(ops, o)
		for _, in := range n.Inputs() {
			walk(in, depth+1)
		}
	}
	walk(j.plan, 0)
	return ops, true
}
