package memory

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Shares are the parts of a memory limit given to each consumer.
type Shares struct {
	// Limit is the whole budget.
	Limit int64
	// Storage is the most the store may use for memtables and its block and
	// index caches (a quarter of the limit; storage/badger caps it at its
	// defaults, so a large limit changes nothing there).
	Storage int64
	// StreamCaches is the streaming operators' caches together (a quarter
	// of the limit); each operator also keeps its row bound
	// (--stream-cache-rows).
	StreamCaches int64
	// MappedTables is the most of the store's table files that may stay
	// resident in the process (an eighth of the limit): the pages its reads
	// touch in the mapped files, which the kernel leaves there while the
	// machine has memory to spare.
	MappedTables int64
}

// Split divides limit among the consumers. The three eighths not given out
// are for what is not accounted for yet: the epoch's pending writes, chunks
// between actors, batch queries, and the garbage the Go collector has not
// yet freed.
func Split(limit int64) Shares {
	return Shares{Limit: limit, Storage: limit / 4, StreamCaches: limit / 4, MappedTables: limit / 8}
}

// Go is the Go runtime's soft limit unless GOMEMLIMIT is set: the budget
// less MappedTables, the one share outside the Go heap.
func (s Shares) Go() int64 { return s.Limit - s.MappedTables }

// Usage is one consumer's line in rw_memory.
type Usage struct {
	Label
	// Budget is the bytes the consumer may hold (-1: none of its own).
	Budget int64
	// Used is what it holds now, as far as it is known (-1: unknown).
	Used int64
}

// Budget is the process's memory budget: the limit and the consumers that
// report against it (for rw_catalog.rw_memory), and the pressure watch that
// shrinks the caches when the Go heap nears the limit.
type Budget struct {
	Limit int64

	mu struct {
		sync.Mutex
		consumers []consumer
		held      []held
		pools     []namedPool
		shrink    []func(scale float64)
		scale     float64
	}
}

type consumer struct {
	name         string
	budget, used func() int64
}

// held is a consumer Watch holds to its budget.
type held struct {
	name   string
	budget int64
	trim   func(budget int64) (before, after int64, err error)
}

type namedPool struct {
	name string
	pool *Pool
}

// NewBudget returns a budget of limit bytes with no consumers.
func NewBudget(limit int64) *Budget {
	b := &Budget{Limit: limit}
	b.mu.scale = 1
	return b
}

// Add registers a consumer: its budget and what it holds, read when rw_memory
// is queried.
func (b *Budget) Add(name string, budget, used func() int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.consumers = append(b.mu.consumers, consumer{name, budget, used})
}

// Hold registers a consumer that does not shrink by itself (rw_memory lists it as Add does):
// several times an interval (trimsPerCheck) Watch calls trim with its budget, which brings
// what the consumer holds back under the budget when it is over, and reports what it held
// before and after.
func (b *Budget) Hold(name string, budget int64, used func() int64, trim func(budget int64) (before, after int64, err error)) {
	b.Add(name, func() int64 { return budget }, used)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.held = append(b.mu.held, held{name, budget, trim})
}

// trimHeld runs every held consumer's trim once.
func (b *Budget) trimHeld(logger *slog.Logger) {
	b.mu.Lock()
	hs := append([]held(nil), b.mu.held...)
	b.mu.Unlock()
	for _, h := range hs {
		before, after, err := h.trim(h.budget)
		switch {
		case err != nil && logger != nil:
			logger.Warn("memory budget: trim failed", "consumer", h.name, "err", err)
		case after < before && logger != nil:
			logger.Debug("memory budget: trimmed", "consumer", h.name, "before", before, "after", after, "budget", h.budget)
		}
	}
}

// AddPool registers a pool: one line for the pool, then one per account.
func (b *Budget) AddPool(name string, p *Pool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.pools = append(b.mu.pools, namedPool{name, p})
}

// OnPressure registers a function that sets a consumer's size to scale times
// its configured size (0 < scale <= 1); Watch calls it as pressure changes.
func (b *Budget) OnPressure(f func(scale float64)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.shrink = append(b.mu.shrink, f)
}

// Scale returns the caches' current scale (1: not shrunk).
func (b *Budget) Scale() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.scale
}

// Usage lists every consumer: the registered ones, then each pool and its
// accounts.
func (b *Budget) Usage() []Usage {
	b.mu.Lock()
	cs := append([]consumer(nil), b.mu.consumers...)
	ps := append([]namedPool(nil), b.mu.pools...)
	b.mu.Unlock()
	var out []Usage
	for _, c := range cs {
		out = append(out, Usage{Label: Label{Name: c.name}, Budget: c.budget(), Used: c.used()})
	}
	for _, p := range ps {
		out = append(out, Usage{Label: Label{Name: p.name}, Budget: p.pool.Budget(), Used: p.pool.Used()})
		out = append(out, p.pool.Accounts()...)
	}
	return out
}

// Pressure thresholds: the live heap (after the last collection) above
// shrinkAt of the limit halves the caches (down to minScale: caches cut
// further would reload state on every chunk, and what fills the heap then is
// not theirs); below growAt they double back (up to their configured sizes).
const (
	shrinkAt = 0.75
	growAt   = 0.5
	minScale = 1.0 / 16
)

// Check compares live bytes with the limit once and moves the caches' scale:
// halved when live is over shrinkAt of the limit, doubled back when it is
// under growAt. It returns the scale now.
func (b *Budget) Check(live int64) float64 {
	b.mu.Lock()
	old := b.mu.scale
	scale := old
	switch {
	case float64(live) > shrinkAt*float64(b.Limit):
		scale = max(scale/2, minScale)
	case float64(live) < growAt*float64(b.Limit):
		scale = min(scale*2, 1)
	}
	b.mu.scale = scale
	fs := append([]func(float64){}, b.mu.shrink...)
	b.mu.Unlock()
	if scale != old {
		for _, f := range fs {
			f(scale)
		}
	}
	return scale
}

// trimsPerCheck is how many times an interval Watch holds the consumers registered with Hold
// to their budgets. What they hold grows between two trims: Badger's compactions and reads
// map hundreds of megabytes of table pages a second under Nexmark q20, and with a trim a
// second the pages resident peaked at 2.5 times their 256 MB share (644 MB), enough to take
// the process over a 2 GB budget by a quarter. Measuring is cheap (RssFile from
// /proc/self/status); the listing of the mappings runs only when they are over.
const trimsPerCheck = 5

// Watch runs Check every interval with the Go heap's live bytes until ctx
// ends, logging when the caches shrink or grow back, and holds the consumers
// registered with Hold to their budgets. The live bytes are measured by each
// garbage collection: an interval without one (an idle server) leaves the
// scale as it is.
func (b *Budget) Watch(ctx context.Context, every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every / trimsPerCheck)
	defer t.Stop()
	lastGC := gcCycles()
	for tick := 0; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.trimHeld(logger)
		if tick%trimsPerCheck != 0 {
			continue
		}
		if n := gcCycles(); n == lastGC {
			continue
		} else {
			lastGC = n
		}
		_, live := GoMemory()
		old := b.Scale()
		if s := b.Check(live); s != old && logger != nil {
			logger.Info("memory pressure: caches resized", "scale", s, "live_heap", live, "limit", b.Limit)
		}
	}
}

// GoMemory returns the memory the Go runtime holds (what its soft limit
// counts: everything mapped and not released) and the heap's live bytes as
// of the last collection.
func GoMemory() (total, live int64) {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	return v(0) - v(1), v(2)
}

// gcCycles returns the number of garbage collections so far.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// SetGoLimit sets the Go runtime's soft memory limit to limit, unless the
// GOMEMLIMIT environment variable set one (which is kept). It returns the
// limit in force and whether it came from GOMEMLIMIT.
func SetGoLimit(limit int64) (int64, bool) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), true
	}
	debug.SetMemoryLimit(limit)
	return limit, false
}
