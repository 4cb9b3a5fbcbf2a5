package datagen

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Name is the connector's name in WITH (connector = ...).
const Name = "datagen"

// Option keys and defaults.
const (
	OptRowsPerSecond = "datagen.rows.per.second"
	OptSplitNum      = "datagen.split.num"

	DefaultRowsPerSecond = 10
	DefaultSplitNum      = 1
	defaultRandomMax     = 32767
	defaultLength        = 10
	maxSplits            = 1024
)

// Column is one column of the table the source fills.
type Column struct {
	Name string
	Type types.T
	// RowIndex marks a hidden row-id column: it gets n+1 for row n, so a
	// replayed row keeps its key.
	RowIndex bool
}

type kind uint8

const (
	kindRandom kind = iota
	kindSequence
	kindRowIndex
)

// field is how one column is generated.
type field struct {
	kind       kind
	typ        types.T
	start, end int64 // sequence, inclusive
	minI, maxI int64 // random integers, inclusive
	minF, maxF float64
	seed       uint64
	length     int // random strings
}

// Config is a parsed datagen source: how each column is generated, the total
// rate and the split count.
type Config struct {
	fields []field
	// RowsPerSecond is the total rate over all splits.
	RowsPerSecond int64
	// Splits is the number of splits (datagen.split.num).
	Splits int
	// Total is the number of rows the source produces (the shortest
	// sequence's length), or -1 when it never ends.
	Total int64
}

func invalid(format string, args ...any) error {
	return types.Errorf(types.ErrInvalidParameter, "datagen: "+format, args...)
}

// Parse checks a table's connector options against its columns. Keys are
// case-insensitive; "connector" must be "datagen". Errors are
// types.ErrUnsupported (another connector, a column type datagen cannot
// fill) or types.ErrInvalidParameter (a bad option).
func Parse(props map[string]string, cols []Column) (*Config, error) {
	opts := map[string]string{}
	for k, v := range props {
		opts[strings.ToLower(k)] = v
	}
	if c := strings.ToLower(opts["connector"]); c != Name {
		return nil, types.Errorf(types.ErrUnsupported, "connector %q is not supported (supported: datagen)", opts["connector"])
	}
	cfg := &Config{RowsPerSecond: DefaultRowsPerSecond, Splits: DefaultSplitNum, Total: -1}
	byName := map[string]int{}
	for i, c := range cols {
		byName[strings.ToLower(c.Name)] = i
	}
	perCol := make([]map[string]string, len(cols))
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := opts[k]
		switch {
		case k == "connector":
		case k == OptRowsPerSecond:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n <= 0 {
				return nil, invalid("%s must be a positive integer, got %q", k, v)
			}
			cfg.RowsPerSecond = n
		case k == OptSplitNum:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n <= 0 || n > maxSplits {
				return nil, invalid("%s must be an integer between 1 and %d, got %q", k, maxSplits, v)
			}
			cfg.Splits = n
		case strings.HasPrefix(k, "fields."):
			rest := k[len("fields."):]
			dot := strings.LastIndexByte(rest, '.')
			if dot <= 0 {
				return nil, invalid("option %q: expected fields.<column>.<attribute>", k)
			}
			i, ok := byName[rest[:dot]]
			if !ok || cols[i].RowIndex {
				return nil, invalid("option %q names no column of the table", k)
			}
			if perCol[i] == nil {
				perCol[i] = map[string]string{}
			}
			perCol[i][rest[dot+1:]] = v
		default:
			return nil, invalid("unknown option %q", k)
		}
	}
	for i, c := range cols {
		f, err := parseField(c, perCol[i])
		if err != nil {
			return nil, err
		}
		if f.kind == kindSequence {
			n := int64(uint64(f.end-f.start) + 1)
			if n <= 0 { // the full int64 range
				n = math.MaxInt64
			}
			if cfg.Total < 0 || n < cfg.Total {
				cfg.Total = n
			}
		}
		cfg.fields = append(cfg.fields, f)
	}
	return cfg, nil
}

func parseField(c Column, o map[string]string) (field, error) {
	f := field{typ: c.Type, kind: kindRandom}
	if c.RowIndex {
		f.kind = kindRowIndex
		return f, nil
	}
	known := map[string]bool{"kind": true}
	intOpt := func(name string, def int64) (int64, error) {
		known[name] = true
		s, ok := o[name]
		if !ok {
			return def, nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, invalid("fields.%s.%s must be an integer, got %q", c.Name, name, s)
		}
		return n, nil
	}
	floatOpt := func(name string, def float64) (float64, error) {
		known[name] = true
		s, ok := o[name]
		if !ok {
			return def, nil
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, invalid("fields.%s.%s must be a number, got %q", c.Name, name, s)
		}
		return n, nil
	}
	lo, hi := intRange(c.Type)
	switch k := strings.ToLower(o["kind"]); k {
	case "sequence":
		if !c.Type.IsInteger() {
			return f, invalid("column %s: a sequence column must have an integer type, not %s", c.Name, c.Type.SQLName())
		}
		f.kind = kindSequence
		var err error
		if f.start, err = intOpt("start", 1); err != nil {
			return f, err
		}
		if f.end, err = intOpt("end", hi); err != nil {
			return f, err
		}
		if f.start > f.end {
			return f, invalid("column %s: fields.%s.start (%d) is greater than fields.%s.end (%d)", c.Name, c.Name, f.start, c.Name, f.end)
		}
		if f.start < lo || f.end > hi {
			return f, invalid("column %s: the sequence %d..%d does not fit type %s", c.Name, f.start, f.end, c.Type.SQLName())
		}
	case "", "random":
		var err error
		switch {
		case c.Type.IsInteger():
			if f.minI, err = intOpt("min", 0); err != nil {
				return f, err
			}
			if f.maxI, err = intOpt("max", min(defaultRandomMax, hi)); err != nil {
				return f, err
			}
			if f.minI > f.maxI {
				return f, invalid("column %s: fields.%s.min (%d) is greater than fields.%s.max (%d)", c.Name, c.Name, f.minI, c.Name, f.maxI)
			}
			if f.minI < lo || f.maxI > hi {
				return f, invalid("column %s: the range %d..%d does not fit type %s", c.Name, f.minI, f.maxI, c.Type.SQLName())
			}
		case c.Type.ID == types.Float32 || c.Type.ID == types.Float64:
			if f.minF, err = floatOpt("min", 0); err != nil {
				return f, err
			}
			if f.maxF, err = floatOpt("max", defaultRandomMax); err != nil {
				return f, err
			}
			if f.minF > f.maxF {
				return f, invalid("column %s: fields.%s.min (%g) is greater than fields.%s.max (%g)", c.Name, c.Name, f.minF, c.Name, f.maxF)
			}
		case c.Type.ID == types.Varchar:
			def := int64(defaultLength)
			if c.Type.Width > 0 {
				def = min(def, int64(c.Type.Width))
			}
			n, err := intOpt("length", def)
			if err != nil {
				return f, err
			}
			if n < 0 || n > 1<<20 {
				return f, invalid("column %s: fields.%s.length must be between 0 and %d, got %d", c.Name, c.Name, 1<<20, n)
			}
			if c.Type.Width > 0 && n > int64(c.Type.Width) {
				return f, invalid("column %s: fields.%s.length %d exceeds the column's %s", c.Name, c.Name, n, c.Type)
			}
			f.length = int(n)
		case c.Type.ID == types.Bool:
		default:
			return f, types.Errorf(types.ErrUnsupported, "datagen: column %s: type %s is not supported (integers, floats, varchar, boolean)", c.Name, c.Type.SQLName())
		}
		seed, err := intOpt("seed", 0)
		if err != nil {
			return f, err
		}
		f.seed = uint64(seed)
	default:
		return f, invalid("column %s: unknown fields.%s.kind %q (sequence or random)", c.Name, c.Name, k)
	}
	for name := range o {
		if !known[name] {
			return f, invalid("column %s: unknown or misplaced option fields.%s.%s for a %s column", c.Name, c.Name, name, kindName(f.kind))
		}
	}
	return f, nil
}

func kindName(k kind) string {
	if k == kindSequence {
		return "sequence"
	}
	return "random"
}

// intRange is the range of an integer type.
func intRange(t types.T) (int64, int64) {
	switch t.ID {
	case types.Int16:
		return math.MinInt16, math.MaxInt16
	case types.Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// SplitRows is the number of rows split produces in all (-1: unbounded).
func (c *Config) SplitRows(split int) int64 {
	if c.Total < 0 {
		return -1
	}
	k := int64(c.Splits)
	if int64(split) >= c.Total {
		return 0
	}
	return (c.Total-int64(split)-1)/k + 1
}

// Fill appends up to limit rows of split, starting at its offset off (the
// number of its rows already produced), as Insert rows to dst, whose columns
// are the table's. It returns how many rows it appended: fewer than limit
// only when the split is exhausted. The only allocation is one string per
// string column per call.
func (c *Config) Fill(dst *types.Chunk, split int, off int64, limit int) int {
	n := limit
	if rows := c.SplitRows(split); rows >= 0 {
		n = int(min(int64(limit), max(rows-off, 0)))
	}
	if n <= 0 {
		return 0
	}
	k := int64(c.Splits)
	first := int64(split) + off*k
	for ci := range c.fields {
		f := &c.fields[ci]
		v := &dst.Cols[ci]
		for i := 0; i < n; i++ {
			v.Nulls = append(v.Nulls, false)
		}
		switch f.kind {
		case kindSequence:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, f.start+first+int64(i)*k)
			}
		case kindRowIndex:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, first+int64(i)*k+1)
			}
		default:
			c.fillRandom(f, v, first, k, n)
		}
	}
	dst.SetLen(dst.Len() + n)
	return n
}

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func (c *Config) fillRandom(f *field, v *types.Vector, first, k int64, n int) {
	switch {
	case f.typ.IsInteger():
		span := uint64(f.maxI-f.minI) + 1 // 0: the whole int64 range
		for i := 0; i < n; i++ {
			h := hash(f.seed, first+int64(i)*k, 0)
			if span != 0 {
				h %= span
			}
			v.I64 = append(v.I64, f.minI+int64(h))
		}
	case f.typ.ID == types.Bool:
		for i := 0; i < n; i++ {
			v.I64 = append(v.I64, int64(hash(f.seed, first+int64(i)*k, 0)&1))
		}
	case f.typ.ID == types.Float32 || f.typ.ID == types.Float64:
		for i := 0; i < n; i++ {
			u := float64(hash(f.seed, first+int64(i)*k, 0)>>11) / (1 << 53)
			x := f.minF + u*(f.maxF-f.minF)
			if f.typ.ID == types.Float32 {
				x = float64(float32(x))
			}
			v.F64 = append(v.F64, x)
		}
	case f.typ.ID == types.Varchar:
		buf := make([]byte, n*f.length)
		for i := 0; i < n; i++ {
			row := buf[i*f.length : (i+1)*f.length]
			var h uint64
			for j := range row {
				if j%8 == 0 {
					h = hash(f.seed, first+int64(i)*k, uint64(j/8)+1)
				}
				row[j] = alphabet[(h&0xff)%uint64(len(alphabet))]
				h >>= 8
			}
		}
		s := string(buf)
		for i := 0; i < n; i++ {
			v.Str = append(v.Str, s[i*f.length:(i+1)*f.length])
		}
	}
}

// hash is splitmix64 over (seed, row, lane): the random bits of one value.
func hash(seed uint64, row int64, lane uint64) uint64 {
	z := seed*0x9E3779B97F4A7C15 ^ uint64(row)*0xBF58476D1CE4E5B9 ^ lane*0x94D049BB133111EB
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// String describes the config, for errors and logs.
func (c *Config) String() string {
	return fmt.Sprintf("datagen(%d columns, %d rows/s, %d splits, total %d)", len(c.fields), c.RowsPerSecond, c.Splits, c.Total)
}
