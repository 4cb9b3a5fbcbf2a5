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
	"github.com/tributary/tributary/e2e/testserver"
)

// TestClientArrays runs e2e/clients/arrays.{js,py}: node-postgres and
// psycopg2 (each skipped with a message when not installed) send list
// parameters, read array columns back as native lists (NULL elements,
// quoting), and use = ANY($1), array_agg and unnest (issue 17).
func TestClientArrays(t *testing.T) {
	root, err := testserver.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	clients := filepath.Join(root, "e2e", "clients")
	srv := e2etest.StartServer(t)
	host, portText, _ := strings.Cut(srv.Addr, ":")
	port, _ := strconv.Atoi(portText)
	input, err := json.Marshal(map[string]any{"host": host, "port": port, "user": "tributary", "database": "dev"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type row struct {
		ID   int       `json:"id"`
		Nums []*int    `json:"nums"`
		Tags []*string `json:"tags"`
	}
	type result struct {
		Rows     []row `json:"rows"`
		Any      []int `json:"any"`
		Agg      []int `json:"agg"`
		Unnested []any `json:"unnested"`
	}
	ip := func(v int) *int { return &v }
	sp := func(v string) *string { return &v }
	want := result{
		Rows: []row{
			{ID: 1, Nums: []*int{ip(1), ip(2), nil}, Tags: []*string{sp("a"), sp("b c"), sp(`"q"`)}},
			{ID: 2, Nums: []*int{}, Tags: []*string{sp("NULL"), sp("")}},
		},
		Any: []int{1, 2}, Agg: []int{2, 1}, Unnested: []any{1.0, 2.0, nil},
	}
	for _, c := range []struct {
		name string
		cmd  func() (*exec.Cmd, string)
	}{
		{"node-postgres", func() (*exec.Cmd, string) {
			node, err := exec.LookPath("node")
			if err != nil {
				return nil, "node is not installed"
			}
			modules, why := nodeModules(t, clients)
			if why != "" {
				return nil, why
			}
			cmd := exec.CommandContext(ctx, node, filepath.Join(clients, "arrays.js"))
			cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
			return cmd, ""
		}},
		{"psycopg2", func() (*exec.Cmd, string) {
			for _, py := range []string{"python3", "/usr/bin/python3"} {
				if p, err := exec.LookPath(py); err == nil && exec.Command(p, "-c", "import psycopg2").Run() == nil {
					return exec.CommandContext(ctx, p, filepath.Join(clients, "arrays.py")), ""
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
			cmd.Stdin = bytes.NewReader(input)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			var got result
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %s\nwant %s", out, mustJSON(want))
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
