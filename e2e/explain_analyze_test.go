package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testserver"
)

// analyzeRow is one operator of EXPLAIN ANALYZE's result.
type analyzeRow struct {
	op               string
	fragment, actors int32
	in               *float64
	out, share, busy float64
	cacheHit         *float64
}

// TestExplainAnalyze is issue 16's item 4: EXPLAIN ANALYZE of a running
// job prints its plan, one operator a row, with the rows/s it measured in
// and out, its share of the job's busy time and its state cache's hit rate.
func TestExplainAnalyze(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--barrier-interval-ms", "100"}})
	conn := e2etest.Connect(t, ctx, srv)
	for _, sql := range []string{
		`CREATE TABLE t (k int PRIMARY KEY, v int)`,
		`CREATE TABLE g (id bigint PRIMARY KEY, v int) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '100000000',
			fields.v.min = '0', fields.v.max = '9', datagen.rows.per.second = '2000', datagen.split.num = '2')`,
		// max has no two-phase form: the aggregation sees every row of g.
		`CREATE MATERIALIZED VIEW live AS SELECT v, count(*) AS n, max(id) AS s FROM g GROUP BY v`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	analyze := func(sql string) []analyzeRow {
		t.Helper()
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer rows.Close()
		var names []string
		for _, f := range rows.FieldDescriptions() {
			names = append(names, f.Name)
		}
		if got := strings.Join(names, ","); got != "operator,fragment,actors,rows_in_per_sec,rows_out_per_sec,time_share_pct,busy_pct,cache_hit_pct" {
			t.Fatalf("columns: %s", got)
		}
		var out []analyzeRow
		for rows.Next() {
			var r analyzeRow
			if err := rows.Scan(&r.op, &r.fragment, &r.actors, &r.in, &r.out, &r.share, &r.busy, &r.cacheHit); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return out
	}

	start := time.Now()
	ops := analyze(`EXPLAIN ANALYZE MATERIALIZED VIEW live`)
	if took := time.Since(start); took < time.Second || took > 10*time.Second {
		t.Errorf("EXPLAIN ANALYZE took %v, want about its 1 s window", took)
	}
	if len(ops) < 3 || !strings.HasPrefix(ops[0].op, "StreamMaterialize public.live") || ops[0].in == nil {
		t.Fatalf("plan: %+v", ops)
	}
	var share float64
	var agg *analyzeRow
	for i, o := range ops {
		share += o.share
		if i > 0 && !strings.Contains(o.op, "└─") {
			t.Errorf("operator %q is not drawn below its parent", o.op)
		}
		if strings.Contains(o.op, "StreamHashAgg") && agg == nil {
			agg = &ops[i]
		}
		if o.out < 0 || o.share < 0 || o.busy < 0 || o.busy > 100 {
			t.Errorf("operator %q: out of range: %+v", o.op, o)
		}
	}
	if share < 99 || share > 101 {
		t.Errorf("time shares add up to %v%%, want 100", share)
	}
	// The aggregation sees g's 2000 rows/s and finds its 10 groups cached.
	if agg == nil {
		t.Fatalf("no hash aggregation in %+v", ops)
	}
	if agg.in == nil || *agg.in < 500 || agg.out <= 0 {
		t.Errorf("hash agg: %v rows/s in, %v out; want about 2000 in and some out", agg.in, agg.out)
	}
	if agg.cacheHit == nil || *agg.cacheHit < 50 {
		t.Errorf("hash agg cache hit rate %v, want most lookups hits (10 groups)", agg.cacheHit)
	}

	// A sink: what it takes in.
	if _, err := conn.Exec(ctx, `CREATE SINK s FROM live WITH (connector = 'blackhole')`); err != nil {
		t.Fatal(err)
	}
	ops = analyze(`EXPLAIN (ANALYZE, DURATION '500ms') SINK s`)
	if len(ops) < 2 || !strings.HasPrefix(ops[0].op, "StreamSink") || ops[0].in == nil || *ops[0].in <= 0 {
		t.Errorf("sink s: %+v, want a StreamSink taking rows in", ops)
	}

	// A duration, and the connector table's own job.
	start = time.Now()
	ops = analyze(`EXPLAIN (ANALYZE, DURATION '300ms') TABLE g`)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a 300 ms window took %v", took)
	}
	if len(ops) == 0 || ops[0].out <= 0 {
		t.Errorf("table g's job: %+v, want rows out", ops)
	}

	for sql, code := range map[string]string{
		`EXPLAIN ANALYZE MATERIALIZED VIEW g`:    "42809", // a table
		`EXPLAIN ANALYZE TABLE t`:                "42809", // no job of its own
		`EXPLAIN ANALYZE MATERIALIZED VIEW nope`: "42P01",
		`EXPLAIN ANALYZE SELECT 1`:               "0A000",
	} {
		_, err := conn.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != code {
			t.Errorf("%s: %v, want SQLSTATE %s", sql, err, code)
		}
	}
}
