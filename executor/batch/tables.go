package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// TableSet holds the state tables one statement touches, opened on first
// use, so that everything the statement reads after writing (DML conflict
// checks, reads of a table it wrote) sees its pending writes. The session
// calls Flush to move those writes into the epoch's batch before committing
// it. A TableSet is not safe for concurrent use.
type TableSet struct {
	store  storage.KV
	tables map[uint32]*state.Table
	order  []uint32 // ids in opening order, for a deterministic Flush
	// changes, when capturing, holds every row written as a change chunk per relation.
	changes map[uint32]*types.Chunk
	capture bool
	// wanted, when set, says whether a relation's changes have a reader (CaptureChanges).
	wanted func(relID uint32) bool
	// spill, when set, is called by MaybeSpill once spillRows writes are pending.
	spill     func() error
	spillRows int
	// sendEarly, when set, takes the changes captured so far (SendEarly).
	sendEarly func() error
	// extra holds raw writes (a sequence's reserved values) that commit with
	// the rows (Put).
	extra storage.Batch
}

// SetSpill makes MaybeSpill call fn once at least rows writes are pending
// (nil fn: never). A DML statement's writer calls MaybeSpill between chunks,
// so its owner can move the writes out of memory (Stage) as they grow.
func (s *TableSet) SetSpill(rows int, fn func() error) { s.spill, s.spillRows = fn, rows }

// SetSendEarly lets a statement's writer hand the changes captured so far to
// fn (nil: never) once nothing it does after can fail (SendEarly): the
// coordinator sends them to the tables' streaming jobs then, and fails the
// epoch if the statement fails after all.
func (s *TableSet) SetSendEarly(fn func() error) { s.sendEarly = fn }

// SendEarly hands the captured changes to the function SetSendEarly set, if
// any. A DML statement's writer calls it when the rest of the statement is
// writes that cannot fail, so that the jobs work on the changes while it
// writes them into the tables.
func (s *TableSet) SendEarly() error {
	if s.sendEarly == nil {
		return nil
	}
	return s.sendEarly()
}

// MaybeSpill calls the spill function set by SetSpill when enough writes are pending.
func (s *TableSet) MaybeSpill() error {
	if s.spill == nil || s.PendingRows() < s.spillRows {
		return nil
	}
	return s.spill()
}

// TakeFresh takes the fresh rows (InsertNew) the tables' flushes of epochs
// up to epoch left (state.Table.TakeFresh): the owner of a set that took
// such rows writes the jobs into the batch it commits at epoch, before
// committing it.
func (s *TableSet) TakeFresh(epoch uint64) []*state.SealJob {
	var jobs []*state.SealJob
	for _, id := range s.order {
		if j := s.tables[id].TakeFresh(epoch); j != nil {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// Stage adds every table's pending writes to b, which the caller stages into
// the store at epoch ahead of its commit (state.Table.Stage: the tables'
// flushed layers are dropped, the caller having staged its epoch's batch).
func (s *TableSet) Stage(epoch uint64, b *storage.Batch) {
	for _, id := range s.order {
		s.tables[id].Stage(epoch, b)
	}
}

// Put adds a raw write that Flush moves into the epoch's batch with the
// rows and Discard drops: bookkeeping that must commit with them, such as
// the values a sequence reserved for the rows.
func (s *TableSet) Put(k, v []byte) { s.extra.Put(k, v) }

// CaptureChanges makes the set record every row DML writes, as change
// chunks per relation (TakeChanges), for the tables' streaming jobs.
func (s *TableSet) CaptureChanges() {
	s.capture = true
	s.changes = map[uint32]*types.Chunk{}
}

// CaptureChangesFor is CaptureChanges recording only the rows of relations
// wanted says have a reader: a written relation without one is listed by
// TakeChanges with a nil chunk. wanted is asked once per relation between
// TakeChanges calls (a table with no job reading it then costs no copy of
// its rows).
func (s *TableSet) CaptureChangesFor(wanted func(relID uint32) bool) {
	s.CaptureChanges()
	s.wanted = wanted
}

// changesOf returns the chunk capturing rel's changes, made for about rows more rows when
// new; nil when not capturing or when no reader wants rel's.
func (s *TableSet) changesOf(rel *catalog.Relation, rows int) *types.Chunk {
	if !s.capture {
		return nil
	}
	c, ok := s.changes[rel.ID]
	if !ok {
		if s.wanted == nil || s.wanted(rel.ID) {
			c = types.NewChunk(rel.ColumnTypes(), max(rows, 16))
		}
		s.changes[rel.ID] = c
	}
	return c
}

// record notes a written row when capturing.
func (s *TableSet) record(rel *catalog.Relation, op types.Op, row []types.Datum) {
	if c := s.changesOf(rel, 1); c != nil {
		c.AppendRowOp(op, row)
	}
}

// recordInserts notes rows [from, to) of rows (their first columns rel's) as inserted when
// capturing: record of each, a column range at a time (Chunk.AppendRange).
func (s *TableSet) recordInserts(rel *catalog.Relation, rows *types.Chunk, from, to int) {
	if from >= to {
		return
	}
	if c := s.changesOf(rel, to-from); c != nil {
		c.AppendRange(rows, from, to)
	}
}

// TakeChanges returns the captured changes and starts afresh. A relation
// written with no reader (CaptureChangesFor) has a nil chunk.
func (s *TableSet) TakeChanges() map[uint32]*types.Chunk {
	out := s.changes
	s.changes = map[uint32]*types.Chunk{}
	return out
}

// Discard drops every table's writes since the last Flush, and the captured changes.
func (s *TableSet) Discard() {
	for _, t := range s.tables {
		t.Discard()
	}
	s.extra = storage.Batch{}
	if s.capture {
		s.changes = map[uint32]*types.Chunk{}
	}
}

// Forget closes the set's view of a relation (after DROP TABLE).
func (s *TableSet) Forget(id uint32) {
	delete(s.tables, id)
	for i, x := range s.order {
		if x == id {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
}

// NewTableSet returns an empty set over store.
func NewTableSet(store storage.KV) *TableSet {
	return &TableSet{store: store, tables: map[uint32]*state.Table{}}
}

// Table returns the state table of rel, opening it on first use.
func (s *TableSet) Table(rel *catalog.Relation) (*state.Table, error) {
	if t, ok := s.tables[rel.ID]; ok {
		return t, nil
	}
	t, err := openTable(s.store, rel)
	if err != nil {
		return nil, err
	}
	s.tables[rel.ID] = t
	s.order = append(s.order, rel.ID)
	return t, nil
}

// PendingRows returns the number of rows written and not yet flushed.
func (s *TableSet) PendingRows() int {
	n := 0
	for _, t := range s.tables {
		n += t.PendingRows()
	}
	return n
}

// Flush adds every table's pending writes to b, which the caller commits at epoch.
func (s *TableSet) Flush(epoch uint64, b *storage.Batch) {
	for _, id := range s.order {
		s.tables[id].Flush(epoch, b)
	}
	for i := 0; i < s.extra.Len(); i++ {
		k, v, del := s.extra.Entry(i)
		if del {
			b.Delete(k)
		} else {
			b.Put(k, v)
		}
	}
	s.extra = storage.Batch{}
}

// StateSchema is the state-table layout of a relation's rows: every column,
// keyed by its primary key and distributed by it (an index by its leading
// indexed columns), under its relation id.
func StateSchema(rel *catalog.Relation) state.Schema {
	return state.Schema{TableID: rel.ID, Types: rel.ColumnTypes(), PK: rel.PK, DistKey: rel.DistKey(), Missing: rel.MissingValues(), Blocks: rel.StoresBlocks()}
}

func openTable(store storage.KV, rel *catalog.Relation) (*state.Table, error) {
	if store == nil {
		return nil, fmt.Errorf("open table %s: no store", rel.QualifiedName())
	}
	t, err := state.New(store, StateSchema(rel))
	if err != nil {
		return nil, fmt.Errorf("open table %s: %w", rel.QualifiedName(), err)
	}
	return t, nil
}

// table returns rel's state table: the statement's own when it has a
// TableSet, else a fresh read-only view.
func (env *Env) table(rel *catalog.Relation) (*state.Table, error) {
	if env.Tables != nil {
		return env.Tables.Table(rel)
	}
	return openTable(env.Store, rel)
}

// Committed, as the snapshot of Apply and Upsert, reads each row at the
// store's committed epoch as that read finds it, not as the call began: the
// epochs committed meanwhile hold what the set's flushed writes of those
// epochs hold (which stay until its next Flush), so the rows read are the
// same, and a table's point reads at its newest epoch keep what they find
// in its block cache. For the writer of a set (the coordinator's), whose
// chunks outlast commits.
const Committed = ^uint64(0)

// Upsert writes rows (in rel's column order and types) into rel, replacing a
// row with the same primary key (an UpdateDelete/UpdateInsert pair in the
// captured changes, an Insert otherwise): how a connector table takes its
// source's rows. Existing rows are read at snapshot (or Committed) plus the
// set's pending writes.
func (s *TableSet) Upsert(ctx context.Context, rel *catalog.Relation, snapshot uint64, rows *types.Chunk) error {
	return s.Apply(ctx, rel, snapshot, rows) // insert rows: Apply upserts them
}

// InsertNew inserts rows whose keys the caller knows are not in the table,
// stored or pending (a generator's fresh keys on a table nothing else
// wrote, a CDC copy's chunk), without the lookup Upsert makes; in a table
// that stores blocks they wait for TakeFresh. run names the key range they
// come from (state.Table.InsertFresh).
func (s *TableSet) InsertNew(_ context.Context, rel *catalog.Relation, run string, rows *types.Chunk) error {
	tbl, err := s.Table(rel)
	if err != nil {
		return err
	}
	nc := len(rel.Columns)
	var row []types.Datum
	tag := state.RunTag(run)
	for i := 0; i < rows.Len(); i++ {
		if !rows.Visible(i) {
			continue
		}
		row = rows.Row(i, row)[:nc]
		if err := tbl.InsertFresh(row, tag); err != nil {
			return fmt.Errorf("insert into %s: %w", rel.QualifiedName(), err)
		}
		s.record(rel, types.OpInsert, row)
	}
	return nil
}

// DeleteAll deletes every row of rel (read at snapshot plus the set's
// pending writes; only those in says, when not nil), recording each delete:
// TRUNCATE, and how an upstream TRUNCATE reaches a CDC table (or one key
// range of it), in one epoch. It reads deleteAllBatch rows at a time and lets
// the owner spill between them (MaybeSpill), so memory stays bounded however
// large the table.
func (s *TableSet) DeleteAll(ctx context.Context, rel *catalog.Relation, snapshot uint64, in func(row []types.Datum) bool) error {
	tbl, err := s.Table(rel)
	if err != nil {
		return err
	}
	if in == nil {
		// Every row goes: so do the blocks that hold them.
		if err := tbl.DeleteBlocks(ctx, snapshot); err != nil {
			return fmt.Errorf("truncate %s: %w", rel.QualifiedName(), err)
		}
	}
	// One scan of every vnode first (a small table ends there), then vnode
	// by vnode from where a full batch stopped.
	vnode, start := state.AllVnodes, []byte(nil)
	rows := make([][]types.Datum, 0, deleteAllBatch)
	for {
		rows = rows[:0]
		it, err := tbl.Iter(ctx, state.IterOptions{Vnode: vnode, Epoch: snapshot, Range: state.KeyRange{Start: start}})
		if err != nil {
			return fmt.Errorf("truncate %s: %w", rel.QualifiedName(), err)
		}
		var lastVnode uint16
		var lastPK []byte
		for len(rows) < deleteAllBatch {
			err := it.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				it.Close()
				return fmt.Errorf("truncate %s: %w", rel.QualifiedName(), err)
			}
			if in == nil || in(it.Row()) {
				rows = append(rows, slices.Clone(it.Row()))
			}
			lastVnode, lastPK = it.Vnode(), append(lastPK[:0], it.PK()...)
		}
		it.Close()
		// Deleted once the iterator is done with the pending writes it merges.
		for _, row := range rows {
			if err := tbl.Delete(row); err != nil {
				return fmt.Errorf("truncate %s: %w", rel.QualifiedName(), err)
			}
			s.record(rel, types.OpDelete, row)
		}
		if err := s.MaybeSpill(); err != nil {
			return err
		}
		switch {
		case len(rows) == deleteAllBatch:
			vnode, start = int(lastVnode), append(lastPK, 0)
		case vnode == state.AllVnodes || vnode == codec.VnodeCount-1:
			return nil
		default:
			vnode, start = vnode+1, nil
		}
	}
}

// deleteAllBatch is how many rows DeleteAll reads before deleting them.
const deleteAllBatch = 4096

// Apply writes a change chunk (rows in rel's column order and types, with
// ops) into rel by primary key: inserts and updates' new rows replace the
// row with their key (Upsert), deletes and updates' old rows remove the row
// with their key if there is one. How a sink into a table writes.
func (s *TableSet) Apply(ctx context.Context, rel *catalog.Relation, snapshot uint64, rows *types.Chunk) error {
	tbl, err := s.Table(rel)
	if err != nil {
		return err
	}
	nc := len(rel.Columns)
	var row, old []types.Datum
	pk := make([]types.Datum, len(rel.PK))
	for i := 0; i < rows.Len(); i++ {
		if !rows.Visible(i) {
			continue
		}
		row = rows.Row(i, row)[:nc]
		for j, c := range rel.PK {
			pk[j] = row[c]
		}
		at := snapshot
		if at == Committed {
			at = s.store.CommittedEpoch()
		}
		var found bool
		if old, found, err = tbl.GetAt(ctx, at, pk, old); err != nil {
			return fmt.Errorf("%s: check primary key: %w", rel.QualifiedName(), err)
		}
		switch op := rows.Op(i); {
		case !op.IsInsert():
			if !found {
				continue
			}
			if err := tbl.Delete(old); err != nil {
				return fmt.Errorf("delete from %s: %w", rel.QualifiedName(), err)
			}
			s.record(rel, types.OpDelete, old)
		case found:
			if err := tbl.Update(old, row); err != nil {
				return fmt.Errorf("upsert into %s: %w", rel.QualifiedName(), err)
			}
			s.record(rel, types.OpUpdateDelete, old)
			s.record(rel, types.OpUpdateInsert, row)
		default:
			if err := tbl.Insert(row); err != nil {
				return fmt.Errorf("insert into %s: %w", rel.QualifiedName(), err)
			}
			s.record(rel, types.OpInsert, row)
		}
	}
	return nil
}

// ApplyTxn writes a committing transaction's changes to rel (a chunk its
// own TableSet captured: rows in rel's column order with ops, in the order
// it wrote them), checking each against rel as read at snapshot plus the
// set's pending writes: a deleted row or an update's old row must still be
// there unchanged, and an inserted row's key must still be free. Otherwise
// another transaction wrote the row after this one read it: a
// serialization failure (40001), and the caller discards the set's writes.
func (s *TableSet) ApplyTxn(ctx context.Context, rel *catalog.Relation, snapshot uint64, rows *types.Chunk) error {
	tbl, err := s.Table(rel)
	if err != nil {
		return err
	}
	ts := rel.ColumnTypes()
	nc := len(rel.Columns)
	var row, cur []types.Datum
	pk := make([]types.Datum, len(rel.PK))
	same := func(a, b []types.Datum) bool {
		for i := range nc {
			if types.Compare(ts[i], &a[i], &b[i]) != 0 {
				return false
			}
		}
		return true
	}
	conflict := func() error {
		return &types.Error{Kind: types.ErrSerialization, Msg: "could not serialize access due to concurrent update",
			Detail: fmt.Sprintf("A row of %s that this transaction wrote was changed by another transaction after this one began.", rel.QualifiedName()),
			Hint:   "Retry the transaction."}
	}
	for i := 0; i < rows.Len(); i++ {
		if !rows.Visible(i) {
			continue
		}
		row = rows.Row(i, row)[:nc]
		for j, c := range rel.PK {
			pk[j] = row[c]
		}
		var found bool
		if cur, found, err = tbl.GetAt(ctx, snapshot, pk, cur); err != nil {
			return fmt.Errorf("%s: read a written row: %w", rel.QualifiedName(), err)
		}
		switch op := rows.Op(i); op {
		case types.OpInsert:
			if found {
				return conflict()
			}
			if err := tbl.Insert(row); err != nil {
				return fmt.Errorf("insert into %s: %w", rel.QualifiedName(), err)
			}
			s.record(rel, op, row)
		case types.OpDelete:
			if !found || !same(cur, row) {
				return conflict()
			}
			if err := tbl.Delete(row); err != nil {
				return fmt.Errorf("delete from %s: %w", rel.QualifiedName(), err)
			}
			s.record(rel, op, row)
		case types.OpUpdateDelete:
			if !found || !same(cur, row) || i+1 >= rows.Len() || rows.Op(i+1) != types.OpUpdateInsert {
				return conflict()
			}
			old := slices.Clone(row)
			i++
			row = rows.Row(i, row)[:nc]
			if err := tbl.Update(old, row); err != nil {
				return fmt.Errorf("update %s: %w", rel.QualifiedName(), err)
			}
			s.record(rel, types.OpUpdateDelete, old)
			s.record(rel, types.OpUpdateInsert, row)
		default:
			return fmt.Errorf("%s: a transaction's change %v out of place", rel.QualifiedName(), op)
		}
	}
	return nil
}
