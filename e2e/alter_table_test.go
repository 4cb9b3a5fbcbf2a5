package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestAlterTableUnderClients: a statement pgx prepared before ALTER TABLE
// ADD | DROP COLUMN runs after it against the new columns (planned again,
// as PostgreSQL does), and a transaction that wrote the table before the
// ALTER fails its COMMIT with 40001 and writes nothing.
func TestAlterTableUnderClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	other := e2etest.Connect(t, ctx, srv)

	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE at (id int PRIMARY KEY, a int, b text)`)
	const ins = `INSERT INTO at (id, a) VALUES ($1, $2)` // prepared and cached by pgx
	exec(ins, 1, 10)
	exec(`ALTER TABLE at ADD COLUMN c int DEFAULT 7`)
	exec(`CREATE MATERIALIZED VIEW atm AS SELECT id, c FROM at`)
	exec(ins, 2, 20)
	exec(`ALTER TABLE at DROP COLUMN b`)
	exec(ins, 3, 30)

	if _, err := other.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `INSERT INTO at VALUES (4, 40, 1)`); err != nil {
		t.Fatal(err)
	}
	exec(`ALTER TABLE at ADD COLUMN d text`)
	_, err := other.Exec(ctx, `COMMIT`)
	wantCode(t, err, "40001")

	rows, err := conn.Query(ctx, `SELECT id, a, c, d FROM at ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got [][4]any
	for rows.Next() {
		var id, a, c int32
		var d *string
		if err := rows.Scan(&id, &a, &c, &d); err != nil {
			t.Fatal(err)
		}
		got = append(got, [4]any{id, a, c, d == nil})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := [][4]any{{int32(1), int32(10), int32(7), true}, {int32(2), int32(20), int32(7), true}, {int32(3), int32(30), int32(7), true}}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
	// The view created between saw every row with its c.
	var n, sum int64
	if err := conn.QueryRow(ctx, `SELECT count(*), sum(c) FROM atm`).Scan(&n, &sum); err != nil || n != 3 || sum != 21 {
		t.Fatalf("view: %d rows, sum %d, %v; want 3, 21", n, sum, err)
	}
}
