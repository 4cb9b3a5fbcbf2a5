package e2e

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkInsert measures single-row INSERTs over pgwire (one client, each
// statement commits its own epoch before it returns).
func BenchmarkInsert(b *testing.B) {
	ctx := context.Background()
	srv := startServer(b)
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE bench (id bigint PRIMARY KEY, v text)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := conn.Exec(ctx, `INSERT INTO bench VALUES ($1, 'value')`, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkPointSelect measures primary-key lookups over pgwire (prepared, binary).
func BenchmarkPointSelect(b *testing.B) {
	ctx := context.Background()
	srv := startServer(b)
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE bench (id bigint PRIMARY KEY, v text)`); err != nil {
		b.Fatal(err)
	}
	const rows = 10000
	if _, err := conn.Exec(ctx, `INSERT INTO bench SELECT g, 'value' FROM generate_series(0, 9999) AS g`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var v string
	for i := 0; i < b.N; i++ {
		if err := conn.QueryRow(ctx, `SELECT v FROM bench WHERE id = $1`, int64(i%rows)).Scan(&v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}
