package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestDatabases connects with pgx to two databases: each sees its own
// relations, a three-part name reads the other's (in a query and in a
// materialized view, which follows new rows), writes into the other are
// refused, DROP DATABASE is refused while a session is connected to it or a
// relation elsewhere reads from it, CREATE DATABASE needs CREATEDB, and
// everything survives a restart.
func TestDatabases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	dev := e2etest.Connect(t, ctx, srv)
	dsnOf := func(db, user string) string {
		return strings.Replace(strings.Replace(srv.DSN(), "/dev?", "/"+db+"?", 1), "tributary@", user+"@", 1)
	}
	connectTo := func(db, user string) (*pgx.Conn, error) {
		c, err := pgx.Connect(ctx, dsnOf(db, user))
		if err == nil {
			t.Cleanup(func() { c.Close(context.Background()) })
		}
		return c, err
	}
	exec := func(c *pgx.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	count := func(c *pgx.Conn, sql string) int64 {
		t.Helper()
		var n int64
		if err := c.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}

	if _, err := connectTo("shop", "tributary"); err == nil {
		t.Fatal("connected to a database that does not exist")
	} else {
		wantCode(t, err, "3D000")
	}
	exec(dev, "CREATE DATABASE shop")
	_, err := dev.Exec(ctx, "CREATE DATABASE shop")
	wantCode(t, err, "42P04")
	shop, err := connectTo("shop", "tributary")
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := shop.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil || name != "shop" {
		t.Fatalf("current_database() in shop: %q, %v", name, err)
	}
	// The same name in both databases names two tables.
	exec(shop, "CREATE TABLE orders (id int PRIMARY KEY, amount int)")
	exec(shop, "INSERT INTO orders SELECT g, g * 10 FROM generate_series(1, 100) g")
	exec(dev, "CREATE TABLE orders (id int PRIMARY KEY)")
	if n := count(dev, "SELECT count(*) FROM orders"); n != 0 {
		t.Fatalf("dev's orders has %d rows, want 0", n)
	}
	if n := count(dev, "SELECT count(*) FROM shop.public.orders"); n != 100 {
		t.Fatalf("shop.public.orders from dev: %d rows, want 100", n)
	}
	if n := count(shop, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"); n != 1 {
		t.Fatalf("shop's information_schema lists %d public tables, want 1", n)
	}
	exec(dev, "CREATE MATERIALIZED VIEW big AS SELECT id, amount FROM shop.public.orders WHERE amount > 500")
	exec(shop, "INSERT INTO orders VALUES (101, 1010)")
	exec(dev, "FLUSH")
	if n := count(dev, "SELECT count(*) FROM big"); n != 51 {
		t.Fatalf("cross-database view has %d rows, want 51", n)
	}
	_, err = dev.Exec(ctx, "DELETE FROM shop.public.orders")
	wantCode(t, err, "0A000")
	_, err = dev.Exec(ctx, "CREATE TABLE shop.public.x (a int)")
	wantCode(t, err, "0A000")
	_, err = shop.Exec(ctx, "DROP TABLE orders CASCADE")
	wantCode(t, err, "2BP01")
	_, err = dev.Exec(ctx, "DROP DATABASE shop")
	wantCode(t, err, "55006") // shop's session is connected
	if n := count(dev, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'shop'"); n != 1 {
		t.Fatalf("pg_stat_activity shows %d sessions in shop, want 1", n)
	}
	if n := count(dev, "SELECT count(*) FROM pg_database WHERE datname IN ('dev', 'shop')"); n != 2 {
		t.Fatalf("pg_database lists %d of dev and shop", n)
	}

	// CREATE DATABASE needs CREATEDB.
	exec(dev, "CREATE USER clerk")
	clerk, err := connectTo("dev", "clerk")
	if err != nil {
		t.Fatal(err)
	}
	_, err = clerk.Exec(ctx, "CREATE DATABASE mine")
	wantCode(t, err, "42501")
	exec(dev, "ALTER USER clerk CREATEDB")
	exec(clerk, "CREATE DATABASE mine")

	// A restart keeps the databases, their relations and the view across them.
	shop.Close(ctx)
	dev.Close(ctx)
	clerk.Close(ctx)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	dev = e2etest.Connect(t, ctx, srv)
	if shop, err = connectTo("shop", "tributary"); err != nil {
		t.Fatal(err)
	}
	if n := count(dev, "SELECT count(*) FROM pg_database WHERE datname IN ('dev', 'shop', 'mine')"); n != 3 {
		t.Fatalf("after restart pg_database lists %d of dev, shop and mine", n)
	}
	exec(shop, "INSERT INTO orders VALUES (102, 1020)")
	exec(dev, "FLUSH")
	if n := count(dev, "SELECT count(*) FROM big"); n != 52 {
		t.Fatalf("after restart the cross-database view has %d rows, want 52", n)
	}
	if n := count(shop, "SELECT count(*) FROM orders"); n != 102 {
		t.Fatalf("after restart shop's orders has %d rows, want 102", n)
	}
	// Dropped in order: the reader, then the database (no one connected).
	exec(dev, "DROP MATERIALIZED VIEW big")
	shop.Close(ctx)
	exec(dev, "DROP DATABASE shop")
	exec(dev, "DROP DATABASE IF EXISTS shop")
	if _, err := connectTo("shop", "tributary"); err == nil {
		t.Fatal("connected to a dropped database")
	} else {
		wantCode(t, err, "3D000")
	}
	if n := count(dev, "SELECT count(*) FROM orders"); n != 0 {
		t.Fatalf("dev's orders: %d rows after shop was dropped", n)
	}
}
