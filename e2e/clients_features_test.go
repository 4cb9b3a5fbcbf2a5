package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testserver"
)

// featuresWant is what e2e/clients/features.{js,py} must print, with P
// standing for the client's table prefix (js or py). Rows 1, 2, 10 and 12
// survive the blocks; the block retried after 40001 adds its 10 to the
// other session's 100; COPY keeps NULL apart from the empty string and
// quotes what needs it; int8 is read as a string (node-postgres's choice,
// which features.py follows); the prepared statement finds row 1, then 2.
const featuresWant = `{
	"commit": {"seen_by_other_before": 0, "after": [1, 2]},
	"rollback": {"inside": 3, "after": [1, 2]},
	"savepoint": [1, 2, 10, 12],
	"aborted": {"codes": ["22012", "25P02"], "usable": 1, "after": [1, 2, 10, 12]},
	"serialization": {"errors": ["40001"], "attempts": 2, "balance": 110},
	"copy": {
		"in_csv": 3, "in_text": 2,
		"rows": [
			{"id": 1, "name": "a, b", "note": null},
			{"id": 2, "name": "say \"hi\"", "note": ""},
			{"id": 3, "name": "two\nlines", "note": "plain"},
			{"id": 4, "name": "tab\there", "note": null},
			{"id": 5, "name": "back\\slash", "note": ""}
		],
		"out_csv": "1,\"a, b\",\n2,\"say \"\"hi\"\"\",\"\"\n3,\"two\nlines\",plain\n4,tab\there,\n5,back\\slash,\"\"\n",
		"out_text": "1\ta, b\t\\N\n2\tsay \"hi\"\t\n3\ttwo\\nlines\tplain\n4\ttab\\there\t\\N\n5\tback\\\\slash\t\n",
		"usable": 5
	},
	"uuid": {
		"generated_shape": true, "generated_distinct": true, "by_generated": 2,
		"explicit": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "by_param": 3, "function_shape": true
	},
	"serial": [{"id": 1, "big": "1", "v": "a"}, {"id": 2, "big": "2", "v": "b"}, {"id": 3, "big": "3", "v": "c"}],
	"params": {
		"row": {"id": 1, "amount": "12.50", "at_ms": 1709296496789, "ok": true, "note": null},
		"found": [[1], [2]],
		"upsert": [{"id": 1, "amount": "13.00", "note": "updated"}, {"id": 3, "amount": "7", "note": "inserted"}],
		"after": [
			{"id": 1, "amount": "13.00", "note": "updated"},
			{"id": 2, "amount": "-0.001", "note": "two"},
			{"id": 3, "amount": "7", "note": "inserted"}
		]
	},
	"errors": {
		"unique": "23505", "division": "22012",
		"missing": {"code": "42P01", "message": "relation \"P_nope\" does not exist"},
		"usable": 3
	}
}`

// featuresWantPsycopg2 is what only psycopg2 has: its implicit blocks,
// commit() and rollback(), and `with conn:`.
const featuresWantPsycopg2 = `{
	"in_transaction": true, "seen_by_other_before": 0, "after_rollback": 0, "after_commit": 1,
	"with_committed": 1, "with_error": "23505", "idle_after_with": true, "with_rolled_back": 0
}`

// TestClientFeatures runs e2e/clients/features.{js,py} (issue 17): with
// node-postgres (and pg-copy-streams) and psycopg2, each skipped with a
// message when not installed, transaction blocks with ROLLBACK, savepoints
// and a failed block (25P02), a serialization failure (40001) retried,
// COPY FROM STDIN and TO STDOUT in CSV and text, uuid and serial columns,
// typed parameters and prepared statements, ON CONFLICT DO UPDATE, and
// errors' SQLSTATEs with the session usable after them. With -pg the
// scripts run on PostgreSQL, whose answers these are.
func TestClientFeatures(t *testing.T) {
	root, err := testserver.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	clients := filepath.Join(root, "e2e", "clients")
	addr, user := "", "tributary"
	if *pgMode {
		addr, user = pgtest.Start(t).Addr, "postgres"
	} else {
		addr = e2etest.StartServer(t).Addr
	}
	host, portText, _ := strings.Cut(addr, ":")
	port, _ := strconv.Atoi(portText)
	input, err := json.Marshal(map[string]any{"host": host, "port": port, "user": user, "database": "dev"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct {
		name, prefix string
		cmd          func() (*exec.Cmd, string)
	}{
		{"node-postgres", "js", func() (*exec.Cmd, string) {
			node, err := exec.LookPath("node")
			if err != nil {
				return nil, "node is not installed"
			}
			modules, why := nodeModules(t, clients)
			if why != "" {
				return nil, why
			}
			cmd := exec.CommandContext(ctx, node, filepath.Join(clients, "features.js"))
			cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
			return cmd, ""
		}},
		{"psycopg2", "py", func() (*exec.Cmd, string) {
			for _, py := range []string{"python3", "/usr/bin/python3"} {
				if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import psycopg2").Run() == nil {
					return exec.CommandContext(ctx, p, filepath.Join(clients, "features.py")), ""
				}
			}
			return nil, "no python3 with psycopg2 (apt install python3-psycopg2)"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, why := c.cmd()
			if why != "" {
				t.Skipf("%s: %s", c.name, why)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(strings.ReplaceAll(featuresWant, "P_", c.prefix+"_")), &want); err != nil {
				t.Fatal(err)
			}
			if c.prefix == "py" {
				var implicit any
				if err := json.Unmarshal([]byte(featuresWantPsycopg2), &implicit); err != nil {
					t.Fatal(err)
				}
				want["implicit"] = implicit
			}
			cmd.Stdin = bytes.NewReader(input)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			for k, w := range want {
				if g, ok := got[k]; !ok || !reflect.DeepEqual(g, w) {
					t.Errorf("%s:\ngot  %s\nwant %s", k, mustJSON(g), mustJSON(w))
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: unexpected %s", k, mustJSON(got[k]))
				}
			}
		})
	}
}
