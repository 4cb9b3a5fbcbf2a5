package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/planner/job"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// explainAnalyzeWindow is how long EXPLAIN ANALYZE measures a running job
// without a DURATION option.
const explainAnalyzeWindow = time.Second

// explainAnalyzeColumns are EXPLAIN ANALYZE's result columns: the operator
// (indented as EXPLAIN's tree), its fragment and actors, then its rates over
// the window: rows per second in (its inputs' output; NULL for a leaf) and
// out, its share of the job's busy time, how busy its actors were (percent
// of their wall time) and the hit rate of its state cache (NULL when it
// looked nothing up).
var explainAnalyzeColumns = []pgwire.Column{
	{Name: "operator", Type: types.TVarchar},
	{Name: "fragment", Type: types.TInt32},
	{Name: "actors", Type: types.TInt32},
	{Name: "rows_in_per_sec", Type: types.TFloat64},
	{Name: "rows_out_per_sec", Type: types.TFloat64},
	{Name: "time_share_pct", Type: types.TFloat64},
	{Name: "busy_pct", Type: types.TFloat64},
	{Name: "cache_hit_pct", Type: types.TFloat64},
}

// explainAnalyze answers EXPLAIN ANALYZE of a running streaming job: it
// samples the job's operator counters, waits the window (cancellable),
// samples again and reports the differences as rates.
func (s *Session) explainAnalyze(ctx context.Context, n *parser.ExplainAnalyze) (pgwire.Result, error) {
	rel, err := s.lookup(n.Name.Schema, n.Name.Name)
	if err != nil {
		return nil, err
	}
	want := map[parser.ObjectKind]catalog.Kind{parser.KindMaterializedView: catalog.KindMaterializedView,
		parser.KindSink: catalog.KindSink, parser.KindTable: catalog.KindTable}[n.Kind]
	if rel.Kind != want {
		return nil, types.Errorf(types.ErrWrongObjectType, "%q is not a %s", rel.Name, strings.ToLower(n.Kind.String()))
	}
	if err := s.checkOwner(rel); err != nil {
		return nil, err
	}
	id := rel.ID
	if rel.Kind == catalog.KindTable {
		if !job.IsConnectorTable(rel) {
			return nil, types.Errorf(types.ErrWrongObjectType, "table %q has no streaming job of its own (only a table fed by a connector has one)", rel.Name)
		}
		id = rel.StateTables[0] // connectorTablePlan's job
	}
	window := n.Duration
	if window == 0 {
		window = explainAnalyzeWindow
	}
	before, ok := s.eng.coord().JobOperators(id)
	if !ok {
		return nil, types.Errorf(types.ErrUndefinedObject, "%s %q has no running streaming job", strings.ToLower(n.Kind.String()), rel.Name)
	}
	if n.Plain {
		return explainJobRows(before), nil
	}
	if len(before) > 0 && before[0].Fragment < 0 {
		return nil, types.Errorf(types.ErrUnsupported, "EXPLAIN ANALYZE needs the streaming jobs' counters, which this server runs without (--stream-stats=false)")
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(window):
	}
	after, ok := s.eng.coord().JobOperators(id)
	elapsed := time.Since(start).Seconds()
	if !ok || len(after) != len(before) {
		return nil, fmt.Errorf("explain analyze: the job of %q stopped or was rebuilt while it was measured; run it again", rel.Name)
	}
	for i := range after {
		if after[i].Node != before[i].Node {
			return nil, fmt.Errorf("explain analyze: the job of %q was rebuilt while it was measured; run it again", rel.Name)
		}
	}
	rows := analyzeRows(before, after, elapsed)
	ts := make([]types.T, len(explainAnalyzeColumns))
	for i, c := range explainAnalyzeColumns {
		ts[i] = c.Type
	}
	c := types.NewChunk(ts, len(rows))
	for _, r := range rows {
		c.AppendRow(r)
	}
	return &staticResult{cols: explainAnalyzeColumns, chunk: c, tag: "EXPLAIN"}, nil
}

// analyzeRows turns two samples of a job's operators, elapsed seconds
// apart, into EXPLAIN ANALYZE's rows. An operator's own busy time is its
// measured time less its inputs' in the same fragment (an exchange's input
// runs in another fragment's actors); clamped at 0, since inputs pumped by
// another goroutine (a join's) overlap it.
func analyzeRows(before, after []coordinator.OperatorStats, elapsed float64) [][]types.Datum {
	n := len(after)
	rowsOut := make([]float64, n)
	busy := make([]float64, n)
	for i := range after {
		rowsOut[i] = float64(after[i].RowsOut - before[i].RowsOut)
		busy[i] = float64(after[i].BusyNanos-before[i].BusyNanos) / 1e9
	}
	// children[i]: the operators right below i (depth one more, before
	// the next operator at i's depth or above).
	children := make([][]int, n)
	for i := range after {
		for j := i + 1; j < n && after[j].Depth > after[i].Depth; j++ {
			if after[j].Depth == after[i].Depth+1 {
				children[i] = append(children[i], j)
			}
		}
	}
	self := make([]float64, n)
	var total float64
	for i := range after {
		self[i] = busy[i]
		for _, c := range children[i] {
			if after[c].Fragment == after[i].Fragment {
				self[i] -= busy[c]
			}
		}
		self[i] = max(self[i], 0)
		total += self[i]
	}
	out := make([][]types.Datum, n)
	for i, o := range after {
		in := types.NullDatum
		if len(children[i]) > 0 {
			var sum float64
			for _, c := range children[i] {
				sum += rowsOut[c]
			}
			in = types.DFloat(round1(sum / elapsed))
		}
		share := 0.0
		if total > 0 {
			share = self[i] / total * 100
		}
		busyPct := 0.0
		if o.Actors > 0 {
			busyPct = self[i] / (elapsed * float64(o.Actors)) * 100
		}
		hit := types.NullDatum
		hits, misses := o.CacheHits-before[i].CacheHits, o.CacheMisses-before[i].CacheMisses
		if hits+misses > 0 {
			hit = types.DFloat(round1(float64(hits) / float64(hits+misses) * 100))
		}
		label := o.Node.Describe()
		if o.Depth > 0 {
			label = strings.Repeat("  ", o.Depth) + "└─" + label
		}
		out[i] = []types.Datum{types.DString(label), types.DInt(int64(o.Fragment)), types.DInt(int64(o.Actors)), in,
			types.DFloat(round1(rowsOut[i] / elapsed)), types.DFloat(round1(share)), types.DFloat(round1(min(busyPct, 100))), hit}
	}
	return out
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

// explainJobColumns are EXPLAIN MATERIALIZED VIEW | SINK's columns: the
// operator (indented as EXPLAIN's tree), its fragment and how many actors
// run it now (its parallelism, which ALTER ... SET PARALLELISM changes).
var explainJobColumns = []pgwire.Column{
	{Name: "operator", Type: types.TVarchar},
	{Name: "fragment", Type: types.TInt32},
	{Name: "parallelism", Type: types.TInt32},
}

// explainJobRows answers EXPLAIN of a running job from its operators.
func explainJobRows(ops []coordinator.OperatorStats) pgwire.Result {
	c := types.NewChunk([]types.T{types.TVarchar, types.TInt32, types.TInt32}, len(ops))
	for _, o := range ops {
		label := o.Node.Describe()
		if o.Depth > 0 {
			label = strings.Repeat("  ", o.Depth) + "└─" + label
		}
		frag := types.NullDatum
		if o.Fragment >= 0 {
			frag = types.DInt(int64(o.Fragment))
		}
		c.AppendRow([]types.Datum{types.DString(label), frag, types.DInt(int64(o.Actors))})
	}
	return &staticResult{cols: explainJobColumns, chunk: c, tag: "EXPLAIN"}
}
