package postgrescdc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A copy's select must see every transaction whose changes the session
// has read from the stream (the changes to keys above the copied position
// were dropped on the strength of it). The stream can deliver a
// transaction a moment before new snapshots see it: PostgreSQL flushes a
// commit record (which the walsender may then decode and send) before it
// marks the transaction committed for snapshots. So a copy's select runs
// in a REPEATABLE READ transaction whose snapshot is checked first against
// the transactions read lately (seenXids), and taken again while one of
// them is still in progress in it.

// seenXidsKept bounds the transactions remembered: a commit is visible
// long before that many more have been read.
const seenXidsKept = 4096

// visibleWait bounds the wait for a snapshot that sees every transaction
// read.
const visibleWait = 30 * time.Second

// seenXids are the transactions the session has read from the stream,
// the newest seenXidsKept (the workers of parallel copies read them).
type seenXids struct {
	mu struct {
		sync.Mutex
		ring []uint32
		next int
	}
}

func (x *seenXids) add(xid uint32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.mu.ring) < seenXidsKept {
		x.mu.ring = append(x.mu.ring, xid)
		return
	}
	x.mu.ring[x.mu.next] = xid
	x.mu.next = (x.mu.next + 1) % seenXidsKept
}

func (x *seenXids) list() []uint32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]uint32(nil), x.mu.ring...)
}

// pgSnapshot is a snapshot as pg_current_snapshot() prints it
// (xmin:xmax:xip,...), with full (epoch-extended) transaction ids.
type pgSnapshot struct {
	xmin, xmax uint64
	xip        map[uint64]bool
}

func parseSnapshot(s string) (pgSnapshot, error) {
	f := strings.Split(strings.TrimSpace(s), ":")
	if len(f) != 3 {
		return pgSnapshot{}, fmt.Errorf("a snapshot %q", s)
	}
	var sn pgSnapshot
	var err error
	if sn.xmin, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return sn, fmt.Errorf("a snapshot %q: %w", s, err)
	}
	if sn.xmax, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return sn, fmt.Errorf("a snapshot %q: %w", s, err)
	}
	sn.xip = map[uint64]bool{}
	if f[2] != "" {
		for _, v := range strings.Split(f[2], ",") {
			x, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return sn, fmt.Errorf("a snapshot %q: %w", s, err)
			}
			sn.xip[x] = true
		}
	}
	return sn, nil
}

// sees reports whether a committed transaction (its 32-bit id, as the
// stream gives it: a recent one, at most 2^31 before the snapshot's xmax)
// is visible in the snapshot.
func (sn pgSnapshot) sees(xid uint32) bool {
	full := sn.xmax&^0xFFFFFFFF | uint64(xid)
	if full > sn.xmax && full >= 1<<32 {
		full -= 1 << 32 // from the epoch before xmax's
	}
	return full < sn.xmax && !sn.xip[full]
}

// selectVisible runs the copy query sql on conn in a REPEATABLE READ
// transaction whose snapshot sees every transaction in seen (taken again,
// after a short wait, while one is in progress in it, for up to
// visibleWait), its rows in formats (a column each) and about hint of
// them. end ends the transaction ("COMMIT", and what must follow it at
// once).
func selectVisible(ctx context.Context, conn *pgconn.PgConn, sql string, params [][]byte, formats []int16, hint int, seen []uint32, end string) (*rawRows, error) {
	deadline := time.Now().Add(visibleWait)
	wait := time.Millisecond
	for {
		rows, err := query(ctx, conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT pg_current_snapshot()::text")
		if err != nil {
			_, _ = query(ctx, conn, "ROLLBACK") // the error says what failed
			return nil, err
		}
		sn, err := parseSnapshot(rows[0][0])
		if err != nil {
			_, _ = query(ctx, conn, "ROLLBACK")
			return nil, err
		}
		var missing uint32
		ok := true
		for _, x := range seen {
			if !sn.sees(x) {
				missing, ok = x, false
				break
			}
		}
		if ok {
			res, err := readRows(conn.ExecParams(ctx, sql, params, nil, nil, formats), len(formats), hint)
			if err != nil {
				_, _ = query(ctx, conn, "ROLLBACK")
				return nil, err
			}
			if _, err := query(ctx, conn, end); err != nil {
				return nil, err
			}
			return res, nil
		}
		if _, err := query(ctx, conn, "ROLLBACK"); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("transaction %d, read from the stream, is still not visible to a new snapshot after %v", missing, visibleWait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}
