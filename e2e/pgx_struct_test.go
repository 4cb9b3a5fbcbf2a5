package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestPgxStruct checks structs on the wire: the column's type oid is
// PostgreSQL's record (2249), pgx decodes the binary record form (nested
// structs and NULL fields included) into []any, and the simple protocol
// carries the composite text form.
func TestPgxStruct(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)

	if _, err := conn.Exec(ctx, `CREATE TABLE ps (id int PRIMARY KEY, s struct<a int, b varchar, c struct<d bigint>>)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO ps VALUES (1, (7, 'x y', ROW(9))), (2, (NULL, '', NULL))`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT s FROM ps ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if oid := rows.FieldDescriptions()[0].DataTypeOID; oid != 2249 {
		t.Fatalf("struct column oid %d, want 2249", oid)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) {
		vs, err := r.Values()
		if err != nil {
			return nil, err
		}
		rec, _ := vs[0].([]any)
		return rec, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]) != 3 || got[0][0] != int32(7) || got[0][1] != "x y" {
		t.Fatalf("binary records: %#v", got)
	}
	if inner, ok := got[0][2].([]any); !ok || len(inner) != 1 || inner[0] != int64(9) {
		t.Fatalf("nested record: %#v", got[0][2])
	}
	if got[1][0] != nil || got[1][1] != "" || got[1][2] != nil {
		t.Fatalf("record with NULL fields: %#v", got[1])
	}

	var text string
	if err := conn.QueryRow(ctx, `SELECT s::varchar FROM ps WHERE id = 1`, pgx.QueryExecModeSimpleProtocol).Scan(&text); err != nil {
		t.Fatal(err)
	}
	if text != `(7,"x y","(9)")` {
		t.Fatalf("text form %q", text)
	}
}
