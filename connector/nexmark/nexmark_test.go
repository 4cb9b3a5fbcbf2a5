package nexmark

import (
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// columns is the full reference schema of t as table columns.
func columns(t Table) []Column {
	var cols []Column
	for _, f := range schemas[t] {
		typ := types.TInt64
		switch f.kind {
		case "varchar":
			typ = types.TVarchar
		case "timestamp":
			typ = types.TTimestamp
		}
		cols = append(cols, Column{Name: f.name, Type: typ})
	}
	return cols
}

func parse(t *testing.T, table Table, extra map[string]string) *Config {
	t.Helper()
	p := map[string]string{"connector": "nexmark", "nexmark.table.type": table.String()}
	for k, v := range extra {
		p[k] = v
	}
	cfg, err := Parse(p, columns(table))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// generate reads every row of a bounded source, split by split, in chunks
// of the given size, and returns the rows by event number.
func generate(t *testing.T, cfg *Config, chunk int) map[int64][]types.Datum {
	t.Helper()
	ts := make([]types.T, len(cfg.fields))
	for i, c := range columns(cfg.Table) {
		ts[i] = c.Type
	}
	rows := map[int64][]types.Datum{}
	for s := 0; s < cfg.Splits; s++ {
		var off int64
		for {
			c := types.NewChunk(ts, chunk)
			n := cfg.Fill(c, s, off, chunk)
			if n == 0 {
				break
			}
			for i := 0; i < n; i++ {
				e := cfg.Table.EventOf(int64(s) + (off+int64(i))*int64(cfg.Splits))
				if _, dup := rows[e]; dup {
					t.Fatalf("event %d twice", e)
				}
				rows[e] = c.Row(i, nil)
			}
			off += int64(n)
		}
		if off != cfg.SplitRows(s) {
			t.Fatalf("split %d produced %d rows, want %d", s, off, cfg.SplitRows(s))
		}
	}
	return rows
}

func TestCountsFollowTheProportions(t *testing.T) {
	for _, tc := range []struct {
		events                int64
		person, auction, bids int64
	}{{0, 0, 0, 0}, {1, 1, 0, 0}, {3, 1, 2, 0}, {5, 1, 3, 1}, {500, 10, 30, 460}, {1000, 20, 60, 920}, {1001, 21, 60, 920}, {1049, 21, 63, 965}} {
		got := []int64{Person.CountBelow(tc.events), Auction.CountBelow(tc.events), Bid.CountBelow(tc.events)}
		if got[0] != tc.person || got[1] != tc.auction || got[2] != tc.bids {
			t.Errorf("%d events: %v, want [%d %d %d]", tc.events, got, tc.person, tc.auction, tc.bids)
		}
	}
	// EventOf enumerates exactly the events of each type, in order.
	var n [3]int64
	for e := int64(0); e < 5000; e++ {
		typ := Bid
		if r := e % 50; r == 0 {
			typ = Person
		} else if r < 4 {
			typ = Auction
		}
		if got := typ.EventOf(n[typ]); got != e {
			t.Fatalf("%s row %d: event %d, want %d", typ, n[typ], got, e)
		}
		n[typ]++
	}
}

func TestDeterministicAcrossSplitsAndChunks(t *testing.T) {
	for _, table := range []Table{Person, Auction, Bid} {
		one := generate(t, parse(t, table, map[string]string{"nexmark.event.num": "5000"}), 1024)
		three := generate(t, parse(t, table, map[string]string{"nexmark.event.num": "5000", "nexmark.split.num": "3"}), 7)
		if want := table.CountBelow(5000); int64(len(one)) != want || int64(len(three)) != want {
			t.Fatalf("%s: %d and %d rows, want %d", table, len(one), len(three), want)
		}
		for e, ra := range one {
			rb := three[e]
			for j := range ra {
				if ra[j] != rb[j] {
					t.Fatalf("%s event %d column %d: %v vs %v", table, e, j, ra[j], rb[j])
				}
			}
		}
		// Event k alone (a one-row fill at its offset) is the same row.
		cfg := parse(t, table, nil)
		for e, ra := range one {
			per, first := table.perEpoch()
			n := e/50*per + e%50 - first
			c := types.NewChunk(generateTypes(table), 1)
			cfg.Fill(c, 0, n, 1)
			rb := c.Row(0, nil)
			for j := range ra {
				if ra[j] != rb[j] {
					t.Fatalf("%s event %d column %d alone: %v vs %v", table, e, j, rb[j], ra[j])
				}
			}
		}
	}
}

func generateTypes(table Table) []types.T {
	var ts []types.T
	for _, c := range columns(table) {
		ts = append(ts, c.Type)
	}
	return ts
}

func TestIDsAndRanges(t *testing.T) {
	const events = 50000
	persons := generate(t, parse(t, Person, map[string]string{"nexmark.event.num": "50000"}), 1024)
	auctions := generate(t, parse(t, Auction, map[string]string{"nexmark.event.num": "50000"}), 1024)
	bids := generate(t, parse(t, Bid, map[string]string{"nexmark.event.num": "50000"}), 1024)
	pids, aids := map[int64]bool{}, map[int64]bool{}
	for e, r := range persons {
		if want := e/50 + 1000; r[0].I != want {
			t.Fatalf("person at event %d: id %d, want %d", e, r[0].I, want)
		}
		pids[r[0].I] = true
		if !strings.Contains(r[1].S, " ") || len(r[2].S) != 17 || !strings.HasSuffix(r[2].S, ".com") || len(r[3].S) != 19 {
			t.Fatalf("person %v", r)
		}
		if r[4].S != strings.ToLower(r[4].S) || len(r[5].S) != 2 {
			t.Fatalf("person city/state %q %q", r[4].S, r[5].S)
		}
	}
	for e, r := range auctions {
		aids[r[0].I] = true
		if r[3].I < 100 || r[4].I <= r[3].I || r[8].I < 10 || r[8].I > 14 {
			t.Fatalf("auction at event %d: %v", e, r)
		}
		if r[6].I <= r[5].I {
			t.Fatalf("auction at event %d expires %d before its time %d", e, r[6].I, r[5].I)
		}
		if r[7].I < 1000 || r[7].I > lastPerson(e)+1000+personIDLead {
			t.Fatalf("auction at event %d: seller %d", e, r[7].I)
		}
	}
	if len(pids) != events/50 || len(aids) != 3*events/50 {
		t.Fatalf("%d person ids, %d auction ids: want dense %d and %d", len(pids), len(aids), events/50, 3*events/50)
	}
	var hotAuction, matchedAuction, matchedBidder, hotChannel int
	var lastTime int64
	for e := int64(0); e < events; e++ {
		r, ok := bids[e]
		if !ok {
			continue
		}
		if aids[r[0].I] {
			matchedAuction++
		}
		if pids[r[1].I] {
			matchedBidder++
		}
		if r[0].I == lastAuction(e)/100*100+1000 {
			hotAuction++
		}
		if r[2].I < 100 || r[2].I > 1e8 {
			t.Fatalf("bid price %d", r[2].I)
		}
		if !strings.HasPrefix(r[3].S, "channel-") {
			hotChannel++
		}
		if !strings.HasPrefix(r[4].S, "https://www.nexmark.com/") {
			t.Fatalf("bid url %q", r[4].S)
		}
		if r[5].I < lastTime {
			t.Fatalf("bid time goes back at event %d", e)
		}
		lastTime = r[5].I
		if l := len(r[6].S); l < 54 || l > 81 {
			t.Fatalf("bid extra of %d characters", l)
		}
	}
	n := len(bids)
	if n != 46*events/50 {
		t.Fatalf("%d bids", n)
	}
	// Every bid's auction and bidder exist but for the few just ahead of
	// the last ones; about half the bids go to the hot auction, half to hot
	// channels.
	if matchedAuction < n*99/100 || matchedBidder < n*99/100 {
		t.Fatalf("%d of %d bids match an auction, %d a person", matchedAuction, n, matchedBidder)
	}
	if hotAuction < n*45/100 || hotChannel < n*45/100 || hotChannel > n*55/100 {
		t.Fatalf("%d of %d bids on hot auctions, %d on hot channels", hotAuction, n, hotChannel)
	}
	// Event time: base + e * gap (100 µs), in whole ms.
	if got, want := bids[49][5].I, int64(BaseTime+49*100000/1000000)*1000; got != want {
		t.Fatalf("bid 49 at %d, want %d", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		key, val string
		kind     error
	}{
		{"connector", "kafka", types.ErrUnsupported},
		{"nexmark.table.type", "Seller", types.ErrInvalidParameter},
		{"nexmark.split.num", "0", types.ErrInvalidParameter},
		{"nexmark.event.num", "-1", types.ErrInvalidParameter},
		{"nexmark.min.event.gap.in.ns", "x", types.ErrInvalidParameter},
		{"nexmark.max.chunk.size", "0", types.ErrInvalidParameter},
		{"nexmark.bogus", "1", types.ErrInvalidParameter},
		{"nexmark.next.event.rate", "0", types.ErrInvalidParameter},
	} {
		p := map[string]string{"connector": "nexmark", "nexmark.table.type": "Bid", tc.key: tc.val}
		if _, err := Parse(p, columns(Bid)); !errors.Is(err, tc.kind) {
			t.Errorf("%s = %q: got %v, want %v", tc.key, tc.val, err, tc.kind)
		}
	}
	p := map[string]string{"connector": "nexmark"}
	if _, err := Parse(p, columns(Bid)); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("no table type: %v", err)
	}
	p["nexmark.table.type"] = "bid"
	if _, err := Parse(p, []Column{{Name: "price", Type: types.TInt64}, {Name: "Auction", Type: types.TInt64}}); err != nil {
		t.Errorf("a subset of the columns in another order: %v", err)
	}
	if _, err := Parse(p, []Column{{Name: "id", Type: types.TInt64}}); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("a person column in a bid table: %v", err)
	}
	if _, err := Parse(p, []Column{{Name: "price", Type: types.TVarchar}}); !errors.Is(err, types.ErrDatatypeMismatch) {
		t.Errorf("price varchar: %v", err)
	}
}

// TestNextEventRate: nexmark.next.event.rate sets the event-time step apart
// from the pacing gap.
func TestNextEventRate(t *testing.T) {
	paced := parse(t, Bid, map[string]string{"nexmark.min.event.gap.in.ns": "100"})
	fast := parse(t, Bid, map[string]string{"nexmark.min.event.gap.in.ns": "100", "nexmark.next.event.rate": "1000"})
	if fast.RowsPerSecond() != paced.RowsPerSecond() {
		t.Errorf("the event-time rate changed the pacing: %d, want %d", fast.RowsPerSecond(), paced.RowsPerSecond())
	}
	for _, e := range []int64{0, 1, 999, 1000, 123456} {
		if got, want := fast.timestamp(e), BaseTime+e; got != want {
			t.Errorf("event %d at 1000 events/s: time %d, want %d", e, got, want)
		}
		if got, want := paced.timestamp(e), BaseTime+e/10000; got != want {
			t.Errorf("event %d with a 100 ns gap: time %d, want %d", e, got, want)
		}
	}
}

func TestFillAllocations(t *testing.T) {
	cfg := parse(t, Bid, nil)
	ts := generateTypes(Bid)
	c := types.NewChunk(ts, 1024)
	tables()
	allocs := testing.AllocsPerRun(10, func() {
		c.Reset()
		cfg.Fill(c, 0, 0, 1000)
	})
	if allocs > 0 {
		t.Fatalf("Fill allocated %v times for 1000 bids", allocs)
	}
}

// BenchmarkGenerate measures raw generation of whole events (all columns)
// into 1024-row chunks, in the 1:3:46 mix; events/s is the figure to quote.
func BenchmarkGenerate(b *testing.B) {
	cfgs := make([]*Config, 3)
	chunks := make([]*types.Chunk, 3)
	for _, table := range []Table{Person, Auction, Bid} {
		cfg, err := Parse(map[string]string{"connector": "nexmark", "nexmark.table.type": table.String()}, columns(table))
		if err != nil {
			b.Fatal(err)
		}
		cfgs[table], chunks[table] = cfg, types.NewChunk(generateTypes(table), 1024)
	}
	tables()
	b.ReportAllocs()
	b.ResetTimer()
	var offs [3]int64
	events := int64(0)
	for i := 0; i < b.N; i++ {
		// One round: 1024 bids and the persons and auctions of the same events.
		for _, table := range []Table{Person, Auction, Bid} {
			per, _ := table.perEpoch()
			n := int((1024*per + bidsPer - 1) / bidsPer)
			c := chunks[table]
			c.Reset()
			cfgs[table].Fill(c, 0, offs[table], n)
			offs[table] += int64(n)
		}
		events += 1024 * eventsPerEpoch / bidsPer
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
