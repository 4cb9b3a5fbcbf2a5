package e2e

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestSecretsAtRest is issue 15's item 5: a sink's password option and a
// URL's password are encrypted in the catalog (the key is
// <data-dir>/secret.key, made 0600 at the first start), so the raw files
// of the data directory hold neither, though they hold the option next to
// them in clear; after a restart the catalog loads, the sink with it.
func TestSecretsAtRest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	srv := testserver.Start(t, testserver.Build(t), dataDir)
	const password, urlPassword, marker = "Sup3r-Secret-XYZ", "Url-Secret-ABC", "marker-host-QRS"
	c, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, v int)",
		"CREATE SINK s FROM t WITH (connector = 'blackhole', password = '" + password + "', conn.url = 'postgres://u:" + urlPassword + "@" + marker + "/db')",
	} {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	c.Close(ctx)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dataDir, "secret.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret.key: %v, %v", st, err)
	}
	var sawMarker bool
	err = filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range []string{password, urlPassword} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q in clear", path, s)
			}
		}
		sawMarker = sawMarker || bytes.Contains(b, []byte(marker))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawMarker {
		t.Fatalf("no file of the data directory holds the sink's options in clear (%q): the check above proves nothing", marker)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	c, err = pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM rw_catalog.rw_sinks WHERE name = 's'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the sink after a restart: %d, %v", n, err)
	}
}
