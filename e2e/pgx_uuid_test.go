package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestPgxUUID checks uuid's binary wire form both ways: pgx sends [16]byte,
// pgtype.UUID and strings as parameters and scans results into each, in the
// extended protocol (binary) and the simple one (text).
func TestPgxUUID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)

	if _, err := conn.Exec(ctx, `CREATE TABLE pu (id uuid PRIMARY KEY, n int)`); err != nil {
		t.Fatal(err)
	}
	raw := [16]byte{0x80, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1}
	const rawText = "80000000-0000-4000-8000-000000000001"
	pg := pgtype.UUID{Bytes: [16]byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, Valid: true}
	for i, arg := range []any{raw, pg, "{00000000000000000000000000000002}"} {
		if _, err := conn.Exec(ctx, `INSERT INTO pu VALUES ($1, $2)`, arg, i+1); err != nil {
			t.Fatalf("insert %T: %v", arg, err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO pu VALUES ($1, 9)`, raw); err == nil {
		t.Fatal("duplicate uuid key accepted")
	} else {
		wantCode(t, err, "23505")
	}

	var gotRaw [16]byte
	var gotPG pgtype.UUID
	var gotText string
	if err := conn.QueryRow(ctx, `SELECT id, id, id::text FROM pu WHERE id = $1`, raw).Scan(&gotRaw, &gotPG, &gotText); err != nil {
		t.Fatal(err)
	}
	if gotRaw != raw || gotPG.Bytes != raw || !gotPG.Valid || gotText != rawText {
		t.Fatalf("got %x, %v, %q", gotRaw, gotPG, gotText)
	}
	var s string
	if err := conn.QueryRow(ctx, `SELECT id FROM pu WHERE n = 2`).Scan(&s); err != nil || s != "7fffffff-ffff-ffff-ffff-ffffffffffff" {
		t.Fatalf("scan into string: %q, %v", s, err)
	}
	if err := conn.QueryRow(ctx, `SELECT id FROM pu WHERE n = $1`, pgx.QueryExecModeSimpleProtocol, 1).Scan(&gotPG); err != nil || gotPG.Bytes != raw {
		t.Fatalf("simple protocol: %v, %v", gotPG, err)
	}

	// Byte order: 00..02 < 7f.. < 80..
	rows, err := conn.Query(ctx, `SELECT n FROM pu ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(ns) != 3 || ns[0] != 3 || ns[1] != 2 || ns[2] != 1 {
		t.Fatalf("order by uuid: %v, %v", ns, err)
	}

	// A bad binary length and a bad text value are errors, not panics.
	if _, err := conn.Exec(ctx, `SELECT $1::uuid`, "nope"); err == nil {
		t.Fatal("bad uuid text accepted")
	} else {
		wantCode(t, err, "22P02")
	}
	var g pgtype.UUID
	if err := conn.QueryRow(ctx, `SELECT gen_random_uuid()`).Scan(&g); err != nil || !g.Valid || g.Bytes[6]>>4 != 4 {
		t.Fatalf("gen_random_uuid: %v, %v", g, err)
	}

	// COPY and INSERT ... RETURNING fill serial and uuid defaults.
	if _, err := conn.Exec(ctx, `CREATE TABLE pc (id bigserial PRIMARY KEY, u uuid NOT NULL DEFAULT gen_random_uuid(), v text)`); err != nil {
		t.Fatal(err)
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"pc"}, []string{"v"}, pgx.CopyFromRows([][]any{{"a"}, {"b"}, {"c"}}))
	if err != nil || n != 3 {
		t.Fatalf("copy: %d, %v", n, err)
	}
	var id int64
	var u pgtype.UUID
	if err := conn.QueryRow(ctx, `INSERT INTO pc (v) VALUES ($1) RETURNING id, u`, "d").Scan(&id, &u); err != nil || id != 4 || !u.Valid {
		t.Fatalf("returning: %d, %v, %v", id, u, err)
	}
	var distinct int64
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT u) FROM pc`).Scan(&distinct); err != nil || distinct != 4 {
		t.Fatalf("distinct uuids: %d, %v", distinct, err)
	}
}
