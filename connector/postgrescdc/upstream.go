package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// pgTypes maps the upstream type OIDs a CDC table can read to Tributary
// types (the values arrive in their text forms, read by types.ParseText).
var pgTypes = map[uint32]types.ID{
	16: types.Bool, 21: types.Int16, 23: types.Int32, 20: types.Int64, 700: types.Float32, 701: types.Float64,
	1700: types.Numeric, 25: types.Varchar, 1043: types.Varchar, 1042: types.Varchar, 2950: types.Varchar,
	17: types.Bytea, 1082: types.Date, 1083: types.Time, 1114: types.Timestamp, 1184: types.Timestamptz,
	1186: types.Interval, 3802: types.Jsonb, 114: types.Jsonb,
}

const supportedTypes = "smallint, integer, bigint, real, double precision, numeric, boolean, text, varchar, char, uuid (as uuid or varchar), bytea, date, time, timestamp, timestamptz, interval, json and jsonb"

// upstreamColumn is a column of the upstream table.
type upstreamColumn struct {
	name   string
	typ    uint32
	format string // format_type(): for messages
	// cCollated: a text column whose collation orders as bytes (C, POSIX).
	cCollated bool
}

// upstreamTable is what the reader needs of the upstream table.
type upstreamTable struct {
	oid  uint32
	cols []upstreamColumn
	pk   []string // the primary key's columns, in key order
}

// binding relates the Tributary table's columns to the upstream's.
type binding struct {
	names []string  // the upstream column of each Tributary column
	types []types.T // each Tributary column's type
	oids  []uint32  // each upstream column's type (the copy's formats)
	bin   []bool    // the columns the copy reads in binary format (setFormats)
	// pk lists the Tributary column of each upstream key column, in key
	// order (the copy's order); pkTypes are their types.
	pk      []int
	pkTypes []types.T
	// collate: key columns ordered with COLLATE "C" in the copy query
	// (text columns whose own collation is not bytewise).
	collate []bool
}

// errUpstream marks a mismatch between the upstream and the options or
// the Tributary table (wrapped in CREATE's error).
var errUpstream = errors.New("postgres-cdc")

// describe reads the upstream table's columns and primary key.
func describe(ctx context.Context, conn *pgconn.PgConn, cfg Config) (*upstreamTable, error) {
	rows, err := query(ctx, conn, `SELECT c.oid::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = `+quoteLiteral(cfg.Schema)+` AND c.relname = `+quoteLiteral(cfg.Table)+` AND c.relkind IN ('r', 'p')`)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, types.Errorf(types.ErrUndefinedTable, "postgres-cdc: upstream table %s.%s does not exist in database %q (%s, %s)", cfg.Schema, cfg.Table, cfg.Database, OptSchema, OptTable)
	}
	oid, _ := strconv.ParseUint(rows[0][0], 10, 32)
	t := &upstreamTable{oid: uint32(oid)}
	rows, err = query(ctx, conn, `SELECT a.attname, a.atttypid::text, format_type(a.atttypid, a.atttypmod),
		coalesce(CASE WHEN a.attcollation = 0 THEN '' WHEN co.collname = 'default' THEN (SELECT datcollate FROM pg_database WHERE datname = current_database()) ELSE co.collcollate END, '')
		FROM pg_attribute a LEFT JOIN pg_collation co ON co.oid = a.attcollation
		WHERE a.attrelid = `+rows[0][0]+` AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		typ, _ := strconv.ParseUint(r[1], 10, 32)
		t.cols = append(t.cols, upstreamColumn{name: r[0], typ: uint32(typ), format: r[2], cCollated: r[3] == "C" || r[3] == "POSIX" || r[3] == ""})
	}
	rows, err = query(ctx, conn, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = `+strconv.FormatUint(oid, 10)+` AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)`)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		t.pk = append(t.pk, r[0])
	}
	if len(t.pk) == 0 {
		return nil, types.Errorf(types.ErrInvalidTableDefinition, "postgres-cdc: upstream table %s.%s has no primary key (a CDC table copies and follows rows by primary key)", cfg.Schema, cfg.Table)
	}
	return t, nil
}

// bind matches the Tributary table's columns with the upstream's: every
// column must exist upstream (by name, case-insensitively) with a type that
// maps to its type, and the primary keys must be the same columns.
func bind(spec connector.SourceSpec, cfg Config, up *upstreamTable) (*binding, error) {
	b := &binding{}
	byName := map[string]upstreamColumn{}
	for _, c := range up.cols {
		byName[strings.ToLower(c.name)] = c
	}
	for _, c := range spec.Columns {
		if c.Meta != "" {
			return nil, types.Errorf(types.ErrUnsupported, "postgres-cdc: column %q: INCLUDE and hidden columns are not supported; declare the upstream table's PRIMARY KEY", c.Name)
		}
		u, ok := byName[strings.ToLower(c.Name)]
		if !ok {
			return nil, types.Errorf(types.ErrUndefinedColumn, "postgres-cdc: column %q does not exist in upstream table %s.%s", c.Name, cfg.Schema, cfg.Table)
		}
		id, ok := pgTypes[u.typ]
		if !ok {
			return nil, types.Errorf(types.ErrUnsupported, "postgres-cdc: column %q: upstream type %s is not supported (supported: %s)", c.Name, u.format, supportedTypes)
		}
		if id != c.Type.ID && (u.typ != types.OIDUuid || c.Type.ID != types.Uuid) { // uuid reads as uuid or varchar
			return nil, types.Errorf(types.ErrDatatypeMismatch, "postgres-cdc: column %q is %s but upstream column %s.%s.%s is %s (declare it as %s)",
				c.Name, c.Type.SQLName(), cfg.Schema, cfg.Table, u.name, u.format, types.T{ID: id}.SQLName())
		}
		b.names = append(b.names, u.name)
		b.types = append(b.types, c.Type)
		b.oids = append(b.oids, u.typ)
	}
	// The keys: the same columns (the Tributary key's order may differ).
	mine := map[string]int{}
	for _, k := range spec.Key {
		mine[strings.ToLower(b.names[k])] = k
	}
	if len(mine) != len(up.pk) {
		return nil, keyMismatch(spec, cfg, up)
	}
	for _, name := range up.pk {
		k, ok := mine[strings.ToLower(name)]
		if !ok {
			return nil, keyMismatch(spec, cfg, up)
		}
		b.pk = append(b.pk, k)
		b.pkTypes = append(b.pkTypes, b.types[k])
		b.collate = append(b.collate, b.types[k].ID == types.Varchar && !byName[strings.ToLower(name)].cCollated)
	}
	b.setFormats()
	return b, nil
}

func keyMismatch(spec connector.SourceSpec, cfg Config, up *upstreamTable) error {
	var mine []string
	for _, k := range spec.Key {
		mine = append(mine, spec.Columns[k].Name)
	}
	return types.Errorf(types.ErrInvalidTableDefinition, "postgres-cdc: the table's PRIMARY KEY (%s) must be the upstream table %s.%s's primary key (%s)",
		strings.Join(mine, ", "), cfg.Schema, cfg.Table, strings.Join(up.pk, ", "))
}

// query runs sql (no parameters) and returns its rows as text (NULL as "").
func query(ctx context.Context, conn *pgconn.PgConn, sql string) ([][]string, error) {
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errUpstream, firstLine(sql), err)
	}
	var out [][]string
	for _, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errUpstream, firstLine(sql), r.Err)
		}
		for _, row := range r.Rows {
			s := make([]string, len(row))
			for i, v := range row {
				s[i] = string(v)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func firstLine(sql string) string {
	if i := strings.IndexByte(sql, '\n'); i >= 0 {
		return sql[:i] + " ..."
	}
	return sql
}
