package stream

import (
	"math"
	"unsafe"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memory"
	"github.com/tributary/tributary/storage/state"
)

// cacheBudget bounds one operator cache twice: at most maxRows rows (the
// actor's CacheRows), and, when the actor has a memory pool, at most the
// bytes its account is allowed (memory.Account.Allowance). Bytes are
// estimated, not measured: a running mean of sampled rows' sizes (their
// datums, string bytes and a per-row overhead) times the rows cached. The
// operator asks limit for its row bound where it checks its cache (after
// each chunk and barrier), evicts down to it, and reports its rows then.
type cacheBudget struct {
	maxRows  int
	acct     *memory.Account // nil: rows only
	rowBytes int64           // estimated bytes per cached row (0: none sampled yet)
	seen     uint32          // rows offered to sample
	// held, when set, returns the bytes the operator holds besides its cached rows (its state
	// tables' prefix filters): they count against the account before the rows do.
	held func() int64
}

// holdsFilters counts the prefix filters of tables against the budget.
func (b *cacheBudget) holdsFilters(tables ...*state.Table) {
	b.held = func() int64 {
		n := 0
		for _, t := range tables {
			n += t.PrefixBytes()
		}
		return int64(n)
	}
}

func (b *cacheBudget) heldBytes() int64 {
	if b.held == nil {
		return 0
	}
	return b.held()
}

// datumBytes is one types.Datum's size in memory.
const datumBytes = int64(unsafe.Sizeof(types.Datum{}))

// minBudgetRows is the least a byte budget cuts a cache to (less would make
// every chunk evict and reload its keys); tests lower it.
var minBudgetRows int64 = 64

// sampleEvery: one row in sampleEvery is measured (the first always).
const sampleEvery = 8

// newCacheBudget returns the budget of one cache of actx's actor, with an
// account named name when the actor has a pool. Close it when the cache goes.
func newCacheBudget(actx *ActorContext, name string) *cacheBudget {
	b := &cacheBudget{maxRows: actx.CacheRows}
	if b.maxRows <= 0 {
		b.maxRows = DefaultCacheRows
	}
	b.acct = actx.cacheAccount(name)
	return b
}

// sample counts a row entering the cache, measuring one in sampleEvery:
// its datums plus overhead bytes the cache spends on it besides (map entry,
// key, bookkeeping).
func (b *cacheBudget) sample(row []types.Datum, overhead int) {
	if b == nil || b.acct == nil {
		return
	}
	b.seen++
	if b.seen%sampleEvery != 1 {
		return
	}
	n := int64(len(row))*datumBytes + int64(overhead)
	for i := range row {
		n += int64(len(row[i].S))
	}
	if b.rowBytes == 0 {
		b.rowBytes = n
		return
	}
	b.rowBytes += (n - b.rowBytes) / 8
	b.rowBytes = max(b.rowBytes, 1)
}

// limit returns the rows the cache may hold now (a nil budget: no limit).
func (b *cacheBudget) limit() int {
	if b == nil {
		return math.MaxInt
	}
	if b.acct == nil || b.rowBytes <= 0 {
		return b.maxRows
	}
	rows := (b.acct.Allowance() - b.heldBytes()) / b.rowBytes
	return int(min(max(rows, minBudgetRows), int64(b.maxRows)))
}

// report records that the cache holds rows rows.
func (b *cacheBudget) report(rows int) {
	if b != nil && b.acct != nil {
		b.acct.Set(int64(rows)*b.rowBytes + b.heldBytes())
	}
}
