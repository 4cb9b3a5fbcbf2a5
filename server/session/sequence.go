package session

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// seqBlock is how many values a sequence reserves at a time: a restart
// skips what was reserved and not used, as PostgreSQL's sequence cache does.
const seqBlock = 32

// seqKey names one column's sequence.
type seqKey struct {
	rel uint32
	col string
}

// seqState is one sequence's position: next is the value nextval returns
// next, limit the last value reserved (persisted, or pending).
type seqState struct {
	next, limit int64
	exhausted   bool
}

// sequences hands out the values of serial and identity columns. A value
// is handed out only from a reserved block, and a block's reservation
// (persist.SaveSequence) commits no later than any row that holds one of
// its values: DML and COPY add the pending reservations to their
// writes (addPending), and a statement that used nextval outside a DML
// writes them before it returns (persistPending). So after a crash the
// sequence resumes above every value a committed row holds.
type sequences struct {
	store storage.KV
	mu    struct {
		sync.Mutex
		states map[seqKey]*seqState
		// pending are reservations not yet known to be committed.
		pending map[seqKey]int64
	}
}

func newSequences(store storage.KV) *sequences {
	s := &sequences{store: store}
	s.mu.states = map[seqKey]*seqState{}
	s.mu.pending = map[seqKey]int64{}
	return s
}

// next returns the next value of rel's column col's sequence seq.
func (s *sequences) next(ctx context.Context, rel uint32, col string, seq *catalog.Sequence) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := seqKey{rel, col}
	st, err := s.stateLocked(ctx, k, seq)
	if err != nil {
		return 0, err
	}
	up := seq.Increment > 0
	if st.exhausted || (up && st.next > seq.Max) || (!up && st.next < seq.Min) {
		if up {
			return 0, types.Errorf(types.ErrSequenceLimit, "nextval: reached maximum value of sequence \"%s\" (%d)", seq.Name, seq.Max)
		}
		return 0, types.Errorf(types.ErrSequenceLimit, "nextval: reached minimum value of sequence \"%s\" (%d)", seq.Name, seq.Min)
	}
	if (up && st.next > st.limit) || (!up && st.next < st.limit) {
		// Reserve the next block, clamped to the sequence's bounds.
		limit := st.next
		for i := 1; i < seqBlock; i++ {
			var n int64
			if !addOK(limit, seq.Increment, &n) || (up && n > seq.Max) || (!up && n < seq.Min) {
				break
			}
			limit = n
		}
		st.limit = limit
		s.mu.pending[k] = limit
	}
	v := st.next
	if !addOK(v, seq.Increment, &st.next) {
		st.exhausted = true
	}
	return v, nil
}

// stateLocked returns k's position, loading it from storage on first use.
func (s *sequences) stateLocked(ctx context.Context, k seqKey, seq *catalog.Sequence) (*seqState, error) {
	if st, ok := s.mu.states[k]; ok {
		return st, nil
	}
	last, found, err := persist.LoadSequence(ctx, s.store, k.rel, k.col)
	if err != nil {
		return nil, err
	}
	st := &seqState{next: seq.Start, limit: seq.Start - seq.Increment}
	if found {
		st.limit = last
		if !addOK(last, seq.Increment, &st.next) {
			st.exhausted = true
		}
	}
	s.mu.states[k] = st
	return st, nil
}

// set is setval: the next value is v's successor (called) or v itself,
// and that position is reserved, so a restart resumes from it.
func (s *sequences) set(ctx context.Context, rel uint32, col string, seq *catalog.Sequence, v int64, called bool) error {
	if v < seq.Min || v > seq.Max {
		return types.Errorf(types.ErrNumericOutOfRange, "setval: value %d is out of bounds for sequence \"%s\" (%d..%d)", v, seq.Name, seq.Min, seq.Max)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := seqKey{rel, col}
	st, err := s.stateLocked(ctx, k, seq)
	if err != nil {
		return err
	}
	st.exhausted = false
	if called {
		st.limit = v
		if !addOK(v, seq.Increment, &st.next) {
			st.exhausted = true
		}
	} else {
		st.next = v
		st.limit = v - seq.Increment // v is in the range, so this does not overflow past it
	}
	s.mu.pending[k] = st.limit
	return nil
}

// addOK sets *out = a + b and reports whether it did not overflow.
func addOK(a, b int64, out *int64) bool {
	c := a + b
	if (b > 0 && c < a) || (b < 0 && c > a) {
		return false
	}
	*out = c
	return true
}

// pendingSnapshot returns the reservations not yet committed.
func (s *sequences) pendingSnapshot() map[seqKey]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mu.pending) == 0 {
		return nil
	}
	out := make(map[seqKey]int64, len(s.mu.pending))
	for k, v := range s.mu.pending {
		out[k] = v
	}
	return out
}

// addPending adds the reservations not yet committed to a statement's
// writes and returns them, for confirm once its epoch commits. Callers hold
// the coordinator's lock (DML), so reservations enter the epoch's batch in
// the order they grew.
func (s *sequences) addPending(tables *batch.TableSet) map[seqKey]int64 {
	p := s.pendingSnapshot()
	for k, v := range p {
		var b storage.Batch
		persist.SaveSequence(&b, k.rel, k.col, v)
		key, val, _ := b.Entry(0)
		tables.Put(key, val)
	}
	return p
}

// confirm forgets the reservations in done, now committed, unless a later
// reservation replaced them.
func (s *sequences) confirm(done map[seqKey]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range done {
		if s.mu.pending[k] == v {
			delete(s.mu.pending, k)
		}
	}
}

// persistPending commits the reservations not yet committed in an epoch
// of their own (after nextval outside a DML).
func (e *Engine) persistPending(ctx context.Context) error {
	if e.seqs.pendingSnapshot() == nil {
		return nil
	}
	var p map[seqKey]int64
	if _, err := e.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		// Taken under the coordinator's lock, as DML takes its own, so the
		// epoch's batch gets reservations in the order they grew (the
		// last write of a key wins).
		p = e.seqs.pendingSnapshot()
		for k, v := range p {
			persist.SaveSequence(b, k.rel, k.col, v)
		}
		return nil
	}); err != nil {
		return err
	}
	e.seqs.confirm(p)
	return nil
}

// uniqueSequenceNames renames rel's new sequences whose name is taken (by
// a relation of rel's schema, another sequence or an earlier column of
// rel) as PostgreSQL does: t_id_seq1, t_id_seq2, ...
func (s *Session) uniqueSequenceNames(rel *catalog.Relation) {
	taken := map[string]bool{}
	for _, r := range s.cat().Relations() {
		if r.Schema == rel.Schema {
			taken[r.Name] = true
		}
		for _, c := range r.Columns {
			if c.Seq != nil {
				taken[c.Seq.Name] = true
			}
		}
	}
	for i := range rel.Columns {
		c := &rel.Columns[i]
		if c.Seq == nil {
			continue
		}
		base, name := c.Seq.Name, c.Seq.Name
		for n := 1; taken[name]; n++ {
			name = base + strconv.Itoa(n)
		}
		taken[name] = true
		if name != base {
			if c.Default == catalog.NextvalSQL(base) {
				c.Default = catalog.NextvalSQL(name)
			}
			c.Seq.Name = name
		}
	}
}

// sessionSeqs is a session's expr.Sequences: it resolves a sequence name
// to its column and remembers currval.
type sessionSeqs struct{ s *Session }

// identName is a name as regclass input reads it: a double-quoted name
// as written, otherwise folded to lower case.
func identName(s string) string {
	n := strings.TrimSpace(s)
	if len(n) >= 2 && n[0] == '"' && n[len(n)-1] == '"' {
		return strings.ReplaceAll(n[1:len(n)-1], `""`, `"`)
	}
	return strings.ToLower(n)
}

// lookupSequence finds the column whose implicit sequence is called name
// (an optional schema qualifier is ignored; unquoted names fold to lower
// case, as regclass input does).
func (s *Session) lookupSequence(name string) (*catalog.Relation, *catalog.Column, error) {
	n := strings.TrimSpace(name)
	if i := strings.LastIndexByte(n, '.'); i >= 0 && !strings.HasSuffix(n, "\"") {
		n = n[i+1:]
	}
	n = identName(n)
	for _, rel := range s.cat().Relations() {
		for i := range rel.Columns {
			if c := &rel.Columns[i]; c.Seq != nil && c.Seq.Name == n {
				return rel, c, nil
			}
		}
	}
	return nil, nil, types.Errorf(types.ErrUndefinedTable, "relation \"%s\" does not exist", n)
}

// NextVal implements expr.Sequences.
func (q sessionSeqs) NextVal(ctx context.Context, name string) (int64, error) {
	rel, col, err := q.s.lookupSequence(name)
	if err != nil {
		return 0, err
	}
	v, err := q.s.eng.seqs.next(ctx, rel.ID, col.Name, col.Seq)
	if err != nil {
		return 0, err
	}
	if q.s.currval == nil {
		q.s.currval = map[string]int64{}
	}
	q.s.currval[col.Seq.Name] = v
	q.s.tookNextval.Store(true)
	return v, nil
}

// SetVal implements expr.Sequences.
func (q sessionSeqs) SetVal(ctx context.Context, name string, v int64, called bool) (int64, error) {
	rel, col, err := q.s.lookupSequence(name)
	if err != nil {
		return 0, err
	}
	if err := q.s.eng.seqs.set(ctx, rel.ID, col.Name, col.Seq, v, called); err != nil {
		return 0, err
	}
	q.s.tookNextval.Store(true) // the new position is committed before the statement ends
	return v, nil
}

// SerialSequence implements expr.Sequences.
func (q sessionSeqs) SerialSequence(table, column string) (string, bool, error) {
	schema, name := "", identName(table)
	if i := strings.IndexByte(table, '.'); i >= 0 && !strings.HasPrefix(strings.TrimSpace(table), "\"") {
		schema, name = identName(table[:i]), identName(table[i+1:])
	}
	rel, err := q.s.lookup(schema, name)
	if err != nil {
		return "", false, err
	}
	i := rel.ColumnIndex(column)
	if i < 0 || rel.Columns[i].Hidden {
		return "", false, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", column, rel.Name)
	}
	seq := rel.Columns[i].Seq
	if seq == nil {
		return "", false, nil
	}
	return rel.Schema + "." + seq.Name, true, nil
}

// CurrVal implements expr.Sequences.
func (q sessionSeqs) CurrVal(name string) (int64, error) {
	_, col, err := q.s.lookupSequence(name)
	if err != nil {
		return 0, err
	}
	v, ok := q.s.currval[col.Seq.Name]
	if !ok {
		return 0, types.Errorf(types.ErrFeatureNotReady, "currval of sequence \"%s\" is not yet defined in this session", col.Seq.Name)
	}
	return v, nil
}
