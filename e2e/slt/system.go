package slt

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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

// varRE matches $NAME and ${NAME}.
var varRE = regexp.MustCompile(`\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)`)

// substituteVars is sqllogictest-rs's `control substitution on`: $NAME and ${NAME} become
// the environment variable NAME, or for the built-ins $__TEST_DIR__ (the script's
// directory), $__DATABASE__ (the DSN's database) and $__NOW__ (nanoseconds since 1970);
// RisingWave's $RISEDEV_KAFKA_WITH_OPTIONS_COMMON is the script's Kafka cluster. Names that
// are none of these stay as written.
func substituteVars(s, file, dsn string, vars map[string]string) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m[1:], "{}")
		switch name {
		case "__TEST_DIR__":
			return filepath.Dir(file)
		case "__DATABASE__":
			if cfg, err := pgx.ParseConfig(dsn); err == nil {
				return cfg.Database
			}
			return "dev"
		case "__NOW__":
			return strconv.FormatInt(time.Now().UnixNano(), 10)
		}
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		if name == "RISEDEV_KAFKA_WITH_OPTIONS_COMMON" {
			return "connector='kafka',properties.bootstrap.server='" + KafkaBrokerVar + "'"
		}
		return m
	})
}
