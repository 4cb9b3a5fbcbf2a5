package e2e

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
)

// The benchmarks run one workload against Tributary and, for comparison on
// the same machine, against a private PostgreSQL 15 (skipped without it):
//
//	go test ./e2e -run '^$' -bench . -benchtime 5s

func benchConn(b *testing.B, engine string) *pgx.Conn {
	b.Helper()
	ctx := context.Background()
	var dsn string
	switch engine {
	case "tributary":
		dsn = e2etest.StartServer(b).DSN()
	case "postgres":
		dsn = pgtest.StartPostgres(b)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE TABLE bench (id bigint PRIMARY KEY, v text)`); err != nil {
		b.Fatal(err)
	}
	return conn
}

// BenchmarkInsert measures single-row INSERTs over pgwire from one client;
// each statement is durable (committed) before it returns.
func BenchmarkInsert(b *testing.B) {
	for _, engine := range []string{"tributary", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			conn := benchConn(b, engine)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := conn.Exec(ctx, `INSERT INTO bench VALUES ($1, 'value')`, int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkPointSelect measures primary-key lookups over pgwire (prepared
// statement, binary results) in a 10,000-row table.
func BenchmarkPointSelect(b *testing.B) {
	for _, engine := range []string{"tributary", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			conn := benchConn(b, engine)
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
		})
	}
}
