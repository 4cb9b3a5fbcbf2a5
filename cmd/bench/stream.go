package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// workload is one materialized view over base tables. SQL texts name their tables and view
// with a "{s}" placeholder that a run replaces by its own suffix, so runs never share objects.
type workload struct {
	name    string
	tables  []string // CREATE TABLE statements
	preload []string // statements loading the dimension tables before the timed inserts
	view    string   // the view's query
	insert  string   // INSERT of the rows with ids {lo}..{hi} into the timed table
	drop    []string // tables to drop after the run
}

// joinKeys is the number of rows of u (one per join key) in the join workload.
const joinKeys = 10000

// workloads are the three shapes of issue 3. Rows are spread with a multiplicative hash so
// that consecutive ids land in different groups and keys.
var workloads = []workload{
	{
		name:   "filter+project",
		tables: []string{`CREATE TABLE t{s} (id bigint PRIMARY KEY, a bigint, b bigint)`},
		view:   `SELECT id, a * 2 AS a2, b FROM t{s} WHERE a % 3 <> 0`,
		insert: `INSERT INTO t{s} SELECT g, (g::bigint * 7919) % 1000003, g % 1000 FROM generate_series({lo}, {hi}) AS g`,
		drop:   []string{"t{s}"},
	},
	{
		name:   "hash agg",
		tables: []string{`CREATE TABLE t{s} (id bigint PRIMARY KEY, a bigint, b bigint)`},
		view:   `SELECT a % 1000 AS g, count(*) AS n, sum(b) AS s FROM t{s} GROUP BY a % 1000`,
		insert: `INSERT INTO t{s} SELECT g, (g::bigint * 7919) % 1000003, g % 1000 FROM generate_series({lo}, {hi}) AS g`,
		drop:   []string{"t{s}"},
	},
	{
		name: "join",
		tables: []string{
			`CREATE TABLE u{s} (id bigint PRIMARY KEY, k bigint, b bigint)`,
			`CREATE TABLE t{s} (id bigint PRIMARY KEY, k bigint, a bigint)`,
		},
		preload: []string{fmt.Sprintf(`INSERT INTO u{s} SELECT g, g, g %% 97 FROM generate_series(0, %d) AS g`, joinKeys-1)},
		view:    `SELECT t{s}.id, t{s}.k, t{s}.a, u{s}.b FROM t{s} JOIN u{s} ON t{s}.k = u{s}.k`,
		insert:  fmt.Sprintf(`INSERT INTO t{s} SELECT g, (g::bigint * 7919) %% %d, g FROM generate_series({lo}, {hi}) AS g`, joinKeys),
		drop:    []string{"t{s}", "u{s}"},
	},
}

func workloadByName(name string) (workload, bool) {
	for _, w := range workloads {
		if w.name == name {
			return w, true
		}
	}
	return workload{}, false
}

func subst(sql, suffix string) string { return strings.ReplaceAll(sql, "{s}", suffix) }

func insertSQL(w workload, suffix string, lo, hi int) string {
	return strings.NewReplacer("{s}", suffix, "{lo}", fmt.Sprint(lo), "{hi}", fmt.Sprint(hi)).Replace(w.insert)
}

// result is one measured run of a workload on one engine.
type result struct {
	Workload   string  `json:"workload"`
	Engine     string  `json:"engine"` // "tributary" or "postgres-refresh"
	Rows       int     `json:"rows"`   // rows of the full run (measured or extrapolated to)
	Batch      int     `json:"batch"`
	Batches    int     `json:"batches_measured"`
	Seconds    float64 `json:"seconds_measured"`
	RowsPerSec float64 `json:"rows_per_sec"`
	PerCore    float64 `json:"rows_per_sec_per_core,omitempty"`
	MsPerBatch float64 `json:"ms_per_batch"`
	// Extrapolated is set when only Batches batches ran, at base-table sizes SizeFrom..SizeTo
	// rows around the full run's mean size Rows/2; RowsPerSec is then Batch / (mean batch cost).
	Extrapolated bool `json:"extrapolated"`
	SizeFrom     int  `json:"table_rows_from,omitempty"`
	SizeTo       int  `json:"table_rows_to,omitempty"`
	ViewRows     int  `json:"view_rows_checked"`
}

func execSQL(ctx context.Context, conn *pgx.Conn, sql string) error {
	if _, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("%s: %w", shorten(sql), err)
	}
	return nil
}

func shorten(sql string) string {
	if len(sql) > 100 {
		return sql[:100] + "..."
	}
	return sql
}

// setup creates the run's tables and view and preloads the dimension tables. Tributary's views
// maintain changes from their creation on, so the view comes first (PostgreSQL's REFRESH does
// not care).
func setup(ctx context.Context, conn *pgx.Conn, w workload, suffix string) error {
	for _, s := range w.tables {
		if err := execSQL(ctx, conn, subst(s, suffix)); err != nil {
			return err
		}
	}
	if err := execSQL(ctx, conn, subst("CREATE MATERIALIZED VIEW m{s} AS "+w.view, suffix)); err != nil {
		return err
	}
	for _, s := range w.preload {
		if err := execSQL(ctx, conn, subst(s, suffix)); err != nil {
			return err
		}
	}
	return nil
}

// teardown drops the run's view and tables.
func teardown(ctx context.Context, conn *pgx.Conn, w workload, suffix string) error {
	if err := execSQL(ctx, conn, subst("DROP MATERIALIZED VIEW m{s}", suffix)); err != nil {
		return err
	}
	for _, t := range w.drop {
		if err := execSQL(ctx, conn, "DROP TABLE "+subst(t, suffix)); err != nil {
			return err
		}
	}
	return nil
}

// runTributary inserts rows in batches of batch rows, one INSERT statement each (each returns
// once its epoch has committed, the view's changes included), then FLUSHes; the time from the
// first INSERT to the end of FLUSH is the measure. cores divides rows/s into "per core".
func runTributary(ctx context.Context, conn *pgx.Conn, w workload, rows, batch, cores int, suffix string) (result, error) {
	r := result{Workload: w.name, Engine: "tributary", Rows: rows, Batch: batch}
	if err := setup(ctx, conn, w, suffix); err != nil {
		return r, err
	}
	if err := execSQL(ctx, conn, "FLUSH"); err != nil { // the preload is not part of the measure
		return r, err
	}
	start := time.Now()
	for lo := 0; lo < rows; lo += batch {
		if err := execSQL(ctx, conn, insertSQL(w, suffix, lo, min(lo+batch, rows)-1)); err != nil {
			return r, err
		}
		r.Batches++
	}
	if err := execSQL(ctx, conn, "FLUSH"); err != nil {
		return r, err
	}
	r.measured(time.Since(start), rows)
	r.PerCore = r.RowsPerSec / float64(cores)
	n, err := checkView(ctx, conn, w, suffix)
	if err != nil {
		return r, fmt.Errorf("tributary %s: %w", w.name, err)
	}
	r.ViewRows = n
	return r, teardown(ctx, conn, w, suffix)
}

func (r *result) measured(d time.Duration, rows int) {
	r.Seconds = d.Seconds()
	r.RowsPerSec = float64(rows) / r.Seconds
	r.MsPerBatch = r.Seconds * 1000 / float64(r.Batches)
}

// runRefresh inserts in batches of batch rows into PostgreSQL, each followed by REFRESH
// MATERIALIZED VIEW (a full recompute). When the full run needs more than maxBatches batches
// it measures maxBatches consecutive batches around the run's mean table size rows/2 (after an
// untimed bulk load) and extrapolates: REFRESH's cost grows linearly with the table, so the
// mean batch cost over a full run is the cost at its mean size.
func runRefresh(ctx context.Context, conn *pgx.Conn, w workload, rows, batch, maxBatches int, suffix string) (result, error) {
	r := result{Workload: w.name, Engine: "postgres-refresh", Rows: rows, Batch: batch}
	if err := setup(ctx, conn, w, suffix); err != nil {
		return r, err
	}
	total := (rows + batch - 1) / batch
	from, to := 0, rows
	if total > maxBatches {
		r.Extrapolated = true
		from = (rows/2 - maxBatches*batch/2) / batch * batch
		to = from + maxBatches*batch
		if from > 0 {
			if err := execSQL(ctx, conn, insertSQL(w, suffix, 0, from-1)); err != nil {
				return r, err
			}
		}
		for _, s := range []string{"REFRESH MATERIALIZED VIEW m{s}", "VACUUM ANALYZE t{s}"} {
			if err := execSQL(ctx, conn, subst(s, suffix)); err != nil {
				return r, err
			}
		}
		r.SizeFrom, r.SizeTo = from, to
	}
	refresh := subst("REFRESH MATERIALIZED VIEW m{s}", suffix)
	start := time.Now()
	for lo := from; lo < to; lo += batch {
		if err := execSQL(ctx, conn, insertSQL(w, suffix, lo, min(lo+batch, to)-1)); err != nil {
			return r, err
		}
		if err := execSQL(ctx, conn, refresh); err != nil {
			return r, err
		}
		r.Batches++
	}
	elapsed := time.Since(start)
	r.measured(elapsed, to-from)
	if r.Extrapolated {
		r.RowsPerSec = float64(batch) / (r.MsPerBatch / 1000)
	}
	n, err := checkView(ctx, conn, w, suffix)
	if err != nil {
		return r, fmt.Errorf("postgres %s: %w", w.name, err)
	}
	r.ViewRows = n
	return r, teardown(ctx, conn, w, suffix)
}

// checkView compares the view's rows with its query run as a batch SELECT, as multisets of
// text rows, and returns the number of rows.
func checkView(ctx context.Context, conn *pgx.Conn, w workload, suffix string) (int, error) {
	view, err := textRows(ctx, conn, subst("SELECT * FROM m{s}", suffix))
	if err != nil {
		return 0, err
	}
	query, err := textRows(ctx, conn, subst(w.view, suffix))
	if err != nil {
		return 0, err
	}
	if len(view) != len(query) {
		return 0, fmt.Errorf("view has %d rows, its query %d", len(view), len(query))
	}
	for i := range view {
		if view[i] != query[i] {
			return 0, fmt.Errorf("view differs from its query: first difference (sorted) %q vs %q", view[i], query[i])
		}
	}
	if len(view) == 0 {
		return 0, fmt.Errorf("view is empty")
	}
	return len(view), nil
}

// textRows returns the rows of sql in text form, one string per row, sorted.
func textRows(ctx context.Context, conn *pgx.Conn, sql string) ([]string, error) {
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shorten(sql), err)
	}
	defer rows.Close()
	var out []string
	var sb strings.Builder
	for rows.Next() {
		sb.Reset()
		for i, v := range rows.RawValues() {
			if i > 0 {
				sb.WriteByte('|')
			}
			if v == nil {
				sb.WriteString("NULL")
			} else {
				sb.Write(v)
			}
		}
		out = append(out, sb.String())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", shorten(sql), err)
	}
	sort.Strings(out)
	return out, nil
}
