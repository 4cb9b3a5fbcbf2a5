package postgres

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// Name is the connector option value.
const Name = "postgres"

// Option keys.
const (
	optConnector       = "connector"
	optType            = "type"
	optPrimaryKey      = "primary_key"
	optForceAppendOnly = "force_append_only"
	optHost            = "host"
	optPort            = "port"
	optUser            = "user"
	optPassword        = "password"
	optDatabase        = "database"
	optSchema          = "schema"
	optTable           = "table"
)

// Sink types (the type option).
const (
	TypeAppendOnly = "append-only"
	TypeUpsert     = "upsert"
)

// Defaults.
const (
	DefaultPort   = 5432
	DefaultSchema = "public"
)

var knownOptions = []string{
	optConnector, optType, optPrimaryKey, optForceAppendOnly, optHost, optPort,
	optUser, optPassword, optDatabase, optSchema, optTable,
}

// Column is one column of the sink, as the engine produces it. Name is matched
// to the target's column names case-insensitively (an exact match wins).
type Column struct {
	Name string
	Type types.T
}

// Config is a PostgreSQL sink's options.
type Config struct {
	Host, User, Password, Database, Schema, Table string
	Port                                          int
	// Upsert is type = 'upsert'; otherwise the sink is append-only.
	Upsert bool
	// PrimaryKey names the upsert key's sink columns (primary_key, or the
	// key Parse was given). Append-only sinks keep what primary_key said
	// but do not use it.
	PrimaryKey []string
}

// Parse reads a PostgreSQL sink's options. Keys are matched lower-cased;
// values other than the password are trimmed. host, user, database, table
// and type ('append-only' or 'upsert') are required; port defaults to 5432
// and schema to public. primary_key is a comma-separated list of sink
// columns; an upsert sink without it uses defaultKey, and needs one of the
// two. Other keys (besides connector and force_append_only, which the engine
// reads) are refused. Errors are of kind types.ErrInvalidParameter.
func Parse(props map[string]string, defaultKey []string) (Config, error) {
	cfg := Config{Port: DefaultPort, Schema: DefaultSchema}
	opts := make(map[string]string, len(props))
	for k, v := range props {
		k = strings.ToLower(strings.TrimSpace(k))
		if !isKnown(k) {
			return Config{}, types.Errorf(types.ErrInvalidParameter,
				"unknown postgres sink option %q (known: %s)", k, strings.Join(knownOptions, ", "))
		}
		if k != optPassword {
			v = strings.TrimSpace(v)
		}
		opts[k] = v
	}
	required := func(k string) (string, error) {
		v := opts[k]
		if v == "" {
			return "", types.Errorf(types.ErrInvalidParameter, "postgres sink option %s is required", k)
		}
		return v, nil
	}
	var err error
	if cfg.Host, err = required(optHost); err != nil {
		return Config{}, err
	}
	if cfg.User, err = required(optUser); err != nil {
		return Config{}, err
	}
	if cfg.Database, err = required(optDatabase); err != nil {
		return Config{}, err
	}
	if cfg.Table, err = required(optTable); err != nil {
		return Config{}, err
	}
	cfg.Password = opts[optPassword]
	if v, ok := opts[optSchema]; ok {
		if v == "" {
			return Config{}, types.Errorf(types.ErrInvalidParameter, "postgres sink option schema must not be empty")
		}
		cfg.Schema = v
	}
	if v, ok := opts[optPort]; ok {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return Config{}, types.Errorf(types.ErrInvalidParameter, "postgres sink option port must be an integer between 1 and 65535, got %q", v)
		}
		cfg.Port = p
	}
	typ, err := required(optType)
	if err != nil {
		return Config{}, types.Errorf(types.ErrInvalidParameter, "postgres sink option type is required ('%s' or '%s')", TypeAppendOnly, TypeUpsert)
	}
	switch strings.ToLower(typ) {
	case TypeAppendOnly:
	case TypeUpsert:
		cfg.Upsert = true
	default:
		return Config{}, types.Errorf(types.ErrInvalidParameter, "postgres sink type must be '%s' or '%s', got %q", TypeAppendOnly, TypeUpsert, typ)
	}
	if v := opts[optPrimaryKey]; v != "" {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				return Config{}, types.Errorf(types.ErrInvalidParameter, "postgres sink option primary_key has an empty column name: %q", v)
			}
			cfg.PrimaryKey = append(cfg.PrimaryKey, name)
		}
	} else if cfg.Upsert {
		cfg.PrimaryKey = append([]string(nil), defaultKey...)
	}
	if cfg.Upsert && len(cfg.PrimaryKey) == 0 {
		return Config{}, types.Errorf(types.ErrInvalidParameter, "an upsert postgres sink needs a key: set primary_key")
	}
	seen := make(map[string]bool, len(cfg.PrimaryKey))
	for _, name := range cfg.PrimaryKey {
		l := strings.ToLower(name)
		if seen[l] {
			return Config{}, types.Errorf(types.ErrInvalidParameter, "postgres sink primary_key names column %q twice", name)
		}
		seen[l] = true
	}
	return cfg, nil
}

func isKnown(k string) bool {
	for _, o := range knownOptions {
		if k == o {
			return true
		}
	}
	return false
}

// target names the sink's table for messages: schema.table.
func (c Config) target() string { return c.Schema + "." + c.Table }

// qualified returns the quoted "schema"."table".
func (c Config) qualified() string { return pgx.Identifier{c.Schema, c.Table}.Sanitize() }

// connConfig returns the pgx connection settings: the options, plus session
// settings that make the text values the sink sends parse the same way on
// every server (ISO dates, postgres-style intervals).
func (c Config) connConfig() (*pgx.ConnConfig, error) {
	kv := map[string]string{
		"host":            c.Host,
		"port":            strconv.Itoa(c.Port),
		"user":            c.User,
		"dbname":          c.Database,
		"connect_timeout": "10",
	}
	if c.Password != "" {
		kv["password"] = c.Password
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := strings.ReplaceAll(kv[k], `\`, `\\`)
		v = strings.ReplaceAll(v, `'`, `\'`)
		fmt.Fprintf(&b, "%s='%s' ", k, v)
	}
	cc, err := pgx.ParseConfig(b.String())
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidParameter, "postgres sink %s: bad connection options: %v", c.target(), err)
	}
	cc.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil } // connector.Dial resolves
	cc.DialFunc = connector.Dial
	cc.RuntimeParams["application_name"] = "tributary"
	cc.RuntimeParams["datestyle"] = "ISO, MDY"
	cc.RuntimeParams["intervalstyle"] = "postgres"
	return cc, nil
}

// connect opens a connection to the target database.
func (c Config) connect(ctx context.Context) (*pgx.Conn, error) {
	cc, err := c.connConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("postgres sink %s: connect to %s:%d database %s as %s: %w",
			c.target(), c.Host, c.Port, c.Database, c.User, connector.Peer(err))
	}
	return conn, nil
}
