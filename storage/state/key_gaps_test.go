package state_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// keyModel is a table with blocks whose key checks (StoredKeys, then
// PendingAt) sessions make and act on, as INSERT statements do, beside a
// model of the rows it holds.
type keyModel struct {
	t       *testing.T
	ctx     context.Context
	kv      storage.KV
	counted *seekCounter
	tb      *state.Table
	seed    uint64
	model   map[int64]bool // committed and pending rows
	ids     []int64        // every id ever inserted, for re-inserts
	epoch   uint64         // the open epoch
	open    storage.Batch  // its flushed writes
	// fresh has statements insert with InsertFresh, each a run of its own
	// (as a large INSERT does), sealed at the commit.
	fresh  bool
	runs   uint32
	blocks int // block keys the seals wrote
}

func newKeyModel(t *testing.T, kv storage.KV, seed uint64) *keyModel {
	schema := userSchema(9)
	schema.Blocks = true
	counted := &seekCounter{KV: kv}
	tb, err := state.New(counted, schema)
	if err != nil {
		t.Fatal(err)
	}
	return &keyModel{t: t, ctx: context.Background(), kv: kv, counted: counted, tb: tb, seed: seed, model: map[int64]bool{}, epoch: 1}
}

func (m *keyModel) key(id int64) []byte { return m.tb.RowKey(nil, row(id, "", 0)) }

// commit commits the open epoch's flushed writes, its fresh rows sealed.
func (m *keyModel) commit() {
	m.t.Helper()
	if j := m.tb.TakeFresh(m.epoch); j != nil {
		n := m.open.Len()
		j.Write(&m.open)
		for i := n; i < m.open.Len(); i++ {
			if k, _, _ := m.open.Entry(i); k[codec.TablePrefixLen] == 0xFF {
				m.blocks++
			}
		}
	}
	if err := m.kv.Commit(m.ctx, m.epoch, &m.open); err != nil {
		m.t.Fatal(err)
	}
	m.open = storage.Batch{}
	m.epoch++
}

// statement checks ask's keys at snapshot, requires the model's answer for
// each, inserts the absent ones and deletes a present one when del() says so,
// then flushes the writes into the open epoch.
func (m *keyModel) statement(round int, ask []int64, snapshot uint64, del func() bool) {
	m.t.Helper()
	keys := make([][]byte, len(ask))
	for i, id := range ask {
		keys[i] = m.key(id)
	}
	found := make([]bool, len(keys))
	if err := m.tb.StoredKeys(m.ctx, snapshot, keys, found); err != nil {
		m.t.Fatal(err)
	}
	m.runs++
	seen := map[int64]bool{}
	for i, id := range ask {
		if seen[id] {
			continue // asked twice: the first answer was acted on
		}
		seen[id] = true
		exists, known := m.tb.PendingAt(snapshot, keys[i])
		if !known {
			exists = found[i]
		}
		if exists != m.model[id] {
			m.t.Fatalf("seed %d round %d: id %d (session %d) exists %v, want %v", m.seed, round, id, id/1_000_000, exists, m.model[id])
		}
		switch {
		case !exists:
			insert := m.tb.Insert
			if m.fresh {
				insert = func(r []types.Datum) error { return m.tb.InsertFresh(r, m.runs) }
			}
			if err := insert(row(id, "r", id)); err != nil {
				m.t.Fatal(err)
			}
			m.model[id] = true
			m.ids = append(m.ids, id)
		case del():
			if err := m.tb.Delete(row(id, "r", id)); err != nil {
				m.t.Fatal(err)
			}
			delete(m.model, id)
		}
	}
	m.tb.Flush(m.epoch, &m.open)
}

// runSessions runs 300 statements of eight sessions: each asks 20 to 79 ascending ids from a
// range of its own (next gives the id after one) and up to three ids inserted before (stored,
// deleted or pending, in gaps or not), some statements sharing an epoch (group commit), a
// third of the keys found deleted. It commits the last epoch, requires the table to store the
// model's keys and no other, and returns how many keys the statements checked.
func (m *keyModel) runSessions(rng *rand.Rand, next func(id int64) int64) int {
	m.t.Helper()
	const sessions = 8
	at := make([]int64, sessions) // each session's last id
	for s := range at {
		at[s] = int64(s) * 1_000_000
	}
	checks := 0
	for round := 0; round < 300; round++ {
		s := rng.IntN(sessions)
		var ask []int64
		for range 20 + rng.IntN(60) {
			at[s] = next(at[s])
			ask = append(ask, at[s])
		}
		for range rng.IntN(4) {
			if len(m.ids) > 0 {
				ask = append(ask, m.ids[rng.IntN(len(m.ids))])
			}
		}
		checks += len(ask)
		m.statement(round, ask, m.kv.CommittedEpoch(), func() bool { return rng.IntN(3) == 0 })
		if rng.IntN(3) > 0 {
			m.commit()
		}
	}
	m.commit()
	var keys [][]byte
	var want []bool
	for _, id := range m.ids {
		keys, want = append(keys, m.key(id)), append(want, m.model[id])
	}
	found := make([]bool, len(keys))
	if err := m.tb.StoredKeys(m.ctx, m.kv.CommittedEpoch(), keys, found); err != nil {
		m.t.Fatal(err)
	}
	if !slices.Equal(found, want) {
		m.t.Fatalf("seed %d: stored keys at the end differ from the model", m.seed)
	}
	return checks
}

// TestStoredKeysSessions: eight sessions insert ascending ids from ranges of
// their own into one table with blocks, as 1000-row INSERTs from eight
// connections do, some statements sharing an epoch (group commit), with
// deletes and re-inserts of keys below and inside the gaps StoredKeys keeps.
// Every key check (StoredKeys, then PendingAt) answers as a model of the
// table does, and the ascending keys are mostly answered without a seek.
func TestStoredKeysSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		seed := testseed.For(t)
		rng := rand.New(rand.NewPCG(seed, 3))
		m := newKeyModel(t, kv, seed)
		checks := m.runSessions(rng, func(id int64) int64 { return id + 1 + rng.Int64N(3) })
		seeks := m.counted.seeks.Load()
		t.Logf("%d key checks, %d seeks", checks, seeks)
		// Without the gaps three checks in four seek (a session's next key lies
		// below the keys of the sessions above it in its vnode); with them, a
		// session's first key in each vnode and the re-inserts.
		if seeks*4 > int64(checks) {
			t.Errorf("%d seeks for %d key checks: the gaps answered too few", seeks, checks)
		}
	})
}

// TestStoredKeysFreshSessions: as TestStoredKeysSessions, with the keys
// inserted fresh, each statement a run of its own, and sealed as blocks at the
// commit (as a large INSERT's are): the key gaps lie outside the blocks too,
// so a session's keys after its first in each vnode need no seek, neither
// for the row keys nor for the blocks, and the seal of a run inside a gap
// looks for no block either.
func TestStoredKeysFreshSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		seed := testseed.For(t)
		rng := rand.New(rand.NewPCG(seed, 11))
		m := newKeyModel(t, kv, seed)
		m.fresh = true
		// Ids of 8 vnodes only: several a vnode, enough for blocks.
		checks := m.runSessions(rng, func(id int64) int64 {
			for {
				id += 1 + rng.Int64N(3)
				if vnodeOf(m.key(id)) < 8 {
					return id
				}
			}
		})
		// A vnode's blocks never overlap: a key's block is the first ending at
		// or after it.
		var prev []byte
		for _, r := range blockRanges(t, kv, m.tb.Schema().TableID) {
			if prev != nil && bytes.Equal(prev[:codec.TablePrefixLen], r[0][:codec.TablePrefixLen]) && bytes.Compare(r[0], prev) <= 0 {
				t.Fatalf("seed %d: a block from %x overlaps the one before it, ending at %x", seed, r[0], prev)
			}
			prev = r[1]
		}
		seeks, scans := m.counted.seeks.Load(), m.counted.scans.Load()
		t.Logf("%d key checks, %d seeks, %d iterators, %d blocks", checks, seeks, scans, m.blocks)
		if m.blocks < 300 {
			t.Errorf("the seals wrote %d blocks: the fresh keys went as rows", m.blocks)
		}
		// A session's first key in each vnode (8 sessions, 8 vnodes), and the
		// re-inserts.
		if seeks*10 > int64(checks) {
			t.Errorf("%d seeks for %d key checks: the gaps answered too few", seeks, checks)
		}
		// A statement's key check opens one or two; a seal whose runs lie in
		// gaps none (it would open one a run to look for blocks).
		if scans*10 > int64(checks) {
			t.Errorf("%d iterators for %d key checks: the seals looked for blocks in the gaps", scans, checks)
		}
	})
}

// TestStoredKeysOneRowSessions: as TestStoredKeysSessions, with one-row
// INSERTs: each key check asks one key. A table with blocks answers it from
// its key gaps, one a session in each vnode, as it does many keys: the old
// point read knew one gap a vnode, so the eight sessions' keys took turns
// evicting it and nearly every check opened an iterator (each one writes
// the store's waiting commits first).
func TestStoredKeysOneRowSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		seed := testseed.For(t)
		rng := rand.New(rand.NewPCG(seed, 5))
		m := newKeyModel(t, kv, seed)
		const sessions = 8
		next := make([]int64, sessions)
		for s := range next {
			next[s] = int64(s) * 1_000_000
		}
		const checks = 6000
		for round := 0; round < checks; round++ {
			s := rng.IntN(sessions)
			// Ids of 8 vnodes only, so that each session asks many keys of each.
			for {
				next[s]++
				if vnodeOf(m.key(next[s])) < 8 {
					break
				}
			}
			id := next[s]
			if rng.IntN(50) == 0 && len(m.ids) > 0 {
				id = m.ids[rng.IntN(len(m.ids))] // a key inserted before
			}
			// The statement reads at the epoch committed when it began; another
			// session's epoch often commits while it runs (its writes are still
			// the table's pending layer then).
			snapshot := kv.CommittedEpoch()
			if m.open.Len() > 0 && rng.IntN(2) == 0 {
				m.commit()
			}
			m.statement(round, []int64{id}, snapshot, func() bool { return rng.IntN(2) == 0 })
			if rng.IntN(3) == 0 {
				m.commit()
			}
		}
		m.commit()
		scans := m.counted.scans.Load()
		t.Logf("%d one-key checks, %d iterators", checks, scans)
		// Each session's first key in a vnode opens one (8 sessions, 8
		// vnodes), the re-inserts and the deletes' next keys a few more.
		if scans*10 > checks {
			t.Errorf("%d iterators for %d one-key checks: the gaps answered too few", scans, checks)
		}
	})
}

// blockRanges returns the committed blocks of table id, in key order, each as
// the full keys of its first and last rows.
func blockRanges(t *testing.T, kv storage.KV, id uint32) [][2][]byte {
	t.Helper()
	lo, hi := codec.TableSpan(id)
	it, err := kv.Scan(context.Background(), lo, hi, kv.CommittedEpoch())
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out [][2][]byte
	for it.Next() == nil {
		k, v := it.Key(), it.Value()
		if k[codec.TablePrefixLen] != 0xFF {
			continue
		}
		// format | uvarint epoch | uvarint n | n offsets | entries (uvarint pk
		// length, pk, ...): the last row's pk is the key's.
		_, n := binary.Uvarint(v[1:])
		rows, m := binary.Uvarint(v[1+n:])
		data := v[1+n+m+4*int(rows):]
		l, w := binary.Uvarint(data)
		first := append(slices.Clone(k[:codec.TablePrefixLen]), data[w:w+int(l)]...)
		last := append(slices.Clone(k[:codec.TablePrefixLen]), k[codec.TablePrefixLen+1:]...)
		out = append(out, [2][]byte{first, last})
	}
	return out
}

// vnodeOf is a state key's vnode.
func vnodeOf(key []byte) int { return int(key[4])<<8 | int(key[5]) }

// seekCounter counts the iterators opened on a store and their seeks.
type seekCounter struct {
	storage.KV
	scans, seeks atomic.Int64
}

func (c *seekCounter) Scan(ctx context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	c.scans.Add(1)
	it, err := c.KV.Scan(ctx, lower, upper, epoch)
	if err != nil {
		return nil, err
	}
	if sk, ok := it.(storage.Seeker); ok {
		return &countedSeeker{Iterator: it, sk: sk, n: &c.seeks}, nil
	}
	return it, nil
}

type countedSeeker struct {
	storage.Iterator
	sk storage.Seeker
	n  *atomic.Int64
}

func (s *countedSeeker) Seek(key []byte) error {
	s.n.Add(1)
	return s.sk.Seek(key)
}

// TestKeyGapsOpenNoIterator: a key check whose keys all lie in a key gap
// opens no iterator (a scan would write the store's waiting commits first).
func TestKeyGapsOpenNoIterator(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		counted := &seekCounter{KV: kv}
		tbl, err := state.New(counted, blockSchema())
		if err != nil {
			t.Fatal(err)
		}
		a := blockAs[2]
		commitRows(t, kv, tbl, a, 1, false, 1000, 2000)
		if got := storedRange(t, tbl, a, 1001, 1); len(got) > 0 {
			t.Fatalf("stored among 1001..1020: %v", got)
		}
		scans := counted.scans.Load()
		if got := storedRange(t, tbl, a, 1021, 1); len(got) > 0 {
			t.Fatalf("stored among 1021..1040: %v", got)
		}
		if n := counted.scans.Load() - scans; n > 0 {
			t.Errorf("keys in a key gap opened %d iterators", n)
		}
		if got := storedRange(t, tbl, a, 1990, 1); !slices.Equal(got, []int64{2000}) {
			t.Fatalf("stored among 1990..2009: %v, want [2000]", got)
		}
	})
}

// storedRange runs StoredKeys at epoch over keys lo..lo+19 of vnode a's rows
// (enough for its iterator and key gaps) and returns those it found.
func storedRange(t *testing.T, tbl *state.Table, a, lo int64, epoch uint64) []int64 {
	t.Helper()
	var keys [][]byte
	for k := lo; k < lo+20; k++ {
		keys = append(keys, tbl.RowKey(nil, []types.Datum{types.DInt(a), types.DInt(k), types.DString("")}))
	}
	found := make([]bool, len(keys))
	if err := tbl.StoredKeys(context.Background(), epoch, keys, found); err != nil {
		t.Fatal(err)
	}
	var out []int64
	for i, f := range found {
		if f {
			out = append(out, lo+int64(i))
		}
	}
	return out
}

// gapRow is row k of vnode a's keys in a block table.
func gapRow(a, k int64) []types.Datum {
	return []types.Datum{types.DInt(a), types.DInt(k), types.DString("v")}
}

// commitRows writes rows k of vnode a's keys (fresh: with InsertFresh) and
// commits them, with the epoch's other writes, at epoch.
func commitRows(t *testing.T, kv storage.KV, tbl *state.Table, a int64, epoch uint64, fresh bool, keys ...int64) {
	t.Helper()
	for _, k := range keys {
		var err error
		if fresh {
			err = tbl.InsertFresh(gapRow(a, k), 0)
		} else {
			err = tbl.Insert(gapRow(a, k))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	b := new(storage.Batch)
	tbl.Flush(epoch, b)
	if j := tbl.TakeFresh(epoch); j != nil {
		j.Write(b)
	}
	if err := kv.Commit(context.Background(), epoch, b); err != nil {
		t.Fatal(err)
	}
}

// TestGapsAfterStage: a gap found at a staged epoch (reads at the open epoch
// once a big statement staged it) is raised over the writes flushed in that
// epoch after the stage, which the store does not hold yet: after the commit
// a point read and a key check find the row.
func TestGapsAfterStage(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		commitRows(t, kv, tbl, a, 1, false, 10, 100)
		// Epoch 2: a statement stages, another's write of 60 is flushed after it.
		if err := tbl.Insert(gapRow(a, 50)); err != nil {
			t.Fatal(err)
		}
		sb := new(storage.Batch)
		tbl.Stage(2, sb)
		if err := kv.Stage(ctx, 2, sb); err != nil {
			t.Fatal(err)
		}
		if err := tbl.Insert(gapRow(a, 60)); err != nil {
			t.Fatal(err)
		}
		b := new(storage.Batch)
		tbl.Flush(2, b)
		// Reads below 60 find gaps up to 100 at the staged epoch.
		if _, found, err := tbl.Get(ctx, []types.Datum{types.DInt(a), types.DInt(55)}, nil); err != nil || found {
			t.Fatalf("get 55: found %v, %v", found, err)
		}
		if got := storedRange(t, tbl, a, 56, kv.CommittedEpoch()); len(got) > 0 {
			t.Fatalf("stored among 56..75 before the commit: %v", got)
		}
		if err := kv.Commit(ctx, 2, b); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := tbl.GetAt(ctx, 2, []types.Datum{types.DInt(a), types.DInt(60)}, nil); err != nil || !ok {
			t.Fatalf("row 60 after the commit: found %v, %v", ok, err)
		}
		if got := storedRange(t, tbl, a, 56, 2); !slices.Equal(got, []int64{60}) {
			t.Fatalf("stored among 56..75 after the commit: %v, want [60]", got)
		}
	})
}

// TestGapsAtOlderEpoch: a gap found by a read at an epoch older than the
// committed one (a statement's snapshot) is raised over the table's writes
// committed after that epoch: a later read finds them.
func TestGapsAtOlderEpoch(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		tbl, a := newBlockTable(t, kv)
		commitRows(t, kv, tbl, a, 1, false, 10, 100)
		commitRows(t, kv, tbl, a, 2, false, 60)
		if got := storedRange(t, tbl, a, 56, 1); len(got) > 0 {
			t.Fatalf("stored among 56..75 at epoch 1: %v", got)
		}
		if got := storedRange(t, tbl, a, 56, 2); !slices.Equal(got, []int64{60}) {
			t.Fatalf("stored among 56..75 at epoch 2: %v, want [60]", got)
		}
	})
}

// TestGapsUnderFreshRows: fresh rows sealed in a vnode (here one block over
// the row 100) take themselves out of its gaps, not only the vnode's greatest:
// a gap holding a lower fresh row no longer answers for it.
func TestGapsUnderFreshRows(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		commitRows(t, kv, tbl, a, 1, false, 10, 100)
		// A point read of 20 and a key check of 21 find gaps up to 100.
		if _, found, err := tbl.GetAt(ctx, 1, []types.Datum{types.DInt(a), types.DInt(20)}, nil); err != nil || found {
			t.Fatalf("get 20: found %v, %v", found, err)
		}
		if got := storedRange(t, tbl, a, 21, 1); len(got) > 0 {
			t.Fatalf("stored among 21..40: %v", got)
		}
		// Fresh rows inside the gaps and above 100: the vnode's greatest is not in them.
		commitRows(t, kv, tbl, a, 2, true, 30, 150)
		if _, ok, err := tbl.GetAt(ctx, 2, []types.Datum{types.DInt(a), types.DInt(30)}, nil); err != nil || !ok {
			t.Fatalf("fresh row 30: found %v, %v", ok, err)
		}
		if got := storedRange(t, tbl, a, 21, 2); !slices.Equal(got, []int64{30}) {
			t.Fatalf("stored among 21..40 after the fresh rows: %v, want [30]", got)
		}
	})
}

// TestKeyGapsUnderSpanningBlock: a block spans the keys between its rows, so
// sealing one takes its whole range out of the key gaps, not only its rows'
// keys. A gap left inside it let a later seal write a block within its range,
// whose end then hid the spanning block's first row from reads.
func TestKeyGapsUnderSpanningBlock(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		commitRows(t, kv, tbl, a, 1, false, 100)
		commitRows(t, kv, tbl, a, 2, true, 200, 210)
		// A gap from 10 up to the row 100.
		if got := storedRange(t, tbl, a, 10, 2); len(got) > 0 {
			t.Fatalf("stored among 10..29: %v", got)
		}
		// A block from 20 to 150, over the row 100 (its rows lie below the
		// block of 200 and 210), then fresh rows inside its range.
		commitRows(t, kv, tbl, a, 3, true, 20, 150)
		commitRows(t, kv, tbl, a, 4, true, 40, 60)
		tbl.Flush(5, new(storage.Batch)) // drops the committed layers: reads go to the store
		for _, k := range []int64{20, 40, 60, 100, 150, 200, 210} {
			if _, ok, err := tbl.GetAt(ctx, 4, []types.Datum{types.DInt(a), types.DInt(k)}, nil); err != nil || !ok {
				t.Errorf("row %d: found %v, %v", k, ok, err)
			}
		}
		if got := storedRange(t, tbl, a, 15, 4); !slices.Equal(got, []int64{20}) {
			t.Errorf("stored among 15..34: %v, want [20]", got)
		}
	})
}

// TestKeyGapsUnderSealedRun: a gap a key check finds at an older epoch, while a
// seal job's run is taken but not committed, keeps out of the run's whole
// range, not only below its rows: the run's block spans a stored row the gap
// ends at. Left inside it, the gap let the next seal write a block inside the
// first one, whose end then hid the first block's lower rows from reads.
func TestKeyGapsUnderSealedRun(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		commitRows(t, kv, tbl, a, 1, false, 25)
		// Epoch 2's fresh run 10, 20, 30 (a block over the row 25) is taken,
		// not committed, when a statement reading at epoch 1 checks 5..24.
		for _, k := range []int64{10, 20, 30} {
			if err := tbl.InsertFresh(gapRow(a, k), 0); err != nil {
				t.Fatal(err)
			}
		}
		b := new(storage.Batch)
		tbl.Flush(2, b)
		j := tbl.TakeFresh(2)
		if got := storedRange(t, tbl, a, 5, 1); len(got) > 0 {
			t.Fatalf("stored among 5..24 at epoch 1: %v", got)
		}
		j.Write(b)
		if err := kv.Commit(ctx, 2, b); err != nil {
			t.Fatal(err)
		}
		commitRows(t, kv, tbl, a, 3, true, 21, 22)
		tbl.Flush(4, new(storage.Batch)) // drops the committed layers: reads go to the store
		for _, k := range []int64{10, 20, 21, 22, 25, 30} {
			if _, ok, err := tbl.GetAt(ctx, 3, []types.Datum{types.DInt(a), types.DInt(k)}, nil); err != nil || !ok {
				t.Errorf("row %d: found %v, %v", k, ok, err)
			}
		}
		if got := storedRange(t, tbl, a, 5, 3); !slices.Equal(got, []int64{10, 20, 21, 22}) {
			t.Errorf("stored among 5..24: %v, want [10 20 21 22]", got)
		}
	})
}
