package slt

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"

	"github.com/tributary/tributary/e2e/pgtest"
)

// The variables naming the script's upstream PostgreSQL (wal_level =
// logical), started when a record first uses one and stopped at the
// script's end: its host, port, and a libpq URL of its database dev (user
// postgres, no password).
const (
	PGHostVar = "${PG_HOST}"
	PGPortVar = "${PG_PORT}"
	PGDSNVar  = "${PG_DSN}"
)

// upstreamPG is a script's private PostgreSQL.
type upstreamPG struct {
	c   *pgtest.Cluster
	dir string
}

func (u *upstreamPG) close() {
	_ = u.c.Stop() // a test cluster: nothing to keep
	_ = os.RemoveAll(u.dir)
}

func (r *Runner) closeUpstream() {
	if r.pg != nil {
		r.pg.close()
		r.pg = nil
	}
}

func (r *Runner) upstream() (*upstreamPG, error) {
	if r.pg != nil {
		return r.pg, nil
	}
	dir, err := os.MkdirTemp("", "slt-pg-")
	if err != nil {
		return nil, err
	}
	settings := append(append([]string(nil), pgtest.TestSettings...), pgtest.LogicalSettings...)
	c, err := pgtest.Launch(dir, settings)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start the upstream PostgreSQL: %w", err)
	}
	r.pg = &upstreamPG{c: c, dir: dir}
	return r.pg, nil
}

// substituteUpstream replaces the PG_* variables in s, starting the
// upstream if s uses one.
func (r *Runner) substituteUpstream(s string) (string, error) {
	if !strings.Contains(s, "${PG_") {
		return s, nil
	}
	u, err := r.upstream()
	if err != nil {
		return "", err
	}
	host, port, _ := net.SplitHostPort(u.c.Addr)
	return strings.NewReplacer(PGHostVar, host, PGPortVar, port, PGDSNVar, u.c.DSN()).Replace(s), nil
}

// runSystem runs a `system ok` command with sh -c: it must exit 0.
func (r *Runner) runSystem(ctx context.Context, command string) error {
	command, err := r.substituteUpstream(command)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", command, err, out)
	}
	return nil
}
