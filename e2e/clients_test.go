package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/testserver"
)

// clientCase is one login a client script (e2e/clients/login.*) tries.
type clientCase struct {
	Host     string  `json:"host"`
	Port     int     `json:"port"`
	User     string  `json:"user"`
	Password *string `json:"password"`
	Database string  `json:"database"`
	SSL      any     `json:"ssl"` // nil, "require" or {"ca": path}
}

// clientResult is what the script reports of one login.
type clientResult struct {
	User  string `json:"user"`
	TLS   bool   `json:"tls"`
	Error string `json:"error"`
	Code  string `json:"code"`
}

// TestClientLogins is issue 15's client matrix for node-postgres and
// psycopg2 (each skipped with a message when not installed; .ci/run
// installs both): SCRAM-SHA-256, md5 and trust logins, TLS with require
// and verify-full, a wrong password and an unknown user refused alike, and
// a rule that refuses a connection without TLS.
func TestClientLogins(t *testing.T) {
	root, err := testserver.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	clients := filepath.Join(root, "e2e", "clients")
	type runner struct {
		name string
		cmd  func(ctx context.Context) (*exec.Cmd, string) // "" or why it is skipped
	}
	runners := []runner{
		{"node-postgres", func(ctx context.Context) (*exec.Cmd, string) {
			node, err := exec.LookPath("node")
			if err != nil {
				return nil, "node is not installed"
			}
			modules, why := nodeModules(t, clients)
			if why != "" {
				return nil, why
			}
			cmd := exec.CommandContext(ctx, node, filepath.Join(clients, "login.js"))
			cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
			return cmd, ""
		}},
		{"psycopg2", func(ctx context.Context) (*exec.Cmd, string) {
			for _, py := range []string{"python3", "/usr/bin/python3"} {
				if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import psycopg2").Run() == nil {
					return exec.CommandContext(ctx, p, filepath.Join(clients, "login.py")), ""
				}
			}
			return nil, "no python3 with psycopg2 (apt install python3-psycopg2)"
		}},
	}

	dir := t.TempDir()
	files := testserver.WriteTLSFiles(t, dir)
	hba := filepath.Join(dir, "hba.conf")
	rules := "host all trusty 127.0.0.1/32 trust\nhostnossl all tlsonly 127.0.0.1/32 reject\nhost all all 127.0.0.1/32 md5\n"
	if err := os.WriteFile(hba, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{
		Args: []string{"--tls-cert", files.Cert, "--tls-key", files.Key, "--hba-file", hba},
		Env:  []string{"TRIBUTARY_ROOT_PASSWORD=s3cret"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := pgx.Connect(ctx, fmt.Sprintf("postgres://root:s3cret@%s/dev?sslmode=disable&connect_timeout=10", srv.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close(ctx)
	sum := md5.Sum([]byte("pw-m" + "m"))
	for _, s := range []string{
		"CREATE USER s WITH PASSWORD 'pw-s'",
		"CREATE USER m WITH PASSWORD 'md5" + hex.EncodeToString(sum[:]) + "'",
		"CREATE USER trusty",
		"CREATE USER tlsonly WITH PASSWORD 'pw-t'",
	} {
		if _, err := rc.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	host, portText, _ := strings.Cut(srv.Addr, ":")
	port, _ := strconv.Atoi(portText)
	pw := func(s string) *string { return &s }
	verifyFull := map[string]string{"ca": files.CA}
	cases := []struct {
		c      clientCase
		user   string // a login as this user, or
		errHas string // a refusal holding this
		tls    bool
		what   string
	}{
		{c: clientCase{User: "s", Password: pw("pw-s"), SSL: "require"}, user: "s", tls: true, what: "SCRAM over TLS (require)"},
		{c: clientCase{User: "s", Password: pw("pw-s"), SSL: verifyFull}, user: "s", tls: true, what: "SCRAM over TLS (verify-full)"},
		{c: clientCase{User: "m", Password: pw("pw-m")}, user: "m", what: "md5"},
		{c: clientCase{User: "m", Password: pw("pw-m"), SSL: verifyFull}, user: "m", tls: true, what: "md5 over TLS (verify-full)"},
		{c: clientCase{User: "trusty"}, user: "trusty", what: "trust"},
		{c: clientCase{User: "tlsonly", Password: pw("pw-t"), SSL: "require"}, user: "tlsonly", tls: true, what: "a TLS-only user over TLS"},
		{c: clientCase{User: "tlsonly", Password: pw("pw-t")}, errHas: `pg_hba.conf rejects connection for host "127.0.0.1", user "tlsonly", database "dev", no encryption`, what: "a TLS-only user without TLS"},
		{c: clientCase{User: "s", Password: pw("wrong")}, errHas: `password authentication failed for user "s"`, what: "a wrong SCRAM password"},
		{c: clientCase{User: "m", Password: pw("wrong")}, errHas: `password authentication failed for user "m"`, what: "a wrong md5 password"},
		{c: clientCase{User: "nobody", Password: pw("pw-s")}, errHas: `password authentication failed for user "nobody"`, what: "an unknown user"},
	}
	in := make([]clientCase, len(cases))
	for i, c := range cases {
		c.c.Host, c.c.Port, c.c.Database = host, port, "dev"
		in[i] = c.c
	}
	input, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			cmd, why := r.cmd(ctx)
			if why != "" {
				t.Skipf("%s: %s", r.name, why)
			}
			cmd.Stdin = bytes.NewReader(input)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", r.name, err, stderr.String())
			}
			var got []clientResult
			if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
				t.Fatalf("%s: output %q: %v", r.name, out, err)
			}
			for i, c := range cases {
				g := got[i]
				switch {
				case c.user != "" && (g.User != c.user || g.Error != "" || g.TLS != c.tls):
					t.Errorf("%s: %s: %+v, want a login as %s (TLS %v)", r.name, c.what, g, c.user, c.tls)
				case c.errHas != "" && !strings.Contains(g.Error, c.errHas):
					t.Errorf("%s: %s: %+v, want an error holding %q", r.name, c.what, g, c.errHas)
				}
			}
		})
	}
}

// nodeModules returns the node_modules directory holding node-postgres and
// pg-copy-streams: e2e/clients/node_modules when .ci/run (or a developer)
// installed both, else a copy installed now from
// e2e/clients/package-lock.json (npm ci); why is set when neither is there.
func nodeModules(t *testing.T, clients string) (dir, why string) {
	t.Helper()
	local := filepath.Join(clients, "node_modules")
	installed := true
	for _, m := range []string{"pg", "pg-copy-streams"} {
		if _, err := os.Stat(filepath.Join(local, m, "package.json")); err != nil {
			installed = false
		}
	}
	if installed {
		return local, ""
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "node-postgres is not installed (npm ci --prefix e2e/clients) and npm is missing"
	}
	tmp := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(clients, f))
		if err != nil {
			return "", fmt.Sprintf("read %s: %v", f, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--prefer-offline")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("node-postgres could not be installed (npm ci: %v): %s", err, strings.TrimSpace(string(out)))
	}
	return filepath.Join(tmp, "node_modules"), ""
}
