package expr

import (
	"slices"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Signature is one callable overload of a named function or aggregate, as
// PostgreSQL's pg_proc lists it: psql's \df shows these.
type Signature struct {
	Name     string
	Params   []types.T
	Variadic bool // the last parameter repeats
	Result   types.T
	Agg      bool
	AnyArg   bool // one argument of any type (count(x)); Params is empty
	// Volatility is 'i' (immutable), 's' (stable) or 'v' (volatile), as pg_proc.provolatile.
	Volatility byte
}

// sigProbeTypes are the argument types aggregates are tried with: an
// aggregate is resolved by a switch, not registered per signature.
var sigProbeTypes = []types.T{tI2, tI4, tI8, types.TNumeric, types.TFloat32, tF8, tS, types.TBool,
	types.TDate, types.TTimestamp, types.TTimestamptz, types.TInterval, types.TJsonb}

// aggNames are the aggregates LookupAgg knows, probed by Signatures.
var aggNames = []string{"count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "string_agg",
	"array_agg", "jsonb_agg", "json_agg", "jsonb_object_agg", "json_object_agg",
	"var_pop", "var_samp", "variance", "stddev", "stddev_pop", "stddev_samp"}

// Signatures lists the named functions and aggregates with their overloads
// (operators and the polymorphic forms resolved by special rules are not
// listed), sorted by name.
func Signatures() []Signature {
	var out []Signature
	for name, ovs := range registry {
		if !isIdent(name) {
			continue
		}
		for _, o := range ovs {
			ret := o.ret
			if o.retFn != nil {
				ret = o.retFn(o.params)
			}
			out = append(out, Signature{Name: name, Params: slices.Clone(o.params), Variadic: o.variadic, Result: ret,
				Volatility: "isv"[min(int(o.vol), 2)]})
		}
	}
	for _, name := range aggNames {
		seen := map[string]bool{}
		add := func(args []types.T) {
			a, err := LookupAgg(name, args, false)
			if err != nil {
				return
			}
			key := argKey(a.Args)
			if seen[key] {
				return
			}
			seen[key] = true
			out = append(out, Signature{Name: name, Params: slices.Clone(a.Args), Result: a.Result, Agg: true, Volatility: 'i'})
		}
		if name == "count" {
			out = append(out, Signature{Name: name, Result: tI8, Agg: true, Volatility: 'i'},
				Signature{Name: name, Result: tI8, Agg: true, AnyArg: true, Volatility: 'i'})
			continue
		}
		for _, t := range sigProbeTypes {
			add([]types.T{t})
			add([]types.T{t, tS}) // string_agg(x, delimiter)
		}
	}
	slices.SortStableFunc(out, func(a, b Signature) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func argKey(ts []types.T) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.String())
		b.WriteByte(',')
	}
	return b.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
