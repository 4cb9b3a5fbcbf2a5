package datagen

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

var testCols = []Column{{Name: "id", Type: types.TInt64}, {Name: "v", Type: types.TInt32}, {Name: "s", Type: types.TVarchar}, {Name: "f", Type: types.TFloat64}}

func testProps() map[string]string {
	return map[string]string{"connector": "datagen",
		"fields.id.kind": "sequence", "fields.id.start": "1", "fields.id.end": "1000",
		"fields.v.kind": "random", "fields.v.min": "0", "fields.v.max": "9", "fields.v.seed": "7",
		"fields.s.length": "5", "fields.f.min": "-1", "fields.f.max": "1"}
}

// generate reads every row of the source, split by split, chunk by chunk.
func generate(t *testing.T, cfg *Config, chunk int) map[int64][]types.Datum {
	t.Helper()
	ts := []types.T{types.TInt64, types.TInt32, types.TVarchar, types.TFloat64}
	rows := map[int64][]types.Datum{}
	for s := 0; s < cfg.Splits; s++ {
		var off int64
		for {
			c := types.NewChunk(ts, chunk)
			n := cfg.Fill(c, s, off, chunk)
			if n == 0 {
				break
			}
			off += int64(n)
			for i := 0; i < c.Len(); i++ {
				r := c.Row(i, nil)
				if _, dup := rows[r[0].I]; dup {
					t.Fatalf("duplicate id %d", r[0].I)
				}
				rows[r[0].I] = r
			}
		}
		if off != cfg.SplitRows(s) {
			t.Fatalf("split %d produced %d rows, want %d", s, off, cfg.SplitRows(s))
		}
	}
	return rows
}

func TestDeterministicAcrossSplitsAndChunks(t *testing.T) {
	one, err := Parse(testProps(), testCols)
	if err != nil {
		t.Fatal(err)
	}
	p := testProps()
	p["datagen.split.num"] = "3"
	three, err := Parse(p, testCols)
	if err != nil {
		t.Fatal(err)
	}
	a, b := generate(t, one, 1024), generate(t, three, 7)
	if len(a) != 1000 || len(b) != 1000 {
		t.Fatalf("rows: %d and %d, want 1000", len(a), len(b))
	}
	for id := int64(1); id <= 1000; id++ {
		ra, rb := a[id], b[id]
		if ra == nil || rb == nil {
			t.Fatalf("id %d missing", id)
		}
		for j := range ra {
			if ra[j] != rb[j] {
				t.Fatalf("id %d column %d: %v vs %v", id, j, ra[j], rb[j])
			}
		}
		if v := ra[1].I; v < 0 || v > 9 {
			t.Fatalf("v = %d out of [0, 9]", v)
		}
		if len(ra[2].S) != 5 {
			t.Fatalf("s = %q, want 5 characters", ra[2].S)
		}
		if f := ra[3].F; f < -1 || f > 1 {
			t.Fatalf("f = %g out of [-1, 1]", f)
		}
	}
}

func TestSeedChangesValues(t *testing.T) {
	a, _ := Parse(testProps(), testCols)
	p := testProps()
	p["fields.v.seed"] = "8"
	b, _ := Parse(p, testCols)
	ra, rb := generate(t, a, 100), generate(t, b, 100)
	same := 0
	for id := range ra {
		if ra[id][1] == rb[id][1] {
			same++
		}
	}
	if same > 300 {
		t.Fatalf("%d of 1000 values equal with different seeds", same)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		key, val string
		kind     error
	}{
		{"connector", "kafka", types.ErrUnsupported},
		{"fields.id.start", "x", types.ErrInvalidParameter},
		{"fields.id.start", "2000", types.ErrInvalidParameter},
		{"fields.v.min", "10", types.ErrInvalidParameter},
		{"fields.v.kind", "zipf", types.ErrInvalidParameter},
		{"fields.s.kind", "sequence", types.ErrInvalidParameter},
		{"fields.nope.kind", "random", types.ErrInvalidParameter},
		{"datagen.split.num", "0", types.ErrInvalidParameter},
		{"datagen.rows.per.second", "fast", types.ErrInvalidParameter},
		{"datagen.bogus", "1", types.ErrInvalidParameter},
	} {
		p := testProps()
		p[tc.key] = tc.val
		_, err := Parse(p, testCols)
		if !errors.Is(err, tc.kind) {
			t.Errorf("%s = %q: got %v, want %v", tc.key, tc.val, err, tc.kind)
		}
	}
}

func TestFillDoesNotAllocatePerRow(t *testing.T) {
	p := testProps()
	delete(p, "fields.s.length")
	delete(p, "fields.f.min")
	delete(p, "fields.f.max")
	cfg, err := Parse(p, testCols[:2])
	if err != nil {
		t.Fatal(err)
	}
	c := types.NewChunk([]types.T{types.TInt64, types.TInt32}, 1024)
	allocs := testing.AllocsPerRun(10, func() {
		c.Reset()
		cfg.Fill(c, 0, 0, 1000)
	})
	if allocs > 0 {
		t.Fatalf("Fill allocated %v times for 1000 integer rows", allocs)
	}
}

func TestVarcharWidth(t *testing.T) {
	cols := []Column{{Name: "s", Type: types.T{ID: types.Varchar, Width: 4}}}
	cfg, err := Parse(map[string]string{"connector": "datagen"}, cols)
	if err != nil {
		t.Fatalf("default length must fit varchar(4): %v", err)
	}
	c := types.NewChunk([]types.T{cols[0].Type}, 4)
	cfg.Fill(c, 0, 0, 4)
	if got := len(c.Cols[0].Str[3]); got != 4 {
		t.Fatalf("length %d, want 4", got)
	}
	if _, err := Parse(map[string]string{"connector": "datagen", "fields.s.length": "5"}, cols); !errors.Is(err, types.ErrInvalidParameter) {
		t.Fatalf("length 5 in varchar(4): %v", err)
	}
}
