package recovery

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
)

// TestSinkIntoTableSurvivesKills: two sinks from two tables into one target
// table, plus direct DML on the target and a view on it, under random DML
// with the server killed (SIGKILL) at random points ten times; afterwards
// the target holds exactly the union of what each source maps to and the
// direct rows (no row lost, none twice), and the view on it agrees. Both
// with sink_decouple true and false.
func TestSinkIntoTableSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a server ten times")
	}
	for _, decouple := range []string{"true", "false"} {
		t.Run("sink_decouple="+decouple, func(t *testing.T) { sinkIntoTableKills(t, decouple) })
	}
}

func sinkIntoTableKills(t *testing.T, decouple string) {
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	for _, s := range []string{
		"CREATE TABLE a (id int PRIMARY KEY, v int)",
		"CREATE TABLE b (id int PRIMARY KEY, v int)",
		"CREATE TABLE target (id int PRIMARY KEY, v int, src varchar DEFAULT 'b')",
		"INSERT INTO a SELECT g, g FROM generate_series(1, 2000) g",
		"INSERT INTO b SELECT g, g * 10 FROM generate_series(1, 1000) g",
		"CREATE MATERIALIZED VIEW tv AS SELECT src, count(*) AS n, sum(v) AS s FROM target GROUP BY src",
		"SET sink_decouple = " + decouple,
		"CREATE SINK sa INTO target AS SELECT id, v, 'a'::varchar AS src FROM a",
		"CREATE SINK sb INTO target (id, v) AS SELECT id + 1000000 AS id, v FROM b",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	nextA, nextB, nextT := 2001, 1001, 5000000
	dml := func(c *pgx.Conn, r *rand.Rand) error {
		var s string
		switch r.Intn(7) {
		case 0:
			s = fmt.Sprintf("INSERT INTO a SELECT g, g FROM generate_series(%d, %d) g", nextA, nextA+r.Intn(40))
			nextA += 41
		case 1:
			s = fmt.Sprintf("UPDATE a SET v = v + 1 WHERE id %% 11 = %d", r.Intn(11))
		case 2:
			s = fmt.Sprintf("DELETE FROM a WHERE id %% 31 = %d", r.Intn(31))
		case 3:
			s = fmt.Sprintf("INSERT INTO b SELECT g, g FROM generate_series(%d, %d) g", nextB, nextB+r.Intn(40))
			nextB += 41
		case 4:
			s = fmt.Sprintf("DELETE FROM b WHERE id %% 23 = %d", r.Intn(23))
		case 5:
			s = fmt.Sprintf("INSERT INTO target SELECT g, g, 'direct' FROM generate_series(%d, %d) g", nextT, nextT+r.Intn(20))
			nextT += 21
		default:
			s = fmt.Sprintf("UPDATE target SET v = v + 1 WHERE src = 'direct' AND id %% 5 = %d", r.Intn(5))
		}
		_, err := c.Exec(ctx, s)
		return err
	}
	conn = killLoop(t, ctx, srv, conn, rng, 10, dml)
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatal(err)
	}
	const expected = `SELECT id, v, 'a' FROM a
		UNION ALL SELECT id + 1000000, v, 'b' FROM b
		UNION ALL SELECT id, v, src FROM target WHERE src = 'direct'`
	// Delivery runs behind the commits: poll until the target catches up.
	var got, want []string
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		if want, err = e2etest.Rows(ctx, conn, expected); err != nil {
			t.Fatal(err)
		}
		if got, err = e2etest.Rows(ctx, conn, "SELECT id, v, src FROM target"); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			break
		}
		if time.Now().After(deadline) {
			onlyT, onlyW := e2etest.MultisetDiff(got, want)
			t.Fatalf("target differs from the union after 10 kills (%d vs %d rows):\nonly in target: %v\nonly in the union: %v", len(got), len(want), onlyT, onlyW)
		}
		time.Sleep(50 * time.Millisecond)
	}
	view, err := e2etest.Rows(ctx, conn, "SELECT src, n, s FROM tv")
	if err != nil {
		t.Fatal(err)
	}
	direct, err := e2etest.Rows(ctx, conn, "SELECT src, count(*), sum(v) FROM target GROUP BY src")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(view, "\n") != strings.Join(direct, "\n") {
		t.Fatalf("the view on the target differs from its query:\nview: %v\nquery: %v", view, direct)
	}
	t.Logf("target holds the union's %d rows", len(want))
}
