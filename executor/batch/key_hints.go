package batch

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// KeyHints are an INSERT's input rows, evaluated by ProbeInsert before the statement runs
// under the coordinator's lock, and the store's answers to its primary-key checks at one
// committed epoch. The insert (BuildDML of the same plan.Insert) writes these rows instead
// of evaluating its input, and takes the answers in place of its own read of the store
// (keyProbe.load) when it runs at that same epoch and computes the same keys in the same
// order; otherwise it reads the store itself. The store at a committed epoch never
// changes, and the insert still asks the table's pending writes first, so the checks
// answer exactly as without the hints.
type KeyHints struct {
	ins   *plan.Insert
	rows  *types.Chunk
	table uint32
	epoch uint64
	keys  [][]byte // row keys in input order
	found []bool
}

// maxHintRows bounds the rows ProbeInsert evaluates ahead: a bigger statement reads the
// store under the lock as before (and stages its rows as it goes).
const maxHintRows = 1 << 14

// ProbeInsert evaluates ins's input at env.Epoch (a committed epoch, pinned by the caller)
// and reads whether the store holds each row's primary key there, for a later run of ins
// at that epoch to use (Env.KeyHints). It returns nil when ins does not qualify: an ON
// CONFLICT clause, an input that reads a table or calls a volatile function (the input is
// evaluated again by the insert: it must have no side effects, such as nextval's), or more
// than maxHintRows rows.
func ProbeInsert(ctx context.Context, env *Env, ins *plan.Insert) (*KeyHints, error) {
	rel := ins.Table
	if ins.Conflict != nil || rel.OnConflict != "" || !pureInput(ins.Input) {
		return nil, nil
	}
	if env.Ctx == nil {
		env.Ctx = &expr.Ctx{}
	}
	in, err := build(env, ins.Input)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	rows := types.NewChunk(in.Schema(), 0)
	if err := drain(ctx, in, rows); err != nil {
		return nil, err
	}
	if rows.Len() > maxHintRows || rows.Len() < storedKeysMin || len(rows.Cols) < len(rel.Columns) {
		return nil, nil
	}
	tbl, err := openTable(env.Store, rel)
	if err != nil {
		return nil, err
	}
	h := &KeyHints{ins: ins, rows: rows, table: rel.ID, epoch: env.Epoch, keys: make([][]byte, rows.Len()), found: make([]bool, rows.Len())}
	var (
		row   []types.Datum
		arena []byte
		ends  = make([]int, rows.Len())
	)
	for i := range rows.Len() {
		row = rows.Row(i, row)[:len(rel.Columns)]
		arena = tbl.RowKey(arena, row)
		ends[i] = len(arena)
	}
	start := 0
	for i, end := range ends { // slices of the arena once it no longer moves
		h.keys[i] = arena[start:end:end]
		start = end
	}
	if err := tbl.StoredKeys(ctx, env.Epoch, h.keys, h.found); err != nil {
		return nil, fmt.Errorf("%s: check primary key: %w", rel.QualifiedName(), err)
	}
	return h, nil
}

// storedKeysMin is the fewest rows worth probing ahead.
const storedKeysMin = 16

// pureInput reports whether n is VALUES (under projections) whose expressions read no
// table and call no volatile function.
func pureInput(n plan.Node) bool {
	switch n := n.(type) {
	case *plan.Values:
		for _, row := range n.Rows {
			for _, e := range row {
				if !pureExpr(e) {
					return false
				}
			}
		}
		return true
	case *plan.Project:
		for _, e := range n.Exprs {
			if !pureExpr(e) {
				return false
			}
		}
		return pureInput(n.Input)
	default:
		return false
	}
}

func pureExpr(e expr.Expr) bool {
	ok := true
	expr.Walk(e, func(x expr.Expr) bool {
		switch y := x.(type) {
		case *expr.Const, *expr.CastExpr, *expr.CaseExpr, *expr.ParamRef, *expr.ColumnRef:
		case *expr.FuncExpr:
			if y.Volatility == expr.Volatile {
				ok = false
			}
		default:
			ok = false
		}
		return ok
	})
	return ok
}

// take copies into found the hints for rows [from, to) of the statement's input, whose
// keys are keys, when they apply: the same table and epoch, and the same keys.
func (h *KeyHints) take(table uint32, epoch uint64, from int, keys [][]byte, found []bool) bool {
	if h == nil || h.table != table || h.epoch != epoch || from < 0 || from+len(keys) > len(h.keys) {
		return false
	}
	for i, k := range keys {
		if !bytes.Equal(k, h.keys[from+i]) {
			return false
		}
	}
	copy(found, h.found[from:from+len(keys)])
	return true
}

// input returns an executor of the hints' rows when they are ins's input, else nil.
func (h *KeyHints) input(ins *plan.Insert) Executor {
	if h == nil || h.ins != ins {
		return nil
	}
	return &chunkExec{chunk: h.rows}
}

// chunkExec yields one chunk, which it does not own (its reader copies the rows).
type chunkExec struct {
	chunk *types.Chunk
	done  bool
}

func (e *chunkExec) Schema() []types.T { return e.chunk.Types() }

func (e *chunkExec) Next(context.Context) (*types.Chunk, error) {
	if e.done {
		return nil, io.EOF
	}
	e.done = true
	return e.chunk, nil
}

func (e *chunkExec) Close() error { return nil }
