package stream

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

func stDynamicNode(op string) *plan.StreamDynamicFilter {
	left := &plan.StreamValues{Out: stFields(types.TInt64, types.TInt64), Key: []int{0}}
	right := &plan.StreamValues{Out: stFields(types.TInt64)}
	n := &plan.StreamDynamicFilter{Left: left, Right: right, Col: 1, Op: op}
	layouts := n.StateLayouts()
	layouts[0].ID, layouts[1].ID = 300, 301
	n.SetState(layouts)
	return n
}

func TestDynamicFilter(t *testing.T) {
	n := stDynamicNode(">")
	i64 := []types.T{types.TInt64, types.TInt64}
	left := NewMockSource(i64,
		// No value in force yet: the rows are stored; at the barrier the
		// value 4 lets 2 and 4 in.
		ChunkMsg(stChunk(t, " I I\n + 1 1\n + 2 5\n + 3 .\n + 4 9")),
		stBarrier(1, 2),
		ChunkMsg(stChunk(t, " I I\n + 5 7")),
		stBarrier(2, 3),
		// Value 4: an update leaving the range, one entering, one staying.
		ChunkMsg(stChunk(t, " I I\nU- 2 5\nU+ 2 3\nU- 1 1\nU+ 1 8\nU- 4 9\nU+ 4 10")),
		stBarrier(3, 4),
		// The value drops to 2, then rises to 8 and is deleted in one epoch.
		stBarrier(4, 5),
		stBarrier(5, 6),
		stStop(6, 7, 1))
	right := NewMockSource([]types.T{types.TInt64},
		ChunkMsg(stChunk(t, " I\n + 4")),
		stBarrier(1, 2),
		stBarrier(2, 3),
		stBarrier(3, 4),
		ChunkMsg(stChunk(t, " I\nU- 4\nU+ 2")),
		stBarrier(4, 5),
		ChunkMsg(stChunk(t, " I\nU- 2\nU+ 8\n - 8")),
		stBarrier(5, 6),
		stStop(6, 7, 1))
	kv := memkv.New()
	actx := stActx(kv)
	e, align, err := NewDynamicFilter(actx, n, left, right)
	if err != nil {
		t.Fatal(err)
	}
	defer align.Close()
	stWant(t, stDrive(t, e, actx, NewRowSet([]int{0})),
		"2 5\n4 9",
		"2 5\n4 9\n5 7",
		"1 8\n4 10\n5 7",
		"1 8\n2 3\n4 10\n5 7",
		"",
		"")
}

// TestDynamicFilterRandom drives a dynamic filter with random changes on
// both sides for each comparison, restarting it halfway, and checks after
// every barrier that its output holds exactly the left rows comparing true
// with the value of that epoch's end.
func TestDynamicFilterRandom(t *testing.T) {
	seed := testseed.For(t)
	for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
		t.Run(op, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(len(op))+uint64(op[0])))
			n := stDynamicNode(op)
			kv := memkv.New()
			set := NewRowSet([]int{0})
			rows := map[int64]*int64{} // left rows: id -> v (nil: NULL)
			var value *int64           // the right row's value (nil: no row)
			hasRow, nextID := false, int64(0)
			pass := func(v, r *int64) bool {
				if v == nil || r == nil {
					return false
				}
				switch op {
				case "=":
					return *v == *r
				case "<>":
					return *v != *r
				case "<":
					return *v < *r
				case "<=":
					return *v <= *r
				case ">":
					return *v > *r
				}
				return *v >= *r
			}
			val := func() *int64 {
				if rng.IntN(8) == 0 {
					return nil
				}
				x := int64(rng.IntN(10))
				return &x
			}
			fmtV := func(v *int64) string {
				if v == nil {
					return "."
				}
				return fmt.Sprint(*v)
			}
			epoch := uint64(1)
			for run := 0; run < 2; run++ {
				left, right := NewMockSource([]types.T{types.TInt64, types.TInt64}), NewMockSource([]types.T{types.TInt64})
				var want []string
				for k := 0; k < 12; k++ {
					var lines []string
					for range rng.IntN(6) {
						ids := make([]int64, 0, len(rows))
						for id := range rows {
							ids = append(ids, id)
						}
						slices.Sort(ids)
						switch x := rng.IntN(3); {
						case x == 0 || len(ids) == 0:
							v := val()
							rows[nextID] = v
							lines = append(lines, fmt.Sprintf(" + %d %s", nextID, fmtV(v)))
							nextID++
						case x == 1:
							id := ids[rng.IntN(len(ids))]
							lines = append(lines, fmt.Sprintf(" - %d %s", id, fmtV(rows[id])))
							delete(rows, id)
						default:
							id, v := ids[rng.IntN(len(ids))], val()
							lines = append(lines, fmt.Sprintf("U- %d %s", id, fmtV(rows[id])), fmt.Sprintf("U+ %d %s", id, fmtV(v)))
							rows[id] = v
						}
					}
					if len(lines) > 0 {
						left.Push(ChunkMsg(stChunk(t, " I I\n"+strings.Join(lines, "\n"))))
					}
					if rng.IntN(2) == 0 {
						var r []string
						switch x := rng.IntN(4); {
						case !hasRow:
							value = val()
							r = append(r, " + "+fmtV(value))
							hasRow = true
						case x == 0:
							r = append(r, " - "+fmtV(value))
							value, hasRow = nil, false
						default:
							nv := val()
							r = append(r, "U- "+fmtV(value), "U+ "+fmtV(nv))
							value = nv
						}
						right.Push(ChunkMsg(stChunk(t, " I\n"+strings.Join(r, "\n"))))
					}
					b := stBarrier(epoch, epoch+1)
					if k == 11 {
						b = stStop(epoch, epoch+1, 1)
					}
					epoch++
					left.Push(b)
					right.Push(b)
					var exp []string
					for id, v := range rows {
						if pass(v, value) {
							exp = append(exp, fmt.Sprintf("%d %s", id, fmtV(v)))
						}
					}
					slices.Sort(exp)
					want = append(want, strings.Join(exp, "\n"))
				}
				actx := stActx(kv)
				e, align, err := NewDynamicFilter(actx, n, left, right)
				if err != nil {
					t.Fatal(err)
				}
				got := stDrive(t, e, actx, set)
				align.Close()
				stWant(t, got, want...)
			}
		})
	}
}
