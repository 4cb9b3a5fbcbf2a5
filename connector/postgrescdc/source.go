package postgrescdc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

func init() {
	connector.RegisterSource(connector.SourceConnector{Name: Name, ReadOnly: true, Tables: true, TableOf: TableOf, TableOptions: TableOptions, Parse: func(spec connector.SourceSpec) (connector.Source, error) {
		s, err := ParseSource(spec)
		if err != nil {
			return nil, err
		}
		return s, nil
	}, Endpoints: func(props map[string]string) []string {
		port := strings.TrimSpace(props[OptPort])
		if port == "" {
			port = "5432"
		}
		if h := strings.TrimSpace(props[OptHostname]); h != "" {
			return []string{net.JoinHostPort(h, port)}
		}
		return nil
	}})
}

// checkTimeout bounds Check.
const checkTimeout = 30 * time.Second

// Source is a parsed postgres-cdc table or source (connector.Source). A
// source (CREATE SOURCE) holds the connection, the slot and the
// publication and reads nothing itself; its tables (CREATE TABLE ... FROM
// source TABLE) read the slot together; a single-table form table reads
// its own slot.
type Source struct {
	cfg  Config
	spec connector.SourceSpec
	// What Check made (a source's slot and publication).
	madeSlot, madePub bool
	// bounds are the key ranges' bounds Check fixed for a parallel copy
	// (planned: Resolved records them, OptRanges).
	bounds  []string
	planned bool
}

// ParseSource reads a postgres-cdc table's or source's options. FORMAT is
// refused; a source takes no columns, a table needs the upstream's
// primary key.
func ParseSource(spec connector.SourceSpec) (*Source, error) {
	if spec.Format != "" || spec.Encode != "" {
		return nil, types.Errorf(types.ErrUnsupported, "postgres-cdc: FORMAT ... ENCODE ... is not allowed (the rows are the upstream table's)")
	}
	cfg, err := ParseConfig(spec.Props, spec.Relation, spec.Table)
	if err != nil {
		return nil, err
	}
	if !spec.Table {
		for _, c := range spec.Columns {
			if c.Meta == "" {
				return nil, types.Errorf(types.ErrInvalidTableDefinition, "postgres-cdc: a source has no columns: create a table per upstream table FROM it (CREATE TABLE t (columns, PRIMARY KEY (...)) FROM %s TABLE 'schema.table')", spec.Relation)
			}
		}
		return &Source{cfg: cfg, spec: spec}, nil
	}
	if len(spec.Key) == 0 {
		return nil, types.Errorf(types.ErrInvalidTableDefinition, "postgres-cdc: the table needs a PRIMARY KEY, the upstream table's")
	}
	for _, c := range spec.Columns {
		if c.Meta != "" {
			return nil, types.Errorf(types.ErrInvalidTableDefinition, "postgres-cdc: the table needs a PRIMARY KEY, the upstream table's, and no INCLUDE columns (column %q)", c.Name)
		}
	}
	return &Source{cfg: cfg, spec: spec}, nil
}

// Config returns the options.
func (s *Source) Config() Config { return s.cfg }

// Check implements connector.Source: the upstream answers with wal_level =
// logical, the user may replicate, the table exists with a primary key and
// columns that match, and the publication and the slot exist (made when
// missing: the publication only with publication.create.enable). What
// Check made is dropped again when a later step fails.
func (s *Source) Check(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	conn, err := s.cfg.connect(ctx, false)
	if err != nil {
		return types.Errorf(types.ErrInvalidParameter, "%v", err)
	}
	defer conn.Close(context.Background())
	switch {
	case !s.spec.Table:
		return s.checkSource(ctx, conn)
	case s.cfg.SourceName != "":
		return s.checkSourceTable(ctx, conn)
	}
	cfg := s.cfg
	if err := checkServer(ctx, conn, cfg); err != nil {
		return err
	}
	if err := s.checkReadable(ctx, conn); err != nil {
		return err
	}
	var undo []string
	defer func() {
		if err != nil {
			for _, u := range undo {
				_, _ = query(context.Background(), conn, u) // best effort: the error says what failed
			}
		}
	}()
	rows, err := query(ctx, conn, "SELECT puballtables FROM pg_publication WHERE pubname = "+quoteLiteral(cfg.Publication))
	if err != nil {
		return err
	}
	switch {
	case len(rows) == 0 && !cfg.CreatePublication:
		return types.Errorf(types.ErrUndefinedObject, "postgres-cdc: publication %q does not exist (create it: CREATE PUBLICATION %s FOR TABLE %s, or set %s = 'true')",
			cfg.Publication, quoteIdent(cfg.Publication), cfg.QualifiedTable(), OptPublicationCreate)
	case len(rows) == 0:
		if _, err := query(ctx, conn, "CREATE PUBLICATION "+quoteIdent(cfg.Publication)+" FOR TABLE "+cfg.QualifiedTable()); err != nil {
			return types.Errorf(types.ErrInvalidParameter, "postgres-cdc: create publication %q: %v", cfg.Publication, err)
		}
		undo = append(undo, "DROP PUBLICATION IF EXISTS "+quoteIdent(cfg.Publication))
	default:
		if err := checkPublished(ctx, conn, cfg, false, &undo); err != nil {
			return err
		}
	}
	made, err := ensureSlot(ctx, conn, cfg, true)
	if err != nil {
		return err
	}
	if made {
		undo = append(undo, "SELECT pg_drop_replication_slot("+quoteLiteral(cfg.Slot)+")")
	}
	return nil
}

// checkServer checks wal_level and the user's replication privilege.
func checkServer(ctx context.Context, conn *pgconn.PgConn, cfg Config) error {
	rows, err := query(ctx, conn, "SELECT current_setting('wal_level'), (SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user)")
	if err != nil {
		return err
	}
	if rows[0][0] != "logical" {
		return types.Errorf(types.ErrInvalidParameter, "postgres-cdc: the upstream's wal_level is %s; logical replication needs wal_level = logical (ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL)", rows[0][0])
	}
	if rows[0][1] != "t" {
		return types.Errorf(types.ErrInvalidParameter, "postgres-cdc: user %q may not replicate (ALTER ROLE %s WITH REPLICATION)", cfg.User, quoteIdent(cfg.User))
	}
	return nil
}

// checkPublished checks that the publication publishes the table; when it
// does not, add (the publication is Tributary's to manage) adds it, noting
// the undo.
func checkPublished(ctx context.Context, conn *pgconn.PgConn, cfg Config, add bool, undo *[]string) error {
	rows, err := query(ctx, conn, "SELECT 1 FROM pg_publication_tables WHERE pubname = "+quoteLiteral(cfg.Publication)+
		" AND schemaname = "+quoteLiteral(cfg.Schema)+" AND tablename = "+quoteLiteral(cfg.Table))
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		return nil
	}
	if !add {
		return types.Errorf(types.ErrInvalidParameter, "postgres-cdc: publication %q does not publish table %s (ALTER PUBLICATION %s ADD TABLE %s)",
			cfg.Publication, cfg.QualifiedTable(), quoteIdent(cfg.Publication), cfg.QualifiedTable())
	}
	if _, err := query(ctx, conn, "ALTER PUBLICATION "+quoteIdent(cfg.Publication)+" ADD TABLE "+cfg.QualifiedTable()); err != nil {
		return types.Errorf(types.ErrInvalidParameter, "postgres-cdc: add table %s to publication %q: %v", cfg.QualifiedTable(), cfg.Publication, err)
	}
	*undo = append(*undo, "ALTER PUBLICATION "+quoteIdent(cfg.Publication)+" DROP TABLE "+cfg.QualifiedTable())
	return nil
}

// ensureSlot checks that the slot exists for pgoutput on the database, or
// (create) makes it; made reports that it did.
func ensureSlot(ctx context.Context, conn *pgconn.PgConn, cfg Config, create bool) (made bool, err error) {
	rows, err := query(ctx, conn, "SELECT plugin, database FROM pg_replication_slots WHERE slot_name = "+quoteLiteral(cfg.Slot))
	if err != nil {
		return false, err
	}
	if len(rows) == 0 {
		if !create {
			return false, types.Errorf(types.ErrUndefinedObject, "postgres-cdc: replication slot %q of source %s does not exist any more (drop and create the source again)", cfg.Slot, cfg.SourceName)
		}
		if _, err := query(ctx, conn, "SELECT pg_create_logical_replication_slot("+quoteLiteral(cfg.Slot)+", 'pgoutput')"); err != nil {
			return false, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: create replication slot %q: %v", cfg.Slot, err)
		}
		return true, nil
	}
	if rows[0][0] != "pgoutput" || rows[0][1] != cfg.Database {
		return false, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: replication slot %q exists with plugin %s on database %s (want pgoutput on %s): choose another %s",
			cfg.Slot, rows[0][0], rows[0][1], cfg.Database, OptSlot)
	}
	return false, nil
}

// checkSource is a CDC source's Check: the upstream answers with wal_level
// = logical, the user may replicate, the publication exists (made, with no
// table yet, when missing and publication.create.enable) and the slot
// exists (made when missing). What it made is dropped again when a later
// step fails.
func (s *Source) checkSource(ctx context.Context, conn *pgconn.PgConn) (err error) {
	cfg := s.cfg
	if err := checkServer(ctx, conn, cfg); err != nil {
		return err
	}
	var undo []string
	defer func() {
		if err != nil {
			for _, u := range undo {
				_, _ = query(context.Background(), conn, u) // best effort: the error says what failed
			}
			s.madePub, s.madeSlot = false, false
		}
	}()
	rows, err := query(ctx, conn, "SELECT 1 FROM pg_publication WHERE pubname = "+quoteLiteral(cfg.Publication))
	if err != nil {
		return err
	}
	switch {
	case len(rows) == 0 && !cfg.CreatePublication:
		return types.Errorf(types.ErrUndefinedObject, "postgres-cdc: publication %q does not exist (create it: CREATE PUBLICATION %s FOR TABLE ..., or set %s = 'true')",
			cfg.Publication, quoteIdent(cfg.Publication), OptPublicationCreate)
	case len(rows) == 0:
		if _, err := query(ctx, conn, "CREATE PUBLICATION "+quoteIdent(cfg.Publication)); err != nil {
			return types.Errorf(types.ErrInvalidParameter, "postgres-cdc: create publication %q: %v", cfg.Publication, err)
		}
		undo = append(undo, "DROP PUBLICATION IF EXISTS "+quoteIdent(cfg.Publication))
		s.madePub = true
	}
	rows, err = query(ctx, conn, "SELECT active FROM pg_replication_slots WHERE slot_name = "+quoteLiteral(cfg.Slot))
	if err != nil {
		return err
	}
	if len(rows) > 0 && rows[0][0] == "t" {
		return types.Errorf(types.ErrObjectInUse, "postgres-cdc: replication slot %q is in use (another reader streams from it): choose another %s", cfg.Slot, OptSlot)
	}
	if s.madeSlot, err = ensureSlot(ctx, conn, cfg, true); err != nil {
		return err
	}
	if s.madeSlot {
		undo = append(undo, "SELECT pg_drop_replication_slot("+quoteLiteral(cfg.Slot)+")")
	}
	return nil
}

// checkSourceTable is the Check of a table of a CDC source: the upstream
// table exists with a primary key and columns that match, the user can read
// it, the source's publication publishes it (it is added when the source
// manages the publication: publication.create.enable) and the slot is
// still there.
func (s *Source) checkSourceTable(ctx context.Context, conn *pgconn.PgConn) (err error) {
	cfg := s.cfg
	if err := s.checkReadable(ctx, conn); err != nil {
		return err
	}
	var undo []string
	defer func() {
		if err != nil {
			for _, u := range undo {
				_, _ = query(context.Background(), conn, u) // best effort: the error says what failed
			}
		}
	}()
	if err := checkPublished(ctx, conn, cfg, cfg.CreatePublication, &undo); err != nil {
		return err
	}
	_, err = ensureSlot(ctx, conn, cfg, false)
	return err
}

// Resolved implements connector.Resolver: a source's options with the slot
// and publication named (their defaults fixed at CREATE) and whether
// CREATE made the slot (DROP SOURCE then drops it).
func (s *Source) Resolved() map[string]string {
	out := make(map[string]string, len(s.spec.Props)+3)
	for k, v := range s.spec.Props {
		out[k] = v
	}
	if s.spec.Table {
		if s.planned {
			b, _ := json.Marshal(s.bounds) // strings: cannot fail
			out[OptRanges] = string(b)
		}
		return out
	}
	out[OptSlot], out[OptPublication] = s.cfg.Slot, s.cfg.Publication
	if s.madeSlot || s.cfg.SlotCreated {
		out[OptSlotCreated] = "true"
	}
	return out
}

// Drop implements connector.Dropper. A single-table form table's DROP
// removes its replication slot: the upstream stops keeping WAL for it. A
// table of a source leaves the slot to the source (the slot no longer
// waits for the table); a source's DROP removes the slot when its CREATE
// made it. The publication is left (others may use it).
func (s *Source) Drop(ctx context.Context) error {
	switch {
	case s.spec.Table && s.cfg.SourceName != "":
		hubFor(s.cfg).forget(s.spec.Relation)
		return nil
	case !s.spec.Table:
		forgetHub(s.cfg)
		if !s.cfg.SlotCreated && !s.madeSlot {
			return nil
		}
	default:
		forgetHub(s.cfg)
	}
	return s.dropSlot(ctx)
}

func (s *Source) dropSlot(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	conn, err := s.cfg.connect(ctx, false)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	// A reader's walsender may still be ending: retry while the slot is active.
	for {
		_, err = query(ctx, conn, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = "+quoteLiteral(s.cfg.Slot))
		var pe *pgconn.PgError
		if err == nil || !errors.As(err, &pe) || pe.Code != "55006" { // object_in_use
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres-cdc: drop replication slot %q: %w", s.cfg.Slot, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Enumerator implements connector.Source: the key ranges of a ranged
// table ("0" to "n-1"), else one split named after the upstream table.
func (s *Source) Enumerator(context.Context) (connector.SplitEnumerator, error) {
	if !s.spec.Table {
		return enumerator{}, nil
	}
	return enumerator{splits: s.splits()}, nil
}

func (s *Source) split() string { return s.cfg.Schema + "." + s.cfg.Table }

// splits are the table's splits: its ranges when Ranged, else the one.
func (s *Source) splits() []string {
	if !s.cfg.Ranged {
		return []string{s.split()}
	}
	out := make([]string, len(s.cfg.Bounds)+1)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// rangeOf returns the range a ranged table's split names (false: none).
func (s *Source) rangeOf(split string) (int, bool) {
	i, err := strconv.Atoi(split)
	if !s.cfg.Ranged || err != nil || i < 0 || i > len(s.cfg.Bounds) || strconv.Itoa(i) != split {
		return 0, false
	}
	return i, true
}

// Reader implements connector.Source.
func (s *Source) Reader(_ context.Context, splits []connector.SplitOffset, env connector.ReaderEnv) (connector.SplitReader, error) {
	if !s.spec.Table {
		return nil, types.Errorf(types.ErrUnsupported, "postgres-cdc source %s holds no rows: read its tables", s.spec.Relation)
	}
	if len(splits) == 0 {
		return nil, types.Errorf(types.ErrInvalidParameter, "postgres-cdc %s: a reader of no split", s.spec.Relation)
	}
	for _, sp := range splits {
		if _, ok := s.rangeOf(sp.Split); !ok && (s.cfg.Ranged || len(splits) != 1 || sp.Split != s.split()) {
			return nil, types.Errorf(types.ErrInvalidParameter, "postgres-cdc %s: a reader of splits %v (want some of %v)", s.spec.Relation, splits, s.splits())
		}
	}
	return newReader(s, splits, env)
}

// Progress implements connector.Progresser: the copy's rows, the upstream's
// estimate when it began, and whether it is done, as of offset.
func (s *Source) Progress(_ string, offset []byte) (rows, estimate int64, done bool) {
	o, err := DecodeOffset(offset)
	if err != nil {
		return 0, 0, false
	}
	return o.Rows, o.Estimate, o.Copied
}

// DefaultRate implements connector.Source: as fast as the upstream serves.
func (s *Source) DefaultRate() int64 { return -1 }

// TotalRows implements connector.Source: the change stream never ends.
func (s *Source) TotalRows() int64 { return -1 }

// ChunkRows implements connector.Source: a read takes what is queued, up to a chunk of the
// copy's size (copyChunkRows): a copy's rows are then written a few thousand at a time, each
// write a pass over the table's pending state.
func (s *Source) ChunkRows() int { return copyChunkRows }

// copyChunkRows is the most rows one read returns.
const copyChunkRows = 8 * types.DefaultChunkSize

// Upsert implements connector.Source: the rows carry deletes (and repeat keys).
func (s *Source) Upsert() bool { return true }

type enumerator struct{ splits []string }

func (e enumerator) Splits(context.Context) ([]string, error) {
	if e.splits == nil {
		return []string{}, nil
	}
	return e.splits, nil
}

func (e enumerator) Bounds(_ context.Context, splits []string) (map[string]connector.SplitBounds, error) {
	out := map[string]connector.SplitBounds{}
	for _, s := range splits {
		out[s] = connector.SplitBounds{}
	}
	return out, nil
}

func (e enumerator) Close() error { return nil }

// checkReadable checks that the upstream table binds to the table's
// columns and that the user can read it.
func (s *Source) checkReadable(ctx context.Context, conn *pgconn.PgConn) error {
	cfg := s.cfg
	up, err := describe(ctx, conn, cfg)
	if err != nil {
		return err
	}
	if _, err := bind(s.spec, cfg, up); err != nil {
		return err
	}
	if _, err := query(ctx, conn, "SELECT 1 FROM "+cfg.QualifiedTable()+" LIMIT 0"); err != nil {
		return types.Errorf(types.ErrInvalidParameter, "postgres-cdc: user %q cannot read the upstream table: %v", cfg.User, err)
	}
	if (cfg.Parallelism > 1 || cfg.RowsPerSplit > 0) && !cfg.Ranged {
		// A parallel copy: its ranges are fixed now, so that they can be
		// the table's splits (the job's actors share them out).
		b, err := bind(s.spec, cfg, up)
		if err != nil {
			return err
		}
		est, _ := estimateRows(ctx, conn, up.oid)
		if s.bounds, err = planBounds(ctx, conn, cfg, b, up.oid, est); err != nil {
			return types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %v", err)
		}
		s.planned = true
	}
	return nil
}

// SharedSplits implements connector.SplitSharer: a table copied in key
// ranges fixed at CREATE has a split per range, which its job's actors
// share out (backfill.parallelism of them unless ALTER ... SET
// PARALLELISM says otherwise); the others are read by one actor.
func (s *Source) SharedSplits() (bool, int) {
	if !s.spec.Table || !s.planned && !s.cfg.Ranged {
		return false, 0
	}
	return true, s.cfg.Parallelism
}
