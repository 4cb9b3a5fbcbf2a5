package expr

import (
	"math/rand/v2"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

func benchEval(b *testing.B, expr string, cols ...types.T) {
	e, err := parseExpr(expr, cols...)
	if err != nil {
		b.Fatal(err)
	}
	in := randomChunk(rand.New(rand.NewPCG(1, 1)), cols, types.DefaultChunkSize)
	ctx := &Ctx{}
	out := types.NewVector(e.Type(), in.Len())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := e.Eval(ctx, in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*in.Len()), "ns/row")
}

func BenchmarkEvalAddInt64(b *testing.B) { benchEval(b, "$0 + 1::int8", types.TInt64) }
func BenchmarkEvalCompare(b *testing.B)  { benchEval(b, "$0 < $1", types.TInt64, types.TInt64) }
func BenchmarkEvalUpper(b *testing.B)    { benchEval(b, "upper($0)", types.TVarchar) }
func BenchmarkEvalNumericAdd(b *testing.B) {
	benchEval(b, "$0 + $0", types.TNumeric)
}
