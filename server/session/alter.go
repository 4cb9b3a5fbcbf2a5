package session

import (
	"context"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// truncate runs TRUNCATE: every row of each table is deleted through the
// normal write path (TableSet.DeleteAll), in one epoch (or in the
// transaction block's pending writes), so the views over the tables retract
// the rows incrementally. Tables fed by a connector are refused: their rows
// come from the outside.
func (s *Session) truncate(ctx context.Context, n *parser.Truncate) (pgwire.Result, error) {
	var rels []*catalog.Relation
	for _, name := range n.Names {
		rel, err := s.eng.Catalog.Lookup(name.Schema, name.Name)
		if err != nil {
			return nil, err
		}
		if rel.Kind != catalog.KindTable {
			return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a table", rel.Name)
		}
		if rel.Connector != nil {
			return nil, types.Errorf(types.ErrWrongObjectType, "cannot truncate table \"%s\": its rows come from connector %s", rel.Name, rel.Connector.Name())
		}
		if err := s.checkPriv(rel, "delete"); err != nil {
			return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied for table %s", rel.Name)
		}
		if !containsRel(rels, rel.ID) {
			rels = append(rels, rel)
		}
	}
	if n.RestartIdentity {
		for _, rel := range rels {
			for _, c := range rel.Columns {
				if c.Seq != nil {
					if err := s.eng.seqs.set(ctx, rel.ID, c.Name, c.Seq, c.Seq.Start, false); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	err := s.write(ctx, func(tables *batch.TableSet, snapshot uint64) error {
		for _, rel := range rels {
			if err := tables.DeleteAll(ctx, rel, snapshot); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tagOnly("TRUNCATE TABLE"), nil
}

func containsRel(rels []*catalog.Relation, id uint32) bool {
	for _, r := range rels {
		if r.ID == id {
			return true
		}
	}
	return false
}
