package e2e

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestPgxArrays checks arrays on the wire both ways: pgx sends []int32,
// []string, []int64 and []*string parameters in binary (text in the simple
// protocol), = ANY($1) takes an array parameter, and array columns scan
// back into slices, NULL elements included; COPY FROM carries arrays.
func TestPgxArrays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)

	if _, err := conn.Exec(ctx, `CREATE TABLE pa (id int PRIMARY KEY, nums int[], tags text[], big bigint[], f float8[])`); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		id   int32
		nums []int32
		tags []string
	}{
		{1, []int32{1, 2, 3}, []string{"a", "b c", `"q"`}},
		{2, []int32{}, []string{"NULL", ""}},
		{3, nil, []string{"x"}},
	}
	for _, r := range rows {
		if _, err := conn.Exec(ctx, `INSERT INTO pa (id, nums, tags) VALUES ($1, $2, $3)`, r.id, r.nums, r.tags); err != nil {
			t.Fatalf("insert %d: %v", r.id, err)
		}
	}
	for _, r := range rows {
		var nums []int32
		var tags []string
		if err := conn.QueryRow(ctx, `SELECT nums, tags FROM pa WHERE id = $1`, r.id).Scan(&nums, &tags); err != nil {
			t.Fatalf("select %d: %v", r.id, err)
		}
		if !slices.Equal(nums, r.nums) || (nums == nil) != (r.nums == nil) || !slices.Equal(tags, r.tags) {
			t.Fatalf("row %d: got %v %q, want %v %q", r.id, nums, tags, r.nums, r.tags)
		}
	}

	ids := func(sql string, args ...any) ([]int32, error) {
		r, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(r, pgx.RowTo[int32])
	}
	// = ANY($1) with an array parameter, in binary and in text.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		got, err := ids(`SELECT id FROM pa WHERE id = ANY($1) ORDER BY id`, mode, []int32{3, 1, 7})
		if err != nil || !slices.Equal(got, []int32{1, 3}) {
			t.Fatalf("mode %v: = ANY($1): %v, %v", mode, got, err)
		}
		got, err = ids(`SELECT id FROM pa WHERE $1 = ANY(tags) ORDER BY id`, mode, "b c")
		if err != nil || !slices.Equal(got, []int32{1}) {
			t.Fatalf("mode %v: $1 = ANY(tags): %v, %v", mode, got, err)
		}
	}

	// NULL elements, bigint and float arrays, and an array built by the query.
	s := "s"
	if _, err := conn.Exec(ctx, `UPDATE pa SET big = $1, f = $2, tags = $3 WHERE id = 3`,
		[]int64{1 << 40, -1}, []float64{1.5, -0.25}, []*string{&s, nil}); err != nil {
		t.Fatal(err)
	}
	var big []int64
	var f []float64
	var tags []*string
	var built []int32
	if err := conn.QueryRow(ctx, `SELECT big, f, tags, ARRAY[id, id + 1] || nums FROM pa WHERE id = 3`).Scan(&big, &f, &tags, &built); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(big, []int64{1 << 40, -1}) || !slices.Equal(f, []float64{1.5, -0.25}) || len(tags) != 2 || *tags[0] != "s" || tags[1] != nil || !slices.Equal(built, []int32{3, 4}) {
		t.Fatalf("got %v %v %v %v", big, f, tags, built)
	}
	var agg pgtype.FlatArray[pgtype.Text]
	if err := conn.QueryRow(ctx, `SELECT array_agg(tags[1] ORDER BY id) FROM pa`).Scan(&agg); err != nil || len(agg) != 3 || agg[0].String != "a" || agg[1].String != "NULL" || agg[2].String != "s" {
		t.Fatalf("array_agg: %v, %v", agg, err)
	}

	// COPY FROM with array columns (pgx sends them in binary).
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"pa"}, []string{"id", "nums", "tags"},
		pgx.CopyFromRows([][]any{{int32(10), []int32{7, 8}, []string{"c1"}}, {int32(11), nil, []string{}}}))
	if err != nil || n != 2 {
		t.Fatalf("copy: %d, %v", n, err)
	}
	var txt string
	if err := conn.QueryRow(ctx, `SELECT nums::text || tags::text FROM pa WHERE id = 10`).Scan(&txt); err != nil || txt != "{7,8}{c1}" {
		t.Fatalf("copied row: %q, %v", txt, err)
	}

	// COPY in the text format: PostgreSQL's array text inside COPY's escaping.
	in := "20\t{5,NULL}\t{\"a\\\\\\\\b\",\"c d\"}\n"
	if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(in), "COPY pa (id, nums, tags) FROM STDIN"); err != nil {
		t.Fatalf("copy text in: %v", err)
	}
	var out bytes.Buffer
	if _, err := conn.PgConn().CopyTo(ctx, &out, "COPY (SELECT id, nums, tags FROM pa WHERE id IN (10, 20) ORDER BY id) TO STDOUT"); err != nil {
		t.Fatalf("copy text out: %v", err)
	}
	if want := "10\t{7,8}\t{c1}\n" + in; out.String() != want {
		t.Fatalf("copy out: got %q, want %q", out.String(), want)
	}
	var back []string
	if err := conn.QueryRow(ctx, `SELECT tags FROM pa WHERE id = 20`).Scan(&back); err != nil || !slices.Equal(back, []string{`a\b`, "c d"}) {
		t.Fatalf("copied tags: %q, %v", back, err)
	}

	// A multidimensional parameter is refused, not misread.
	if _, err := conn.Exec(ctx, `SELECT $1::int[]`, [][]int32{{1, 2}, {3, 4}}); err == nil {
		t.Fatal("two-dimensional array parameter accepted")
	} else {
		wantCode(t, err, "0A000")
	}
}
