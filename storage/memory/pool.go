package memory

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Label names an Account in rw_memory: the consumer (an operator's cache,
// "hash agg"), and the streaming job and actor it belongs to (0: none).
type Label struct {
	Name  string
	Job   uint32
	Actor uint32
}

// Pool is a byte budget shared by the accounts opened on it: the caches of
// the streaming operators. An account may hold up to its Allowance, which
// the account's owner enforces by evicting; the pool only counts.
//
// The allowance is the larger of the account's fair share (the budget
// divided among the open accounts) and what the other accounts leave unused.
// So one busy cache may use the whole budget while the others are small,
// and when the accounts together hold more than the budget (or the budget
// shrinks), every account above its fair share is held to it: the total
// comes back within the budget once each owner has evicted.
//
// A nil *Pool has no budget: Open returns a nil *Account, whose allowance is
// unlimited.
type Pool struct {
	base   int64        // the budget at scale 1
	budget atomic.Int64 // the budget now (base scaled down under pressure)
	used   atomic.Int64 // the accounts' bytes together
	n      atomic.Int64 // open accounts

	mu struct {
		sync.Mutex
		accounts map[*Account]struct{}
	}
}

// NewPool returns a pool of budget bytes.
func NewPool(budget int64) *Pool {
	p := &Pool{base: budget}
	p.budget.Store(budget)
	p.mu.accounts = map[*Account]struct{}{}
	return p
}

// Budget returns the pool's budget now; Used what its accounts hold.
func (p *Pool) Budget() int64 {
	if p == nil {
		return 0
	}
	return p.budget.Load()
}

// Used returns the bytes the accounts hold together (as last reported).
func (p *Pool) Used() int64 {
	if p == nil {
		return 0
	}
	return p.used.Load()
}

// SetScale sets the budget to the base budget times scale (0 < scale <= 1):
// the caches shrink to it as their owners next check their allowance.
func (p *Pool) SetScale(scale float64) {
	if p == nil {
		return
	}
	p.budget.Store(max(int64(float64(p.base)*min(scale, 1)), 1))
}

// Open returns a new account of the pool, holding nothing. Close it when its
// cache is gone.
func (p *Pool) Open(l Label) *Account {
	if p == nil {
		return nil
	}
	a := &Account{pool: p, label: l}
	p.mu.Lock()
	p.mu.accounts[a] = struct{}{}
	p.mu.Unlock()
	p.n.Add(1)
	return a
}

// Accounts lists the open accounts (label, allowance and bytes held) by job,
// actor and name.
func (p *Pool) Accounts() []Usage {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Usage, 0, len(p.mu.accounts))
	for a := range p.mu.accounts {
		out = append(out, Usage{Label: a.label, Budget: a.Allowance(), Used: a.Used()})
	}
	slices.SortFunc(out, func(x, y Usage) int {
		return cmp.Or(cmp.Compare(x.Job, y.Job), cmp.Compare(x.Actor, y.Actor), cmp.Compare(x.Name, y.Name))
	})
	return out
}

// Account is one cache's share of a Pool. Set and Close are its owner's (one
// goroutine at a time); Used, Allowance and the pool's listing may run
// beside them. A nil *Account has no limit.
type Account struct {
	pool   *Pool
	label  Label
	used   atomic.Int64
	closed atomic.Bool
}

// Set records that the cache holds n bytes now.
func (a *Account) Set(n int64) {
	if a == nil || a.closed.Load() {
		return
	}
	old := a.used.Swap(n)
	a.pool.used.Add(n - old)
}

// Used returns the bytes last Set.
func (a *Account) Used() int64 {
	if a == nil {
		return 0
	}
	return a.used.Load()
}

// Allowance returns the bytes the cache may hold now (see Pool).
func (a *Account) Allowance() int64 {
	if a == nil {
		return math.MaxInt64
	}
	p := a.pool
	budget := p.budget.Load()
	fair := budget / max(p.n.Load(), 1)
	rest := budget - (p.used.Load() - a.used.Load())
	return max(fair, rest)
}

// Close returns the account's bytes to the pool and removes it; further
// calls do nothing.
func (a *Account) Close() {
	if a == nil || a.closed.Swap(true) {
		return
	}
	p := a.pool
	p.used.Add(-a.used.Swap(0))
	p.mu.Lock()
	delete(p.mu.accounts, a)
	p.mu.Unlock()
	p.n.Add(-1)
}
