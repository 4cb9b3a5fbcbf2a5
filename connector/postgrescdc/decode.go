package postgrescdc

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/sql/types"
)

// A copy's rows arrive in PostgreSQL's binary format where binaryDecoded
// reads their upstream type (no text to parse), else in text; key columns
// in binary only where binaryKeys makes their text forms back (the offset
// keeps a key's text forms, the next chunk's query takes them back: made
// for a chunk's last row, not parsed for every row). The session only copies
// them (rawRows); the reader decodes them into the engine's chunk in Read,
// on the engine's goroutine, so the session goes on with the next chunk.

// binaryDecoded are the upstream types read in binary format: their
// binary forms give the same values as types.ParseText of their text
// forms (text types, numeric, json, uuid stay in text: no cheaper).
var binaryDecoded = map[uint32]bool{
	types.OIDBool: true, types.OIDInt2: true, types.OIDInt4: true, types.OIDInt8: true,
	types.OIDFloat4: true, types.OIDFloat8: true, types.OIDBytea: true, types.OIDDate: true,
	types.OIDTime: true, types.OIDTimestamp: true, types.OIDTimestamptz: true, types.OIDInterval: true,
}

// binaryKeys are the upstream key types read in binary format (rowPK
// makes their text forms).
var binaryKeys = map[uint32]bool{types.OIDInt2: true, types.OIDInt4: true, types.OIDInt8: true}

// keyText is the text form of key column j's value v as the copy read it.
func (b *binding) keyText(j int, v []byte) string {
	if !b.binary(j) {
		return string(v)
	}
	var d types.Datum
	if err := decodeBinary(b.oids[j], b.types[j], v, &d); err != nil {
		return "\x00" + string(v) // parses as no integer: the key is reported and its row skipped
	}
	return strconv.FormatInt(d.I, 10)
}

// rawRows are a copied chunk's rows as the upstream sent them: ncols
// values a row, in the binding's column order and formats, one after
// another in data; ends holds where each value ends in data (rawNull set
// for a NULL, which has no bytes). Four bytes a value beside its bytes: a
// slice a value (24) cost a copy more than its values.
type rawRows struct {
	ncols int
	data  []byte
	ends  []uint32
}

// rawNull marks a NULL value's end in rawRows.ends; data stays under it.
const rawNull = 1 << 31

// rawBytesGuess is the bytes a value readRows makes room for at first.
const rawBytesGuess = 8

func (r *rawRows) len() int {
	if r == nil || r.ncols == 0 {
		return 0
	}
	return len(r.ends) / r.ncols
}

// row returns row i's values (nil: NULL), pointing into r's data.
func (r *rawRows) row(i int) [][]byte { return r.rowInto(nil, i) }

// rowInto is row with dst's memory (resized to ncols values; returned):
// a caller that goes through many rows reuses one.
func (r *rawRows) rowInto(dst [][]byte, i int) [][]byte {
	if cap(dst) < r.ncols {
		dst = make([][]byte, r.ncols)
	}
	dst = dst[:r.ncols]
	at := i * r.ncols
	var start uint32
	if at > 0 {
		start = r.ends[at-1] &^ rawNull
	}
	for j := range dst {
		e := r.ends[at+j]
		if e&rawNull != 0 {
			dst[j] = nil
			continue
		}
		dst[j] = r.data[start:e:e]
		start = e
	}
	return dst
}

// add appends value v (nil: NULL) to the last row; false when r's data
// would reach rawNull bytes.
func (r *rawRows) add(v []byte) bool {
	if v == nil {
		r.ends = append(r.ends, uint32(len(r.data))|rawNull)
		return true
	}
	if len(r.data)+len(v) >= rawNull {
		return false
	}
	r.data = append(r.data, v...)
	r.ends = append(r.ends, uint32(len(r.data)))
	return true
}

// readRows copies the rows of rr (ncols values each; about hint rows).
func readRows(rr *pgconn.ResultReader, ncols, hint int) (*rawRows, error) {
	out := &rawRows{
		ncols: ncols,
		ends:  make([]uint32, 0, hint*ncols),
		// Never nil: an empty value is an empty slice of it, not NULL.
		data: make([]byte, 0, min(max(hint*ncols*rawBytesGuess, 64<<10), 8<<20)),
	}
	for rr.NextRow() {
		vs := rr.Values()
		if len(vs) != ncols {
			_, _ = rr.Close()
			return nil, fmt.Errorf("a row of %d columns, %d expected", len(vs), ncols)
		}
		for _, v := range vs {
			if !out.add(v) {
				_, _ = rr.Close()
				return nil, fmt.Errorf("a chunk of more than %d bytes", rawNull)
			}
		}
	}
	if _, err := rr.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// nextChunk is the rows of a copy's next chunk after one of n rows that
// were read (all n) in bytes (Config.AutoChunk); blocked: the reader's
// queue was full since the last one (the engine is slower than the copy,
// which larger chunks do not help: they only make more rows to read again
// after a crash).
func nextChunk(cfg Config, n, bytes int, blocked bool) int {
	switch {
	case !cfg.AutoChunk:
		return cfg.ChunkRows
	case bytes > autoChunkBytes || blocked:
		return max(n/2, DefaultChunkRows)
	case bytes <= autoChunkBytes/2:
		return min(n*2, MaxAutoChunkRows)
	}
	return n
}

// resultFormats are the copy query's result formats, a column each.
func (b *binding) resultFormats() []int16 {
	f := make([]int16, len(b.types))
	for j := range f {
		if b.binary(j) {
			f[j] = 1
		}
	}
	return f
}

// binary reports whether the copy reads column j in binary format.
func (b *binding) binary(j int) bool { return j < len(b.bin) && b.bin[j] }

// setFormats sets which columns the copy reads in binary format.
func (b *binding) setFormats() {
	b.bin = make([]bool, len(b.types))
	for j := range b.bin {
		b.bin[j] = j < len(b.oids) && binaryDecoded[b.oids[j]] && (indexInt(b.pk, j) < 0 || binaryKeys[b.oids[j]])
	}
}

// decodeRow decodes a copied row (rawRows' formats) into row (a datum a
// column): a value that does not decode is NULL (reported to bad), a key
// that does not parse skips the row (false, reported).
func (b *binding) decodeRow(raw [][]byte, row []types.Datum, bad func(error)) bool {
	for j, v := range raw {
		if v == nil {
			row[j] = types.NullDatum
			continue
		}
		d := &row[j]
		var err error
		switch t := b.types[j]; {
		case b.binary(j):
			err = decodeBinary(b.oids[j], t, v, d)
		case t.ID == types.Varchar && t.Width == 0:
			*d = types.Datum{S: string(v)} // types.ParseText's, without its copy of the datum
		default:
			*d, err = types.ParseText(t, string(v))
		}
		if err != nil {
			if indexInt(b.pk, j) >= 0 {
				bad(fmt.Errorf("key column %q: %w; the row is skipped", b.names[j], err))
				return false
			}
			bad(fmt.Errorf("column %q: %w; set to NULL", b.names[j], err))
			*d = types.NullDatum
		}
	}
	return true
}

// PostgreSQL's binary dates and timestamps count from 2000-01-01.
const (
	pgEpochDays   = 10957
	pgEpochMicros = pgEpochDays * 86400 * 1e6
)

// decodeBinary decodes a value of upstream type oid (binaryDecoded) in
// binary format as Tributary type t into d (a datum is large: a copied
// row's columns are decoded where they go, not copied there).
func decodeBinary(oid uint32, t types.T, v []byte, d *types.Datum) error {
	*d = types.Datum{}
	bad := func(n int) error {
		return types.Errorf(types.ErrInvalidText, "a binary %s value of %d bytes, %d expected", t, len(v), n)
	}
	switch oid {
	case types.OIDBool:
		if len(v) != 1 {
			return bad(1)
		}
		if v[0] != 0 {
			d.I = 1 // types.DBool
		}
	case types.OIDInt2:
		if len(v) != 2 {
			return bad(2)
		}
		d.I = int64(int16(binary.BigEndian.Uint16(v)))
	case types.OIDInt4:
		if len(v) != 4 {
			return bad(4)
		}
		d.I = int64(int32(binary.BigEndian.Uint32(v)))
	case types.OIDInt8:
		if len(v) != 8 {
			return bad(8)
		}
		d.I = int64(binary.BigEndian.Uint64(v))
	case types.OIDFloat4:
		if len(v) != 4 {
			return bad(4)
		}
		d.F = canonicalNaN(float64(math.Float32frombits(binary.BigEndian.Uint32(v))))
	case types.OIDFloat8:
		if len(v) != 8 {
			return bad(8)
		}
		d.F = canonicalNaN(math.Float64frombits(binary.BigEndian.Uint64(v)))
	case types.OIDBytea:
		d.S = string(v)
	case types.OIDDate:
		if len(v) != 4 {
			return bad(4)
		}
		switch days := int32(binary.BigEndian.Uint32(v)); days {
		case math.MaxInt32:
			d.I = types.InfinityTS
		case math.MinInt32:
			d.I = types.NegInfinityTS
		default:
			d.I = int64(days) + pgEpochDays
		}
	case types.OIDTime:
		if len(v) != 8 {
			return bad(8)
		}
		d.I = int64(binary.BigEndian.Uint64(v))
	case types.OIDTimestamp, types.OIDTimestamptz:
		if len(v) != 8 {
			return bad(8)
		}
		switch us := int64(binary.BigEndian.Uint64(v)); us {
		case math.MaxInt64:
			d.I = types.InfinityTS
		case math.MinInt64:
			d.I = types.NegInfinityTS
		default:
			d.I = us + pgEpochMicros
		}
	case types.OIDInterval:
		if len(v) != 16 {
			return bad(16)
		}
		d.Iv = types.IntervalValue{
			Micros: int64(binary.BigEndian.Uint64(v)),
			Days:   int32(binary.BigEndian.Uint32(v[8:])),
			Months: int32(binary.BigEndian.Uint32(v[12:])),
		}
	default:
		return types.Errorf(types.ErrUnsupported, "no binary decoder for type oid %d", oid)
	}
	return nil
}

// canonicalNaN is f, but NaN as types.ParseText makes it (math.NaN()).
func canonicalNaN(f float64) float64 {
	if math.IsNaN(f) {
		return math.NaN()
	}
	return f
}
