package psqlcat

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// The fixture (testdata/psql15-queries.txt, a copy of the shared capture) holds,
// per psql command, the queries psql 15 sent to PostgreSQL 15 and what psql
// printed. TestFixture answers those queries from a catalog holding the same
// objects under the same oids, replays what psql does with the answers, and
// compares with what psql printed for PostgreSQL, with these deliberate
// differences: the owner is root (not postgres / pg_database_owner); schema s1
// does not exist (only public holds user objects); \l lists only dev;
// relation sizes are unknown (empty, not "0 bytes"); view definitions are the
// stored query text, not PostgreSQL's re-printed one.

type block struct {
	cmd     string
	queries []string
	output  []string
}

func readFixture(t *testing.T) []block {
	t.Helper()
	f, err := os.Open("testdata/psql15-queries.txt")
	if err != nil {
		t.Fatalf("open fixture: %v", err)
	}
	defer f.Close()
	var blocks []block
	var cur *block
	var query []string
	inQuery := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "######## "):
			blocks = append(blocks, block{cmd: strings.TrimPrefix(line, "######## ")})
			cur = &blocks[len(blocks)-1]
		case cur == nil:
		case line == "********* QUERY **********":
			inQuery, query = true, nil
		case inQuery && line == "**************************":
			inQuery = false
			cur.queries = append(cur.queries, strings.Join(query, "\n"))
		case inQuery:
			query = append(query, line)
		default:
			cur.output = append(cur.output, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var out []block
	for _, b := range blocks {
		if strings.HasPrefix(b.cmd, `\`) {
			out = append(out, b)
		}
	}
	return out
}

// printed is a psql table as printed: title, header, rows (cells trimmed) and footers.
type printed struct {
	title   string
	header  []string
	rows    [][]string
	footers []string
}

func cells(line string) []string {
	parts := strings.Split(line, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func parsePrinted(lines []string) printed {
	var p printed
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i+2 >= len(lines) || !strings.Contains(lines[i+1], "|") {
		return p
	}
	p.title = strings.TrimSpace(lines[i])
	p.header = cells(lines[i+1])
	i += 3 // title, header, separator
	for ; i < len(lines) && strings.Contains(lines[i], "|"); i++ {
		c := cells(lines[i])
		if c[0] == "" { // continuation line of a multi-line cell
			continue
		}
		p.rows = append(p.rows, c)
	}
	for ; i < len(lines); i++ {
		if l := lines[i]; strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "(") {
			p.footers = append(p.footers, l)
		}
	}
	return p
}

// fixtureCatalog holds the fixture's objects with PostgreSQL's oids.
func fixtureCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c := catalog.New(catalog.SystemRelations())
	for _, r := range []*catalog.Relation{
		{ID: 16384, Schema: "public", Name: "t", Kind: catalog.KindTable, Columns: []catalog.Column{
			{Name: "id", Type: types.TInt32},
			{Name: "name", Type: types.T{ID: types.Varchar, Width: 20}, NotNull: true, Default: "'x'"},
			{Name: "v", Type: types.T{ID: types.Numeric, Width: 10, Scale: 2}},
		}, PK: []int{0}},
		{ID: 16390, Schema: "public", Name: "v", Kind: catalog.KindView, Columns: []catalog.Column{
			{Name: "id", Type: types.TInt32},
			{Name: "name", Type: types.T{ID: types.Varchar, Width: 20}},
		}, Definition: "select id,name from t"},
		{ID: 16394, Schema: "public", Name: "mv", Kind: catalog.KindMaterializedView, Columns: []catalog.Column{
			{Name: "id", Type: types.TInt32},
			{Name: "c", Type: types.TInt64},
		}, PK: []int{0}, Definition: "select id, count(*) c from t group by id"},
	} {
		if err := c.Add(r); err != nil {
			t.Fatalf("add %s: %v", r.Name, err)
		}
	}
	return c
}

// viewDefs are our pg_get_viewdef answers for the fixture's views (PostgreSQL re-prints the query).
var viewDefs = map[string][]string{
	"v":  {" select id,name from t;"},
	"mv": {" select id, count(*) c from t group by id;"},
}

// answerText runs Answer, requiring recognition, and returns headers and text cells (NULL as "").
func answerText(t *testing.T, r catalog.Reader, q string) ([]string, [][]string) {
	t.Helper()
	cols, rows, ok, err := Answer(r, q)
	if err != nil || !ok {
		t.Fatalf("Answer: ok=%v err=%v for\n%s", ok, err, q)
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	out := make([][]string, len(rows))
	for i, row := range rows {
		if len(row) != len(cols) {
			t.Fatalf("row of %d values for %d columns: %s", len(row), len(cols), q)
		}
		out[i] = make([]string, len(row))
		for j := range row {
			if !row[j].Null {
				out[i][j] = types.FormatText(cols[j].Type, &row[j])
			}
		}
	}
	return names, out
}

// ours maps PostgreSQL's printed values to what Tributary prints instead.
func ours(cell, column string) string {
	switch {
	case cell == "postgres" || cell == "pg_database_owner":
		return catalog.Owner
	case column == "Size":
		return ""
	}
	return cell
}

func TestFixture(t *testing.T) {
	cat := fixtureCatalog(t)
	blocks := readFixture(t)
	if len(blocks) < 17 {
		t.Fatalf("fixture has %d psql blocks, want 17", len(blocks))
	}
	for _, b := range blocks {
		t.Run(b.cmd, func(t *testing.T) {
			if strings.HasPrefix(b.cmd, `\d `) || strings.HasPrefix(b.cmd, `\d+ `) {
				checkDescribe(t, cat, b)
			} else {
				checkList(t, cat, b)
			}
		})
	}
}

// checkList replays a single-query listing command (\d, \dt, \l, \dn, ...).
func checkList(t *testing.T, cat catalog.Reader, b block) {
	if len(b.queries) != 1 {
		t.Fatalf("%d queries, want 1", len(b.queries))
	}
	header, rows := answerText(t, cat, b.queries[0])
	want := parsePrinted(b.output)
	var wantRows [][]string
	switch b.cmd {
	case `\l`:
		wantRows = [][]string{{"dev", "root", "UTF8", "C.UTF-8", "C.UTF-8", "", "libc", ""}}
	case `\dt s1.*`:
		if !strings.Contains(strings.Join(b.output, "\n"), "s1") {
			t.Fatal("fixture changed")
		}
		want.header = header // psql prints "Did not find any relation named "s1.*"." for no rows
	default:
		if want.header == nil {
			t.Fatalf("no table in printed output %q", b.output)
		}
		for _, r := range want.rows {
			if r[0] == "s1" && b.cmd != `\dn` || b.cmd == `\dn` && r[0] == "s1" {
				continue // schema s1 does not exist here
			}
			row := make([]string, len(r))
			for i := range r {
				row[i] = ours(r[i], want.header[i])
			}
			wantRows = append(wantRows, row)
		}
	}
	if !slices.Equal(header, want.header) {
		t.Errorf("header %q, want %q", header, want.header)
	}
	if !slices.EqualFunc(rows, wantRows, slices.Equal) {
		t.Errorf("rows\n got  %q\n want %q", rows, wantRows)
	}
}

// checkDescribe replays describeTableDetails: the lookup, then per relation
// the info, columns and footer queries, printing as psql does.
func checkDescribe(t *testing.T, cat catalog.Reader, b block) {
	verbose := strings.HasPrefix(b.cmd, `\d+`)
	_, found := answerText(t, cat, b.queries[0])
	if strings.Contains(b.cmd, "s1.") || strings.Contains(b.cmd, "nosuch") {
		if len(found) != 0 {
			t.Fatalf("lookup found %q, want nothing (psql prints: Did not find any relation named ...)", found)
		}
		return
	}
	if len(found) != 1 {
		t.Fatalf("lookup found %q, want one relation", found)
	}
	oid, schema, name := found[0][0], found[0][1], found[0][2]
	for _, q := range b.queries[1:] {
		if !strings.Contains(q, "'"+oid+"'") {
			t.Fatalf("query does not mention oid %s:\n%s", oid, q)
		}
	}
	want := parsePrinted(b.output)

	_, info := answerText(t, cat, b.queries[1])
	if len(info) != 1 || len(info[0]) != 15 {
		t.Fatalf("table info %q", info)
	}
	relkind, hasIndex, am := info[0][1], info[0][2] == "t", info[0][14]
	title := map[string]string{"r": "Table", "v": "View", "m": "Materialized view"}[relkind] + ` "` + schema + "." + name + `"`
	if title != want.title {
		t.Errorf("title %q, want %q", title, want.title)
	}

	colNames, colRows := answerText(t, cat, b.queries[2])
	header := []string{"Column", "Type", "Collation", "Nullable", "Default"}
	optional := map[string]string{"attstorage": "Storage", "attcompression": "Compression", "attstattarget": "Stats target", "col_description": "Description"}
	for _, n := range colNames[7:] {
		header = append(header, optional[n])
	}
	if !slices.Equal(header, want.header) {
		t.Errorf("header %q, want %q", header, want.header)
	}
	var got [][]string
	for _, r := range colRows {
		nullable := ""
		if r[3] == "t" {
			nullable = "not null"
		}
		row := []string{r[0], r[1], r[4], nullable, r[2]}
		for j, n := range colNames[7:] {
			v := r[7+j]
			switch n {
			case "attstorage":
				v = map[string]string{"p": "plain", "m": "main", "x": "extended", "e": "external"}[v]
			case "attcompression":
				v = map[string]string{"": "", "p": "pglz", "l": "lz4"}[v]
			}
			row = append(row, v)
		}
		got = append(got, row)
	}
	if !slices.EqualFunc(got, want.rows, slices.Equal) {
		t.Errorf("columns\n got  %q\n want %q", got, want.rows)
	}

	// Footers, in psql's order. psql sends the index query only when relhasindex.
	var footers []string
	sawIndexQuery := false
	for _, q := range b.queries[3:] {
		names, rows := answerText(t, cat, q)
		switch names[0] {
		case "relname":
			sawIndexQuery = true
			if len(rows) > 0 {
				footers = append(footers, "Indexes:")
			}
			for _, r := range rows {
				line := `    "` + r[0] + `"`
				if r[1] == "t" {
					line += " PRIMARY KEY,"
				}
				def := r[5]
				if i := strings.Index(def, " USING "); i >= 0 {
					def = def[i+7:]
				}
				footers = append(footers, line+" "+def)
			}
		case "pg_get_viewdef":
			if len(rows) != 1 {
				t.Fatalf("pg_get_viewdef rows %q", rows)
			}
			footers = append(footers, "View definition:")
			footers = append(footers, strings.Split(rows[0][0], "\n")...)
		default:
			if len(rows) != 0 {
				t.Errorf("%s: %d rows, want none", names[0], len(rows))
			}
		}
	}
	if sawIndexQuery != hasIndex {
		t.Errorf("relhasindex %v but psql sent the index query: %v", hasIndex, sawIndexQuery)
	}
	if verbose && am != "" && (relkind == "r" || relkind == "m") {
		footers = append(footers, "Access method: "+am)
	}
	wantFooters := want.footers
	if i := slices.Index(wantFooters, "View definition:"); i >= 0 {
		j := i + 1
		for j < len(wantFooters) && strings.HasPrefix(wantFooters[j], " ") {
			j++
		}
		wantFooters = slices.Concat(wantFooters[:i+1], viewDefs[name], wantFooters[j:])
	}
	if !slices.Equal(footers, wantFooters) {
		t.Errorf("footers\n got  %q\n want %q", footers, wantFooters)
	}
}
