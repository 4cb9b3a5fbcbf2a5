package e2etest

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Rows runs a query and returns its rows as sorted text lines, the columns joined by "|" and
// NULL as "NULL".
func Rows(ctx context.Context, conn *pgx.Conn, sql string) ([]string, error) {
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := rows.RawValues()
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// MustRows is Rows, failing the test on an error.
func MustRows(t testing.TB, ctx context.Context, conn *pgx.Conn, query string) []string {
	t.Helper()
	rows, err := Rows(ctx, conn, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return rows
}

// CheckView compares a query's rows with want (in any order).
func CheckView(t testing.TB, ctx context.Context, conn *pgx.Conn, query string, want []string) {
	t.Helper()
	got, err := Rows(ctx, conn, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	sort.Strings(got)
	want = append([]string(nil), want...)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		onlyGot, onlyWant := MultisetDiff(got, want)
		t.Fatalf("%s differs from the produced messages:\nonly in the view: %v\nonly expected: %v", query, onlyGot, onlyWant)
	}
}

// MultisetDiff returns the rows of a not in b and of b not in a, counting duplicates.
func MultisetDiff(a, b []string) (onlyA, onlyB []string) {
	n := map[string]int{}
	for _, r := range a {
		n[r]++
	}
	for _, r := range b {
		n[r]--
	}
	for _, r := range a {
		if n[r] > 0 {
			onlyA = append(onlyA, r)
			n[r]--
		}
	}
	for _, r := range b {
		if n[r] < 0 {
			onlyB = append(onlyB, r)
			n[r]++
		}
	}
	return onlyA, onlyB
}

// Head returns the first dozen rows, and "..." when there are more, for a failure message.
func Head(rows []string) []string {
	if len(rows) > 12 {
		return append(rows[:12:12], "...")
	}
	return rows
}

// QueryText answers sql as Rows's sorted "a|b" lines joined by ";".
func QueryText(ctx context.Context, conn *pgx.Conn, sql string) func() (string, error) {
	return func() (string, error) {
		rows, err := Rows(ctx, conn, sql)
		return strings.Join(rows, ";"), err
	}
}

// WaitRows polls query until it answers want (one row, text form) or the deadline passes.
func WaitRows(t testing.TB, ctx context.Context, query func() (string, error), want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got, err := query()
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %q (err %v), want %q", got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MustExec runs one statement, failing the test on an error.
func MustExec(t testing.TB, ctx context.Context, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// ExecAll runs each statement, failing the test on an error.
func ExecAll(t testing.TB, ctx context.Context, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// BackfillRows reads the running job's backfilled row count from rw_ddl_progress
// ("12.50% (125/1000)"); ok is false when no job runs.
func BackfillRows(ctx context.Context, conn *pgx.Conn) (n int64, ok bool, err error) {
	var progress string
	err = conn.QueryRow(ctx, `SELECT progress FROM rw_catalog.rw_ddl_progress`).Scan(&progress)
	if err == pgx.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	open := strings.LastIndexByte(progress, '(')
	slash := strings.LastIndexByte(progress, '/')
	n, err = strconv.ParseInt(progress[open+1:slash], 10, 64)
	return n, true, err
}
