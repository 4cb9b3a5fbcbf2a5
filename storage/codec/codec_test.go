package codec

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
)

var allTypes = []types.T{
	types.TBool, types.TInt16, types.TInt32, types.TInt64, types.TFloat32, types.TFloat64,
	types.TNumeric, types.TVarchar, types.TBytea, types.TDate, types.TTime, types.TTimestamp,
	types.TTimestamptz, types.TInterval, types.TJsonb, types.TUuid,
	types.ArrayOf(types.TInt32), types.ArrayOf(types.TNumeric), types.ArrayOf(types.TVarchar),
	types.ArrayOf(types.TFloat64), types.ArrayOf(types.TInterval),
	types.StructOf([]types.StructField{{Name: "a", Type: types.TInt32}, {Name: "b", Type: types.TVarchar}}),
	types.StructOf([]types.StructField{{Name: "n", Type: types.TNumeric},
		{Name: "s", Type: types.StructOf([]types.StructField{{Name: "x", Type: types.TInt32}, {Name: "y", Type: types.ArrayOf(types.TInt32)}})}}),
}

func newRand(t *testing.T) (*rand.Rand, uint64) {
	seed := testseed.For(t)
	return rand.New(rand.NewPCG(seed, 7)), seed
}

func randString(rng *rand.Rand) string {
	alphabet := []byte{0x00, 0x01, 'a', 'b', 0x7f, 0xfe, 0xff}
	var sb strings.Builder
	for range rng.IntN(5) {
		sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
	}
	return sb.String()
}

func randDecimal(rng *rand.Rand, d *apd.Decimal) {
	switch rng.IntN(12) {
	case 0:
		d.Form = apd.Infinite
		d.Negative = rng.IntN(2) == 0
		return
	case 1:
		d.SetFinite(0, int32(rng.IntN(5)-2))
		d.Negative = rng.IntN(2) == 0 // -0 equals 0
		return
	case 2:
		// A coefficient beyond 64 bits.
		d.Coeff.SetString(fmt.Sprintf("%d%018d", 1+rng.IntN(999), rng.Int64N(1e18)), 10)
		d.Exponent = int32(rng.IntN(40) - 30)
		d.Negative = rng.IntN(2) == 0
		d.Form = apd.Finite
		return
	}
	c := rng.Int64N(2000) - 1000
	if rng.IntN(3) == 0 {
		c = rng.Int64N(1e12) - 5e11
	}
	// Trailing zeros in the coefficient make equal values with different exponents (1.0, 1.00).
	e := int32(rng.IntN(10) - 6)
	for range rng.IntN(3) {
		c *= 10
		e--
	}
	d.SetFinite(c, e)
}

func randDatum(rng *rand.Rand, t types.T) types.Datum {
	if rng.IntN(10) == 0 {
		return types.NullDatum
	}
	var d types.Datum
	switch t.ID {
	case types.Bool:
		d.I = int64(rng.IntN(2))
	case types.Int16:
		d.I = []int64{math.MinInt16, math.MaxInt16, -1, 0, 1, rng.Int64N(1<<16) - 1<<15}[rng.IntN(6)]
	case types.Int32:
		d.I = []int64{math.MinInt32, math.MaxInt32, -1, 0, 1, rng.Int64N(1<<32) - 1<<31}[rng.IntN(6)]
	case types.Int64, types.Date, types.Time, types.Timestamp, types.Timestamptz:
		d.I = []int64{math.MinInt64, math.MaxInt64, -1, 0, 1, int64(rng.Uint64()), rng.Int64N(2000) - 1000}[rng.IntN(7)]
	case types.Float32, types.Float64:
		specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), -math.NaN(),
			math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64, 1, -1}
		if rng.IntN(3) == 0 {
			d.F = specials[rng.IntN(len(specials))]
		} else {
			d.F = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(20)-10))
		}
		if t.ID == types.Float32 {
			d.F = float64(float32(d.F))
		}
	case types.Numeric:
		randDecimal(rng, &d.Dec)
	case types.Varchar, types.Bytea, types.Jsonb:
		d.S = randString(rng)
	case types.Uuid:
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if rng.IntN(2) == 0 {
			b[0] = 0x80 // keys must order unsigned: 80... after 7f...
		}
		d.S = string(b[:])
	case types.Array:
		// Short arrays of few distinct values, so prefixes, equal elements
		// (1.0 and 1.00) and NULL elements meet.
		vals := make([]types.Datum, rng.IntN(4))
		for i := range vals {
			vals[i] = randDatum(rng, t.ElemType())
			if t.Elem == types.Int32 {
				vals[i].I %= 3
			}
		}
		d.S = types.EncodeArray(t.ElemType(), vals)
	case types.Struct:
		// Few distinct field values, so equal leading fields and NULL fields meet.
		fs := t.StructFields()
		vals := make([]types.Datum, len(fs))
		for i, f := range fs {
			vals[i] = randDatum(rng, f.Type)
			if f.Type.ID == types.Int32 {
				vals[i].I %= 3
			}
		}
		d.S = types.EncodeStruct(t, vals)
	case types.Interval:
		d.Iv = types.IntervalValue{
			Months: int32(rng.IntN(5) - 2), Days: int32(rng.IntN(61) - 30),
			Micros: (rng.Int64N(5) - 2) * microsPerDay,
		}
		if rng.IntN(3) == 0 {
			d.Iv.Micros = rng.Int64N(1e12) - 5e11
		}
	}
	return d
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// TestKeyOrderMatchesCompare checks, per type and direction, that encoded keys order exactly like
// types.Compare (NULLs last), by sorting random datums both ways and comparing every pair.
func TestKeyOrderMatchesCompare(t *testing.T) {
	rng, seed := newRand(t)
	for _, typ := range allTypes {
		for _, desc := range []bool{false, true} {
			const n = 300
			ds := make([]types.Datum, n)
			keys := make([][]byte, n)
			for i := range ds {
				ds[i] = randDatum(rng, typ)
				keys[i] = EncodeKey(nil, typ, &ds[i], desc)
			}
			for i := range ds {
				for j := range ds {
					want := sign(types.Compare(typ, &ds[i], &ds[j]))
					if desc {
						want = -want
					}
					if got := sign(bytes.Compare(keys[i], keys[j])); got != want {
						t.Fatalf("seed %d: %s desc=%v: %s vs %s: keys compare %d, values %d",
							seed, typ, desc, types.FormatText(typ, &ds[i]), types.FormatText(typ, &ds[j]), got, want)
					}
				}
			}
			// And a sort of the keys equals a sort of the values.
			idx := make([]int, n)
			for i := range idx {
				idx[i] = i
			}
			byKey := slices.Clone(idx)
			slices.SortStableFunc(byKey, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
			for k := 1; k < n; k++ {
				c := types.Compare(typ, &ds[byKey[k-1]], &ds[byKey[k]])
				if (!desc && c > 0) || (desc && c < 0) {
					t.Fatalf("seed %d: %s desc=%v: key order puts %s before %s", seed, typ, desc,
						types.FormatText(typ, &ds[byKey[k-1]]), types.FormatText(typ, &ds[byKey[k]]))
				}
			}
		}
	}
}

// TestCompositeKeyOrder checks multi-column keys with mixed directions order lexicographically.
func TestCompositeKeyOrder(t *testing.T) {
	rng, seed := newRand(t)
	ts := []types.T{types.TVarchar, types.TInt32, types.TNumeric, types.TBytea}
	cols := []int{0, 1, 2, 3}
	desc := []bool{false, true, false, true}
	const n = 400
	rows := make([][]types.Datum, n)
	keys := make([][]byte, n)
	for i := range rows {
		rows[i] = make([]types.Datum, len(ts))
		for c, typ := range ts {
			rows[i][c] = randDatum(rng, typ)
			if typ.ID == types.Int32 {
				rows[i][c] = types.DInt(rng.Int64N(3)) // many ties, so later columns matter
			}
		}
		keys[i] = AppendKey(nil, ts, rows[i], cols, desc)
	}
	cmpRows := func(a, b []types.Datum) int {
		for c, typ := range ts {
			if r := types.Compare(typ, &a[c], &b[c]); r != 0 {
				if desc[c] {
					return -r
				}
				return r
			}
		}
		return 0
	}
	for i := range rows {
		for j := range rows {
			if got, want := sign(bytes.Compare(keys[i], keys[j])), sign(cmpRows(rows[i], rows[j])); got != want {
				t.Fatalf("seed %d: rows %d and %d: keys %d, values %d", seed, i, j, got, want)
			}
		}
	}
}

func TestKeySpecialValues(t *testing.T) {
	dec := func(s string) types.Datum {
		var d types.Datum
		if _, _, err := d.Dec.SetString(s); err != nil {
			t.Fatal(err)
		}
		return d
	}
	key := func(typ types.T, d types.Datum) []byte { return EncodeKey(nil, typ, &d, false) }
	// Equal values encode identically.
	for _, pair := range [][2]string{{"1.0", "1.00"}, {"1", "1.000"}, {"-0", "0"}, {"0.00", "0e10"}, {"100", "1E2"}} {
		if !bytes.Equal(key(types.TNumeric, dec(pair[0])), key(types.TNumeric, dec(pair[1]))) {
			t.Errorf("numeric %s and %s encode differently", pair[0], pair[1])
		}
	}
	if !bytes.Equal(key(types.TFloat64, types.DFloat(0)), key(types.TFloat64, types.DFloat(math.Copysign(0, -1)))) {
		t.Error("-0 and +0 encode differently")
	}
	if !bytes.Equal(key(types.TInterval, types.DInterval(types.IntervalValue{Months: 1})),
		key(types.TInterval, types.DInterval(types.IntervalValue{Days: 30}))) {
		t.Error("'1 month' and '30 days' encode differently")
	}
	// Numeric order including NaN above +Infinity (PostgreSQL's order).
	ordered := []string{"-Infinity", "-1e10", "-10.5", "-10", "-1", "-0.105", "-0.1", "-1e-10", "0",
		"1e-10", "0.1", "0.105", "1", "10", "10.5", "1e10", "123456789012345678901234567890", "Infinity", "NaN"}
	for i := 1; i < len(ordered); i++ {
		a, b := key(types.TNumeric, dec(ordered[i-1])), key(types.TNumeric, dec(ordered[i]))
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("numeric %s does not sort below %s", ordered[i-1], ordered[i])
		}
	}
	// Strings: a prefix sorts first, an embedded zero byte sorts below any other continuation.
	strs := []string{"", "\x00", "\x00\x00", "\x00\x01", "a", "a\x00", "a\x00b", "a\x01", "ab", "b", "\xff", "\xff\xff"}
	for i := 1; i < len(strs); i++ {
		if bytes.Compare(key(types.TBytea, types.DString(strs[i-1])), key(types.TBytea, types.DString(strs[i]))) >= 0 {
			t.Errorf("%q does not sort below %q", strs[i-1], strs[i])
		}
	}
	// NULL sorts last ascending and first descending.
	null := types.NullDatum
	big := types.DInt(math.MaxInt64)
	if bytes.Compare(key(types.TInt64, big), key(types.TInt64, null)) >= 0 {
		t.Error("NULL does not sort last ascending")
	}
	if bytes.Compare(EncodeKey(nil, types.TInt64, &null, true), EncodeKey(nil, types.TInt64, &big, true)) >= 0 {
		t.Error("NULL does not sort first descending")
	}
}

func datumsIdentical(typ types.T, a, b *types.Datum) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	switch typ.Physical() {
	case types.PhysI64:
		return a.I == b.I
	case types.PhysF64:
		return math.Float64bits(a.F) == math.Float64bits(b.F)
	case types.PhysStr:
		return a.S == b.S
	case types.PhysDec:
		return a.Dec.Form == b.Dec.Form && a.Dec.Negative == b.Dec.Negative && a.Dec.Exponent == b.Dec.Exponent &&
			a.Dec.Coeff.Cmp(&b.Dec.Coeff) == 0
	case types.PhysIv:
		return a.Iv == b.Iv
	}
	return false
}

func TestRowRoundTrip(t *testing.T) {
	rng, seed := newRand(t)
	var buf []byte
	var out []types.Datum
	for range 2000 {
		ts := make([]types.T, rng.IntN(20))
		row := make([]types.Datum, len(ts))
		for i := range ts {
			ts[i] = allTypes[rng.IntN(len(allTypes))]
			row[i] = randDatum(rng, ts[i])
		}
		buf = EncodeRow(buf[:0], ts, row)
		var err error
		out, err = DecodeRow(ts, buf, out)
		if err != nil {
			t.Fatalf("seed %d: decode %v: %v", seed, ts, err)
		}
		for i := range ts {
			if !datumsIdentical(ts[i], &row[i], &out[i]) {
				t.Fatalf("seed %d: column %d (%s): wrote %+v, read %+v", seed, i, ts[i], row[i], out[i])
			}
		}
		// A decoder with an extra trailing column reads it as NULL.
		wider := append(slices.Clone(ts), types.TInt64)
		out, err = DecodeRow(wider, buf, out)
		if err != nil || !out[len(ts)].Null {
			t.Fatalf("seed %d: decode with an added column: %v, last %+v", seed, err, out[len(ts)])
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	ts := []types.T{types.TVarchar, types.TInt64}
	row := []types.Datum{types.DString("hello"), types.DInt(42)}
	buf := EncodeRow(nil, ts, row)
	for cut := 0; cut < len(buf); cut++ {
		if _, err := DecodeRow(ts, buf[:cut], nil); err == nil {
			t.Errorf("decode of %d of %d bytes succeeded", cut, len(buf))
		}
	}
}

func TestEncodeNoAllocs(t *testing.T) {
	ts := []types.T{types.TInt64, types.TVarchar, types.TFloat64, types.TNumeric, types.TInterval, types.TDate}
	row := []types.Datum{types.DInt(7), types.DString("abc\x00def"), types.DFloat(1.5), {},
		types.DInterval(types.IntervalValue{Months: 1, Days: 2, Micros: 3}), types.NullDatum}
	row[3].Dec.SetFinite(12345, -2)
	cols := []int{0, 1, 2, 3, 4, 5}
	desc := []bool{false, true, false, true, false, true}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendKey(buf[:0], ts, row, cols, desc) }); n != 0 {
		t.Errorf("AppendKey allocates %.1f times per row", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf = EncodeRow(buf[:0], ts, row) }); n != 0 {
		t.Errorf("EncodeRow allocates %.1f times per row", n)
	}
	out := make([]types.Datum, len(ts))
	buf = EncodeRow(buf[:0], ts[:1], row[:1])
	if n := testing.AllocsPerRun(100, func() { out, _ = DecodeRow(ts[:1], buf, out) }); n != 0 {
		t.Errorf("DecodeRow of an int allocates %.1f times", n)
	}
}

func TestLayout(t *testing.T) {
	k := AppendTablePrefix(nil, 0x01020304, 0x00ff)
	if !bytes.Equal(k, []byte{1, 2, 3, 4, 0, 0xff}) {
		t.Fatalf("prefix %x", k)
	}
	id, vn, ok := SplitTablePrefix(append(k, 'x'))
	if !ok || id != 0x01020304 || vn != 0xff {
		t.Fatalf("split %x %x %v", id, vn, ok)
	}
	lo, hi := VnodeSpan(7, 255)
	if !bytes.Equal(lo, []byte{0, 0, 0, 7, 0, 255}) || !bytes.Equal(hi, []byte{0, 0, 0, 7, 1}) {
		t.Fatalf("vnode span %x %x", lo, hi)
	}
	lo, hi = TableSpan(7)
	if !bytes.Equal(lo, []byte{0, 0, 0, 7}) || !bytes.Equal(hi, []byte{0, 0, 0, 8}) {
		t.Fatalf("table span %x %x", lo, hi)
	}
	if PrefixEnd([]byte{0xff, 0xff}) != nil {
		t.Fatal("PrefixEnd of all 0xff is bounded")
	}
	seen := map[uint16]bool{}
	ts := []types.T{types.TInt64}
	for i := range 10000 {
		v := VnodeOf(HashRow(ts, []types.Datum{types.DInt(int64(i))}, []int{0}))
		if v >= VnodeCount {
			t.Fatalf("vnode %d", v)
		}
		seen[v] = true
	}
	if len(seen) != VnodeCount {
		t.Fatalf("10000 keys hit %d of %d vnodes", len(seen), VnodeCount)
	}
}

// TestHashChunkRowMatchesHashRow: hashing a chunk's row from its vectors
// gives HashRow's value (a row's vnode must not depend on how it is read).
func TestHashChunkRowMatchesHashRow(t *testing.T) {
	rng, seed := newRand(t)
	var scratch types.Datum
	for range 500 {
		ts := make([]types.T, 1+rng.IntN(8))
		for i := range ts {
			ts[i] = allTypes[rng.IntN(len(allTypes))]
		}
		c := types.NewChunk(ts, 4)
		for range 4 {
			row := make([]types.Datum, len(ts))
			for i := range ts {
				row[i] = randDatum(rng, ts[i])
			}
			c.AppendRow(row)
		}
		keys := []int{rng.IntN(len(ts))}
		if len(ts) > 1 {
			keys = append(keys, rng.IntN(len(ts)))
		}
		for i := 0; i < c.Len(); i++ {
			row := c.Row(i, nil)
			if got, want := HashChunkRow(c, i, keys, &scratch), HashRow(ts, row, keys); got != want {
				t.Fatalf("seed %d: types %v keys %v row %d: %x, HashRow %x", seed, ts, keys, i, got, want)
			}
		}
	}
}

// TestDecodeRowMissing: a row stored with fewer columns reads the missing
// trailing ones as the given values (NULL past them), and a stored NULL
// stays NULL.
func TestDecodeRowMissing(t *testing.T) {
	old := EncodeRow(nil, []types.T{types.TInt32, types.TVarchar}, []types.Datum{types.DInt(1), types.NullDatum})
	ts := []types.T{types.TInt32, types.TVarchar, types.TInt32, types.TVarchar, types.TInt32}
	missing := []types.Datum{types.NullDatum, types.DString("m"), types.DInt(5), types.NullDatum}
	row, err := DecodeRowMissing(ts, old, nil, missing)
	if err != nil {
		t.Fatal(err)
	}
	if row[0].I != 1 || !row[1].Null || row[2].Null || row[2].I != 5 || !row[3].Null || !row[4].Null {
		t.Fatalf("decoded %+v", row)
	}
	plain, err := DecodeRow(ts, old, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !plain[2].Null {
		t.Fatalf("DecodeRow: column 2 = %+v, want NULL", plain[2])
	}
}

// TestAppendDecodedRow: appending decoded rows to a chunk gives the rows
// DecodeRowMissing gives (random types and values, some rows stored before
// trailing columns were added), and fails on a cut row as it does.
func TestAppendDecodedRow(t *testing.T) {
	rng, seed := newRand(t)
	for range 300 {
		ts := make([]types.T, 1+rng.IntN(12))
		for i := range ts {
			ts[i] = allTypes[rng.IntN(len(allTypes))]
		}
		missing := make([]types.Datum, rng.IntN(len(ts)+1))
		for i := range missing {
			missing[i] = randDatum(rng, ts[i])
		}
		c := types.NewChunk(ts, 4)
		tmp := make([]types.Datum, len(ts))
		var want [][]types.Datum
		for range 1 + rng.IntN(8) {
			stored := ts[:1+rng.IntN(len(ts))] // an older row may lack trailing columns
			row := make([]types.Datum, len(stored))
			for i := range row {
				row[i] = randDatum(rng, stored[i])
			}
			buf := EncodeRow(nil, stored, row)
			dec, err := DecodeRowMissing(ts, buf, nil, missing)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			want = append(want, dec)
			if err := AppendDecodedRow(c, ts, buf, tmp, missing); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			// A cut row fails as it fails DecodeRowMissing.
			cut := buf[:rng.IntN(len(buf))]
			_, decErr := DecodeRowMissing(stored, cut, nil, nil)
			appErr := AppendDecodedRow(types.NewChunk(stored, 1), stored, cut, tmp, nil)
			if (decErr == nil) != (appErr == nil) {
				t.Fatalf("seed %d: %v cut to %d of %d bytes: DecodeRowMissing %v, AppendDecodedRow %v", seed, stored, len(cut), len(buf), decErr, appErr)
			}
		}
		if c.Len() != len(want) {
			t.Fatalf("seed %d: %d rows, want %d", seed, c.Len(), len(want))
		}
		var got types.Datum
		for r, row := range want {
			for i := range ts {
				c.Cols[i].GetInto(r, &got)
				if !datumsIdentical(ts[i], &row[i], &got) {
					t.Fatalf("seed %d: row %d column %d (%s): %+v, want %+v", seed, r, i, ts[i], got, row[i])
				}
			}
		}
	}
}
