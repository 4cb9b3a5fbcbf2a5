package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// A hub is the change stream of one replication slot, shared by every
// table that reads the slot (the tables of a CREATE SOURCE, or the one
// table of the single-table form): one goroutine holds one session with
// the upstream, reads the slot once, routes each change to its table's
// Reader and copies the tables that are still copying, a chunk at a time
// round robin, with the same watermarks.
//
// Readers register (Source.Reader) and unregister (Reader.Close), each
// for its splits; the goroutine runs while any is registered. Each split
// keeps its own offset (its LSN: the changes it has applied), so a split
// that joins later, or resumes from an older offset after a restart or a
// rescale, takes exactly its own changes: the session goes back to the
// lowest LSN a split needs and each split skips the transactions at or
// below its own.
//
// The slot's confirmed LSN is the least LSN that every split of the slot's
// tables has committed (known: the tables registered so far and the ones
// their specs name, with all their splits; a split's committed LSN is kept
// when its reader closes, until the table is dropped), so the upstream
// keeps the WAL any of them may need after a restart.
type hub struct {
	key string
	// life serialises starting and stopping the goroutine.
	life sync.Mutex
	run  *hubRun
	// wake is signalled when the registered readers change.
	wake chan struct{}
	// walEnd is the upstream's WAL end as the replication stream last
	// reported it (keepalives and data messages), 0 until then.
	walEnd atomic.Uint64

	mu struct {
		sync.Mutex
		readers map[string]*Reader // registered, by split key
		// known are the slot's tables (the confirmed LSN waits for all),
		// splits their split keys (learned from their first reader: a
		// Ranged table's readers each read some of its ranges); floors
		// are the splits' committed LSNs while no reader is registered.
		known   map[string]bool
		splits  map[string][]string
		floors  map[string]uint64
		dropped map[string]bool
		changed bool
	}
}

type hubRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// hubs holds the process's hubs by slot (host, database, slot).
var hubs = struct {
	sync.Mutex
	m map[string]*hub
}{m: map[string]*hub{}}

func hubKey(c Config) string { return c.Addr() + "/" + c.Database + "/" + c.Slot }

// hubFor returns the hub of c's slot, made on first use.
func hubFor(c Config) *hub {
	hubs.Lock()
	defer hubs.Unlock()
	k := hubKey(c)
	h := hubs.m[k]
	if h == nil {
		h = &hub{key: k, wake: make(chan struct{}, 1)}
		h.mu.readers = map[string]*Reader{}
		h.mu.known = map[string]bool{}
		h.mu.splits = map[string][]string{}
		h.mu.floors = map[string]uint64{}
		h.mu.dropped = map[string]bool{}
		hubs.m[k] = h
	}
	return h
}

// errDuplicateSplit: two readers of one table on one slot.
var errDuplicateSplit = errors.New("postgres-cdc: the upstream table is already read from this slot")

// register adds r (its siblings: the other tables of its slot, as the
// catalog lists them) and starts the goroutine when it is not running.
func (h *hub) register(r *Reader, siblings []string) error {
	h.life.Lock()
	defer h.life.Unlock()
	h.mu.Lock()
	for _, sp := range r.splits {
		if old := h.mu.readers[sp.key]; old != nil {
			h.mu.Unlock()
			return fmt.Errorf("%w: %s split %s (slot %s)", errDuplicateSplit, r.name, sp.name, r.src.cfg.Slot)
		}
	}
	for _, sp := range r.splits {
		h.mu.readers[sp.key] = r
	}
	delete(h.mu.dropped, r.name)
	h.mu.known[r.name] = true
	h.mu.splits[r.name] = r.allKeys()
	for _, s := range siblings {
		if !h.mu.dropped[s] {
			h.mu.known[s] = true
		}
	}
	h.mu.changed = true
	h.mu.Unlock()
	signal(h.wake)
	if h.run == nil {
		ctx, cancel := context.WithCancel(context.Background())
		run := &hubRun{cancel: cancel, done: make(chan struct{})}
		h.run = run
		go h.loop(ctx, run.done, r.src.cfg)
	}
	return nil
}

// unregister removes r, keeping its splits' committed LSNs as their
// floors; the goroutine stops with the last reader.
func (h *hub) unregister(r *Reader) {
	h.life.Lock()
	defer h.life.Unlock()
	h.mu.Lock()
	for _, sp := range r.splits {
		if h.mu.readers[sp.key] == r {
			delete(h.mu.readers, sp.key)
			if h.mu.known[r.name] {
				h.mu.floors[sp.key] = sp.committed.Load()
			}
			h.mu.changed = true
		}
	}
	empty := len(h.mu.readers) == 0
	h.mu.Unlock()
	signal(h.wake)
	if empty && h.run != nil {
		h.run.cancel()
		<-h.run.done
		h.run = nil
	}
}

// forget drops split from the slot's tables (DROP TABLE): the confirmed
// LSN no longer waits for it.
func (h *hub) forget(table string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.mu.splits[table] {
		delete(h.mu.floors, k)
	}
	delete(h.mu.known, table)
	delete(h.mu.splits, table)
	h.mu.dropped[table] = true
}

// forgetHub removes c's slot's hub (DROP SOURCE): no table reads it.
func forgetHub(c Config) {
	hubs.Lock()
	defer hubs.Unlock()
	delete(hubs.m, hubKey(c))
}

// confirmed is the LSN every split of the slot's tables has committed
// (0: not known for one of them yet).
func (h *hub) confirmed() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var lsn uint64
	for table := range h.mu.known {
		keys := h.mu.splits[table]
		if keys == nil {
			return 0 // no reader of it came yet
		}
		for _, k := range keys {
			var v uint64
			if r := h.mu.readers[k]; r != nil {
				v = r.splitByKey(k).committed.Load()
			} else {
				v = h.mu.floors[k]
			}
			if v == 0 {
				return 0
			}
			if lsn == 0 || v < lsn {
				lsn = v
			}
		}
	}
	return lsn
}

// readers returns the registered readers when they changed since the last
// call (ok), in table order.
func (h *hub) readers(always bool) (rs []*Reader, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.mu.changed && !always {
		return nil, false
	}
	h.mu.changed = false
	return h.readersLocked(), true
}

// readersLocked are the registered readers, each once, by table and first split.
func (h *hub) readersLocked() []*Reader {
	var rs []*Reader
	for _, r := range h.mu.readers {
		if !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].splits[0].key < rs[j].splits[0].key })
	return rs
}

// changed reports whether the registered readers changed (without
// clearing it).
func (h *hub) changed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.changed
}

// waitingFor reports whether a split of a known table has not registered
// yet.
func (h *hub) waitingFor() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for table := range h.mu.known {
		keys := h.mu.splits[table]
		if keys == nil {
			return true
		}
		for _, k := range keys {
			if h.mu.readers[k] == nil {
				return true
			}
		}
	}
	return false
}

// trouble reports err to every registered reader.
func (h *hub) trouble(err error) {
	h.mu.Lock()
	rs := h.readersLocked()
	h.mu.Unlock()
	for _, r := range rs {
		r.trbl.Report(fmt.Errorf("postgres-cdc %s: %w", r.src.spec.Relation, err))
	}
}

// gatherWait bounds how long a starting hub waits for the tables its
// readers' specs name to register (a restart opens them one by one), so
// that its first session starts from the least LSN they need.
const gatherWait = 3 * time.Second

// loop holds sessions with the upstream until ctx ends, retrying a failed
// one with a capped backoff (a session that must go back to an older LSN
// for a table that joined restarts at once).
func (h *hub) loop(ctx context.Context, done chan struct{}, cfg Config) {
	defer close(done)
	deadline := time.Now().Add(gatherWait)
	for h.waitingFor() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-time.After(50 * time.Millisecond):
		}
	}
	backoff := minBackoff
	for {
		s := &session{h: h, cfg: cfg}
		began := time.Now()
		err := s.run(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errRestart) {
			continue
		}
		h.trouble(fmt.Errorf("%w; retrying in %v", err, backoff))
		if time.Since(began) > time.Minute {
			backoff = minBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
