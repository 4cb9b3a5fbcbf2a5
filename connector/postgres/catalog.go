package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/tributary/tributary/sql/types"
)

// pgColumn is one column of the target table, as the catalog describes it.
type pgColumn struct {
	name       string
	typeName   string // format_type, for messages
	cast       string // the type's qualified name: what values are cast to (no modifiers: char(n) must not become char(1))
	baseOID    uint32 // the column's type, or a domain's base type
	category   string // pg_type.typcategory of baseOID
	notNull    bool
	hasDefault bool
	identity   string // pg_attribute.attidentity: "", "a" (always) or "d" (by default)
	generated  string // pg_attribute.attgenerated: "" or "s" (stored)
	used       bool   // a sink column maps to it
}

// target is what the sink learned about its table: the quoted name and, per
// sink column, the column it fills.
type target struct {
	table string      // "schema"."table"
	cols  []targetCol // one per sink column, in sink order
	key   []int       // sink column indexes of the upsert key, in PrimaryKey order
}

// targetCol is the target column a sink column fills.
type targetCol struct {
	ident string // quoted column name
	cast  string // the type its text values are cast to
	// trimKey is set for character(n) key columns, whose comparisons ignore
	// trailing spaces: the epoch's per-key compaction must too.
	trimKey bool
	typ     types.T // the sink column's type
}

// Check connects to the target database and verifies that the sink can
// write its columns into the table: it exists; each sink column names one of
// its columns (case-insensitively, an exact match first) whose type fits the
// sink column's (integers into smallint, integer, bigint or numeric; floats
// into real, double precision or numeric; numeric into numeric; text into a
// string type; booleans, dates, times, timestamps, timestamps with time zone,
// intervals, bytea and jsonb into their own types, or domains over them); the
// columns the sink does not fill are nullable or have a default; and an
// upsert sink's table has a primary key or unique index on exactly its
// PrimaryKey columns, which INSERT ... ON CONFLICT needs. Errors are
// *types.Error of kind ErrUndefinedTable, ErrUndefinedColumn,
// ErrAmbiguousColumn, ErrDatatypeMismatch, ErrWrongObjectType or
// ErrInvalidParameter, or a connection error.
func (c Config) Check(ctx context.Context, cols []Column) error {
	conn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	_, err = describe(ctx, conn, c, cols)
	if cerr := closeConn(conn); err == nil && cerr != nil {
		return fmt.Errorf("postgres sink %s: close the connection: %w", c.target(), cerr)
	}
	return err
}

// describe reads the target table from the catalog and maps the sink's
// columns onto it; see Check.
func describe(ctx context.Context, conn *pgx.Conn, c Config, cols []Column) (*target, error) {
	if len(cols) == 0 {
		return nil, types.Errorf(types.ErrInvalidParameter, "postgres sink %s has no columns", c.target())
	}
	for i := range cols {
		for j := 0; j < i; j++ {
			if strings.EqualFold(cols[i].Name, cols[j].Name) {
				return nil, types.Errorf(types.ErrDuplicateColumn,
					"postgres sink %s: columns %q and %q would fill the same target column", c.target(), cols[j].Name, cols[i].Name)
			}
		}
	}
	key, err := keyIndexes(c, cols)
	if err != nil {
		return nil, err
	}
	relid, err := lookupTable(ctx, conn, c)
	if err != nil {
		return nil, err
	}
	pgCols, err := tableColumns(ctx, conn, relid)
	if err != nil {
		return nil, fmt.Errorf("postgres sink %s: read the columns: %w", c.target(), err)
	}
	t := &target{table: c.qualified(), cols: make([]targetCol, len(cols)), key: key}
	for i, col := range cols {
		pc, err := matchColumn(c, pgCols, col.Name)
		if err != nil {
			return nil, err
		}
		if !compatible(col.Type, pc.baseOID, pc.category) {
			return nil, types.Errorf(types.ErrDatatypeMismatch,
				"postgres sink %s: column %q is %s in the sink but %s in PostgreSQL, which cannot hold it",
				c.target(), col.Name, col.Type, pc.typeName)
		}
		switch {
		case pc.generated != "":
			return nil, types.Errorf(types.ErrInvalidParameter,
				"postgres sink %s: column %q is a generated column and cannot be written", c.target(), pc.name)
		case pc.identity == "a":
			return nil, types.Errorf(types.ErrInvalidParameter,
				"postgres sink %s: column %q is GENERATED ALWAYS AS IDENTITY and cannot be written", c.target(), pc.name)
		}
		pc.used = true
		t.cols[i] = targetCol{
			ident: pgx.Identifier{pc.name}.Sanitize(),
			cast:  pc.cast,
			typ:   col.Type,
			// bpchar is 1042.
			trimKey: pc.baseOID == types.OIDBpchar,
		}
	}
	for _, pc := range pgCols {
		if !pc.used && pc.notNull && !pc.hasDefault && pc.identity == "" && pc.generated == "" {
			return nil, types.Errorf(types.ErrInvalidParameter,
				"postgres sink %s: column %q is NOT NULL without a default, and the sink has no column for it", c.target(), pc.name)
		}
	}
	if c.Upsert {
		if err := checkUniqueKey(ctx, conn, c, relid, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// keyIndexes maps PrimaryKey onto the sink's columns (upsert only).
func keyIndexes(c Config, cols []Column) ([]int, error) {
	if !c.Upsert {
		return nil, nil
	}
	key := make([]int, 0, len(c.PrimaryKey))
	for _, name := range c.PrimaryKey {
		i := slices.IndexFunc(cols, func(col Column) bool { return col.Name == name })
		if i < 0 {
			i = slices.IndexFunc(cols, func(col Column) bool { return strings.EqualFold(col.Name, name) })
		}
		if i < 0 {
			return nil, types.Errorf(types.ErrUndefinedColumn,
				"postgres sink %s: primary key column %q is not a column of the sink", c.target(), name)
		}
		if slices.Contains(key, i) {
			return nil, types.Errorf(types.ErrInvalidParameter,
				"postgres sink %s: primary key names column %q twice", c.target(), name)
		}
		key = append(key, i)
	}
	return key, nil
}

// lookupTable returns the oid of schema.table (names exact, as PostgreSQL
// stores them).
func lookupTable(ctx context.Context, conn *pgx.Conn, c Config) (uint32, error) {
	var relid uint32
	var kind string
	err := conn.QueryRow(ctx, `
		SELECT c.oid, c.relkind::text FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, c.Schema, c.Table).Scan(&relid, &kind)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		e := &types.Error{Kind: types.ErrUndefinedTable,
			Msg: fmt.Sprintf("postgres sink: table %q does not exist in database %s", c.target(), c.Database)}
		var schema, table string
		if conn.QueryRow(ctx, `
			SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE lower(n.nspname) = lower($1) AND lower(c.relname) = lower($2) LIMIT 1`,
			c.Schema, c.Table).Scan(&schema, &table) == nil {
			e.Hint = fmt.Sprintf("schema and table names are case-sensitive: did you mean schema = '%s', table = '%s'?", schema, table)
		}
		return 0, e
	case err != nil:
		return 0, fmt.Errorf("postgres sink %s: look up the table: %w", c.target(), err)
	case kind != "r" && kind != "p":
		return 0, types.Errorf(types.ErrWrongObjectType, "postgres sink: %q is not a table", c.target())
	}
	return relid, nil
}

// tableColumns reads the table's live columns; a domain column reports its
// base type's oid and category.
func tableColumns(ctx context.Context, conn *pgx.Conn, relid uint32) ([]*pgColumn, error) {
	rows, err := conn.Query(ctx, `
		WITH RECURSIVE base(oid, top, typtype, typbasetype, typcategory) AS (
			SELECT t.oid, t.oid, t.typtype::text, t.typbasetype, t.typcategory::text FROM pg_catalog.pg_type t
			WHERE t.oid IN (SELECT atttypid FROM pg_catalog.pg_attribute WHERE attrelid = $1)
			UNION ALL
			SELECT t.oid, b.top, t.typtype::text, t.typbasetype, t.typcategory::text
			FROM base b JOIN pg_catalog.pg_type t ON t.oid = b.typbasetype
			WHERE b.typtype = 'd'
		)
		SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod),
			pg_catalog.quote_ident(tn.nspname) || '.' || pg_catalog.quote_ident(t.typname), b.oid, b.typcategory,
			a.attnotnull, a.atthasdef, a.attidentity::text, a.attgenerated::text
		FROM pg_catalog.pg_attribute a
		JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
		JOIN pg_catalog.pg_namespace tn ON tn.oid = t.typnamespace
		JOIN base b ON b.top = a.atttypid AND b.typtype <> 'd'
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, relid)
	if err != nil {
		return nil, err
	}
	var out []*pgColumn
	for rows.Next() {
		pc := &pgColumn{}
		if err := rows.Scan(&pc.name, &pc.typeName, &pc.cast, &pc.baseOID, &pc.category,
			&pc.notNull, &pc.hasDefault, &pc.identity, &pc.generated); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, pc)
	}
	return out, rows.Err()
}

// matchColumn finds the target column a sink column fills: the one of that
// exact name, else the only one equal to it ignoring case.
func matchColumn(c Config, pgCols []*pgColumn, name string) (*pgColumn, error) {
	var found []*pgColumn
	for _, pc := range pgCols {
		if pc.name == name {
			return pc, nil
		}
		if strings.EqualFold(pc.name, name) {
			found = append(found, pc)
		}
	}
	switch len(found) {
	case 0:
		return nil, types.Errorf(types.ErrUndefinedColumn,
			"postgres sink %s: column %q of the sink does not exist in the target table", c.target(), name)
	case 1:
		return found[0], nil
	}
	return nil, types.Errorf(types.ErrAmbiguousColumn,
		"postgres sink %s: column %q of the sink matches columns %q and %q of the target table; rename the sink column to one exactly",
		c.target(), name, found[0].name, found[1].name)
}

// compatible reports whether values of sink type t, sent as text, belong in
// a column of PostgreSQL type oid (a base type) of the given category.
func compatible(t types.T, oid uint32, category string) bool {
	in := func(oids ...uint32) bool { return slices.Contains(oids, oid) }
	switch t.ID {
	case types.Int16, types.Int32, types.Int64:
		return in(types.OIDInt2, types.OIDInt4, types.OIDInt8, types.OIDNumeric)
	case types.Float32, types.Float64:
		return in(types.OIDFloat4, types.OIDFloat8, types.OIDNumeric)
	case types.Numeric:
		return in(types.OIDNumeric)
	case types.Varchar, types.Unknown:
		return category == "S" // text, varchar, char(n), name, citext, ...
	case types.Bool:
		return in(types.OIDBool)
	case types.Bytea:
		return in(types.OIDBytea)
	case types.Date:
		return in(types.OIDDate)
	case types.Time:
		return in(types.OIDTime)
	case types.Timestamp:
		return in(types.OIDTimestamp)
	case types.Timestamptz:
		return in(types.OIDTimestamptz)
	case types.Interval:
		return in(types.OIDInterval)
	case types.Jsonb:
		return in(types.OIDJsonb, types.OIDJSON)
	case types.Uuid:
		return in(types.OIDUuid)
	case types.Array:
		// An array column (typcategory A) of a compatible element type.
		elem := types.ElemOID(oid)
		if category != "A" || elem == 0 {
			return false
		}
		elemCategory := ""
		if slices.Contains([]uint32{types.OIDText, types.OIDVarchar, types.OIDBpchar, types.OIDName}, elem) {
			elemCategory = "S"
		}
		return compatible(t.ElemType(), elem, elemCategory)
	}
	return false
}

// checkUniqueKey verifies that the table has a primary key or a valid,
// non-partial unique index on plain columns whose key columns are exactly the
// upsert key's: INSERT ... ON CONFLICT (key) infers its arbiter from it.
func checkUniqueKey(ctx context.Context, conn *pgx.Conn, c Config, relid uint32, t *target) error {
	want := make([]string, len(t.key))
	for i, k := range t.key {
		want[i] = t.cols[k].ident
	}
	slices.Sort(want)
	rows, err := conn.Query(ctx, `
		SELECT ARRAY(
			SELECT a.attname::text FROM generate_series(0, i.indnkeyatts - 1) AS k
			JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[k])
		FROM pg_catalog.pg_index i
		WHERE i.indrelid = $1 AND i.indisunique AND i.indisvalid AND i.indimmediate
			AND i.indpred IS NULL AND i.indexprs IS NULL`, relid)
	if err != nil {
		return fmt.Errorf("postgres sink %s: read the unique indexes: %w", c.target(), err)
	}
	var have []string
	found := false
	for rows.Next() {
		var names []string
		if err := rows.Scan(&names); err != nil {
			rows.Close()
			return fmt.Errorf("postgres sink %s: read the unique indexes: %w", c.target(), err)
		}
		idents := make([]string, len(names))
		for i, n := range names {
			idents[i] = pgx.Identifier{n}.Sanitize()
		}
		slices.Sort(idents)
		if slices.Equal(idents, want) {
			found = true
		}
		have = append(have, "("+strings.Join(idents, ", ")+")")
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres sink %s: read the unique indexes: %w", c.target(), err)
	}
	if found {
		return nil
	}
	e := &types.Error{Kind: types.ErrInvalidParameter, Msg: fmt.Sprintf(
		"postgres sink %s: an upsert sink needs a primary key or unique constraint on exactly its key (%s) in the target table",
		c.target(), strings.Join(want, ", "))}
	if len(have) == 0 {
		e.Detail = "The target table has no primary key or unique constraint."
	} else {
		e.Detail = "The target table's unique keys are " + strings.Join(have, ", ") + "."
	}
	e.Hint = "Add one (ALTER TABLE ... ADD PRIMARY KEY), or set primary_key to match an existing one."
	return e
}
