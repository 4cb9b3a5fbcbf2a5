package physical

import (
	"slices"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/bind"
	"github.com/tributary/tributary/sql/parser"
)

// TestViewWatermark: a view that only inserts passes on the watermark of a
// watermarked column it keeps (through a temporal join), with its delay; a
// view that may retract, or drops the column, passes none.
func TestViewWatermark(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct {
		sql  string
		want *catalog.Watermark
	}{
		{"SELECT b.auction, t.name, b.ts AS at FROM bids b LEFT JOIN t FOR SYSTEM_TIME AS OF PROCTIME() ON b.auction = t.id",
			&catalog.Watermark{Column: "at", Delay: "00:00:05"}},
		{"SELECT auction, ts FROM bids WHERE price > 10", &catalog.Watermark{Column: "ts", Delay: "00:00:05"}},
		{"SELECT auction, price FROM bids", nil},
		{"SELECT auction, ts + INTERVAL '1 second' AS ts FROM bids", nil},
		{"SELECT u.id, e.at FROM u JOIN e ON u.id = e.k", nil},
		{"SELECT count(*) FROM bids", nil},
	} {
		sq, _, _, err := planSQL(cat, tc.sql, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		got := ViewWatermark(sq)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: watermark %+v, want %+v", tc.sql, got, tc.want)
		}
	}
}

// TestTemporalJoinDependencies: the index a lookup reads is a dependency,
// and a job planned again may read only indexes it depends on.
func TestTemporalJoinDependencies(t *testing.T) {
	cat := testCatalog(t)
	w, err := cat.Lookup("public", "w")
	if err != nil {
		t.Fatal(err)
	}
	idx := &catalog.Relation{ID: cat.NextID(), Schema: "public", Name: "w_u_id", Kind: catalog.KindIndex,
		Columns: w.Columns, PK: []int{1, 0}, DependsOn: []uint32{w.ID},
		Index: &catalog.IndexSettings{Table: w.ID, Columns: []int{1}, DistLen: 1}}
	if err := cat.Add(idx); err != nil {
		t.Fatal(err)
	}
	const sql = "SELECT u.id, w.label FROM u JOIN w FOR SYSTEM_TIME AS OF PROCTIME() ON u.id = w.u_id"
	sq, _, _, err := planSQL(cat, sql, nil)
	if err != nil {
		t.Fatal(err)
	}
	if deps := sq.Dependencies([]uint32{w.ID}); !slices.Equal(deps, []uint32{w.ID, idx.ID}) {
		t.Fatalf("dependencies %v, want [%d %d]", deps, w.ID, idx.ID)
	}
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []bool{true, false} {
		pq, err := bind.New(cat, nil).Query(stmts[0].(*parser.Query))
		if err != nil {
			t.Fatal(err)
		}
		KeepIndexes(pq, func(id uint32) bool { return keep && id == idx.ID })
		if _, err := Stream(pq); (err == nil) != keep {
			t.Errorf("planned again keeping the index: %v: err %v", keep, err)
		}
	}
}
