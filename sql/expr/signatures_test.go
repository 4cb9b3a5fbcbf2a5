package expr

import (
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestSignatures: named functions and aggregates are listed with their
// overloads, operators are not, and every listed overload resolves.
func TestSignatures(t *testing.T) {
	found := map[string]int{}
	for _, s := range Signatures() {
		if !isIdent(s.Name) {
			t.Errorf("operator %q listed", s.Name)
		}
		found[s.Name]++
		if s.Agg && !s.AnyArg && len(s.Params) > 0 {
			if _, err := LookupAgg(s.Name, s.Params, false); err != nil {
				t.Errorf("%s%v listed but does not resolve: %v", s.Name, s.Params, err)
			}
		}
		if s.Name == "sum" && len(s.Params) == 1 && s.Params[0] == types.TInt32 && s.Result != types.TInt64 {
			t.Errorf("sum(integer) returns %v", s.Result)
		}
	}
	for name, min := range map[string]int{"abs": 4, "count": 2, "sum": 4, "upper": 1, "now": 1} {
		if found[name] < min {
			t.Errorf("%s: %d overloads listed, want at least %d", name, found[name], min)
		}
	}
}
