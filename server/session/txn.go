package session

import (
	"context"
	"fmt"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// Transactions. Outside a transaction block every statement commits on its
// own (its writes in one epoch). Inside BEGIN ... COMMIT the block runs at
// REPEATABLE READ (snapshot isolation): its first statement pins a
// snapshot, every read sees that snapshot plus the block's own writes, and
// the writes stay in the session (a TableSet of pending writes) until
// COMMIT replays them, checked, into one epoch (Coordinator.DML): other
// sessions and streaming jobs see all of them at once or none. A row the
// block wrote that another transaction changed after the snapshot makes
// COMMIT fail with 40001 (first committer wins) and nothing is written.
// ROLLBACK, or COMMIT of a failed block, drops the writes.
//
// Savepoints: SAVEPOINT notes how many of the block's writes there are;
// ROLLBACK TO drops the writes made after it (the pending writes are rebuilt
// from the ones before) and leaves a failed block usable again, as in
// PostgreSQL; RELEASE forgets it and the savepoints after it.

// txn is an open transaction block's snapshot and pending writes, from its
// first statement that reads or writes tables.
type txn struct {
	snapshot uint64
	release  func() // unpins the snapshot
	tables   *batch.TableSet
	changes  []txnChange // every write, in order
}

// txnChange is one statement's changes to one relation.
type txnChange struct {
	rel   *catalog.Relation
	chunk *types.Chunk
}

// txnState returns the open block's transaction, starting it (pinning the
// latest committed snapshot) on first use; nil outside a block.
func (s *Session) txnState() (*txn, error) {
	if s.tx != 'T' {
		return nil, nil
	}
	if s.txn != nil {
		return s.txn, nil
	}
	epoch := s.eng.coord().CommittedEpoch()
	release, err := s.eng.Store.Pin(epoch)
	if err != nil {
		return nil, err
	}
	t := &txn{snapshot: epoch, release: release, tables: batch.NewTableSet(s.eng.Store)}
	t.tables.CaptureChanges()
	s.txn = t
	return t, nil
}

// endTxn drops the block's transaction (after COMMIT or ROLLBACK).
func (s *Session) endTxn() {
	if s.txn != nil {
		s.txn.tables.Discard()
		s.txn.release()
		s.txn = nil
	}
	s.savepoints = nil
	s.tx = 'I'
}

// savepoint is a named point in a transaction block: the number of the
// block's writes (txn.changes) made before it.
type savepoint struct {
	name    string
	changes int
}

// savepoint runs SAVEPOINT name.
func (s *Session) savepoint(name string) error {
	if s.tx != 'T' {
		return types.Errorf(types.ErrNoActiveTx, "SAVEPOINT can only be used in transaction blocks")
	}
	n := 0
	if s.txn != nil {
		n = len(s.txn.changes)
	}
	s.savepoints = append(s.savepoints, savepoint{name: name, changes: n})
	return nil
}

// findSavepoint returns the index of the latest savepoint called name.
func (s *Session) findSavepoint(name string) (int, error) {
	for i := len(s.savepoints) - 1; i >= 0; i-- {
		if s.savepoints[i].name == name {
			return i, nil
		}
	}
	return -1, types.Errorf(types.ErrInvalidSavepoint, "savepoint \"%s\" does not exist", name)
}

// release runs RELEASE [SAVEPOINT] name: the savepoint and those after it
// are forgotten; the writes stay.
func (s *Session) release(name string) error {
	if s.tx != 'T' {
		return types.Errorf(types.ErrNoActiveTx, "RELEASE SAVEPOINT can only be used in transaction blocks")
	}
	i, err := s.findSavepoint(name)
	if err != nil {
		return err
	}
	s.savepoints = s.savepoints[:i]
	return nil
}

// rollbackTo runs ROLLBACK TO [SAVEPOINT] name: the writes after the
// savepoint are dropped, the savepoints after it forgotten (it stays), and
// a failed block is usable again.
func (s *Session) rollbackTo(ctx context.Context, name string) error {
	if s.tx != 'T' && s.tx != 'E' {
		return types.Errorf(types.ErrNoActiveTx, "ROLLBACK TO SAVEPOINT can only be used in transaction blocks")
	}
	i, err := s.findSavepoint(name)
	if err != nil {
		return err
	}
	s.savepoints = s.savepoints[:i+1]
	if t := s.txn; t != nil {
		if err := t.rollbackTo(ctx, s.savepoints[i].changes, s.eng.Store); err != nil {
			return err
		}
	}
	s.tx = 'T'
	return nil
}

// rollbackTo keeps the first n writes: the pending writes (which may also
// hold part of a failed statement's) are rebuilt from them.
func (t *txn) rollbackTo(ctx context.Context, n int, store storage.KV) error {
	t.changes = t.changes[:n]
	t.tables.Discard()
	t.tables = batch.NewTableSet(store)
	for _, ch := range t.changes {
		if err := t.tables.Apply(ctx, ch.rel, t.snapshot, ch.chunk); err != nil {
			return fmt.Errorf("rollback to savepoint: replay the writes before it: %w", err)
		}
	}
	t.tables.CaptureChanges()
	return nil
}

// write runs a statement's writes: outside a transaction block in an
// epoch of their own, committed before it returns (Coordinator.DML); inside
// one into the block's pending writes, read at its snapshot. fn may run
// more than once (again after a recovery).
func (s *Session) write(ctx context.Context, fn func(tables *batch.TableSet, snapshot uint64) error) error {
	t, err := s.txnState()
	if err != nil {
		return err
	}
	if t == nil {
		var reserved map[seqKey]int64
		withSeqs := func(tables *batch.TableSet, snapshot uint64) error {
			if err := fn(tables, snapshot); err != nil {
				return err
			}
			// The sequence values the rows took commit with them.
			reserved = s.eng.seqs.addPending(tables)
			return nil
		}
		if err := s.eng.withCoordinator(ctx, func(c *coordinator.Coordinator) error { return c.DML(ctx, withSeqs) }); err != nil {
			return err
		}
		s.eng.seqs.confirm(reserved)
		return s.implicitFlush(ctx)
	}
	if err := fn(t.tables, t.snapshot); err != nil {
		return err // the block fails; ROLLBACK drops its writes
	}
	for id, chunk := range t.tables.TakeChanges() {
		rel, ok := s.eng.Catalog.ByID(id)
		if !ok {
			return types.Errorf(types.ErrUndefinedTable, "relation with id %d was dropped during the transaction", id)
		}
		t.changes = append(t.changes, txnChange{rel: rel, chunk: chunk})
	}
	return nil
}

// commitTxn replays the block's writes into one epoch, each checked against
// what committed since the snapshot (TableSet.ApplyTxn).
func (s *Session) commitTxn(ctx context.Context) error {
	t := s.txn
	if t == nil || len(t.changes) == 0 {
		return nil
	}
	var reserved map[seqKey]int64
	err := s.eng.withCoordinator(ctx, func(c *coordinator.Coordinator) error {
		return c.DML(ctx, func(tables *batch.TableSet, snapshot uint64) error {
			for _, ch := range t.changes {
				cur, ok := s.eng.Catalog.ByID(ch.rel.ID)
				if !ok {
					return types.Errorf(types.ErrSerialization, "could not serialize access: table %s was dropped during the transaction", ch.rel.QualifiedName())
				}
				if !catalog.SameLayout(cur, ch.rel) {
					return types.Errorf(types.ErrSerialization, "could not serialize access: table %s was altered during the transaction", ch.rel.QualifiedName())
				}
				if err := tables.ApplyTxn(ctx, ch.rel, snapshot, ch.chunk); err != nil {
					return err
				}
			}
			// The sequence values the rows took commit with them.
			reserved = s.eng.seqs.addPending(tables)
			return nil
		})
	})
	if err == nil {
		s.eng.seqs.confirm(reserved)
	}
	return err
}

// refuseInTxn refuses a statement that cannot be part of a transaction
// block's atomic commit (DDL): PostgreSQL's 25001.
func (s *Session) refuseInTxn(what string) error {
	if s.tx != 'T' {
		return nil
	}
	return &types.Error{Kind: types.ErrActiveTx, Msg: fmt.Sprintf("%s cannot run inside a transaction block", what),
		Hint: "Tributary runs DDL outside transaction blocks only: COMMIT or ROLLBACK first."}
}
