package kafka

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/cockroachdb/apd/v3"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// colKind says what fills a column.
type colKind uint8

const (
	colPayload   colKind = iota // a field of the JSON value
	colRowID                    // RowID(partition, offset)
	colSplit                    // the partition's number, text
	colPosition                 // the offset
	colPartition                // INCLUDE partition: varchar or int
	colOffset                   // INCLUDE offset: bigint or varchar
	colTimestamp                // INCLUDE timestamp: the record's timestamp
	colKey                      // INCLUDE key: the raw key, bytea or varchar
)

// decodePlan is how a source's messages become rows: fixed at Parse and
// shared by its readers.
type decodePlan struct {
	cols []planCol
	// byName finds payload columns by exact name, then by lower-cased name.
	byName map[string]int
	upsert bool
	// rawKey is the INCLUDE KEY column that is an upsert's primary key, or
	// -1: then the key columns (keyCols, isKey) come from the key's JSON.
	rawKey  int
	keyCols []int
	isKey   []bool
}

type planCol struct {
	name string
	kind colKind
	typ  types.T
}

func newDecodePlan(spec connector.SourceSpec, upsert bool) (*decodePlan, error) {
	p := &decodePlan{byName: map[string]int{}, upsert: upsert, rawKey: -1, isKey: make([]bool, len(spec.Columns))}
	for j, c := range spec.Columns {
		pc := planCol{name: c.Name, typ: c.Type}
		bad := func(want string) error {
			return types.Errorf(types.ErrInvalidParameter, "kafka source: column %q (%s) must be %s", c.Name, c.Type.SQLName(), want)
		}
		id := c.Type.ID
		switch c.Meta {
		case "":
			pc.kind = colPayload
			if id == types.Unknown {
				return nil, types.Errorf(types.ErrUnsupported, "kafka source: column %q has no type", c.Name)
			}
			if _, dup := p.byName[c.Name]; !dup {
				p.byName[c.Name] = j
			}
			if _, dup := p.byName[strings.ToLower(c.Name)]; !dup {
				p.byName[strings.ToLower(c.Name)] = j
			}
		case connector.MetaRowID:
			pc.kind = colRowID
			if id != types.Int64 {
				return nil, bad("bigint")
			}
		case connector.MetaSplit:
			pc.kind = colSplit
			if id != types.Varchar {
				return nil, bad("varchar")
			}
		case connector.MetaPosition:
			pc.kind = colPosition
			if id != types.Int64 {
				return nil, bad("bigint")
			}
		case connector.MetaPartition:
			pc.kind = colPartition
			if id != types.Varchar && id != types.Int32 && id != types.Int64 {
				return nil, bad("varchar, int or bigint")
			}
		case connector.MetaOffset:
			pc.kind = colOffset
			if id != types.Int64 && id != types.Varchar {
				return nil, bad("bigint or varchar")
			}
		case connector.MetaTimestamp:
			pc.kind = colTimestamp
			if id != types.Timestamptz && id != types.Timestamp {
				return nil, bad("timestamptz or timestamp")
			}
		case connector.MetaKey:
			pc.kind = colKey
			if id != types.Bytea && id != types.Varchar {
				return nil, bad("bytea or varchar")
			}
		default:
			return nil, types.Errorf(types.ErrUnsupported, "kafka source: column %q: INCLUDE %s is not supported (supported: partition, offset, timestamp, key)", c.Name, c.Meta)
		}
		p.cols = append(p.cols, pc)
	}
	if !upsert {
		return p, nil
	}
	if len(spec.Key) == 0 {
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: FORMAT UPSERT needs a primary key: the JSON key's columns (PRIMARY KEY (...)), or INCLUDE KEY AS name with PRIMARY KEY (name)")
	}
	for _, j := range spec.Key {
		if j < 0 || j >= len(p.cols) {
			return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: key column %d out of range", j)
		}
		switch p.cols[j].kind {
		case colPayload:
			p.keyCols = append(p.keyCols, j)
			p.isKey[j] = true
		case colKey:
			p.rawKey = j
		default:
			return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: FORMAT UPSERT needs a primary key taken from the message key: column %q cannot be one (give PRIMARY KEY (...) of payload columns, or INCLUDE KEY AS name and PRIMARY KEY (name))", p.cols[j].name)
		}
	}
	if p.rawKey >= 0 && len(spec.Key) != 1 {
		return nil, types.Errorf(types.ErrInvalidParameter, "kafka source: with FORMAT UPSERT an INCLUDE KEY column (%q) is the whole primary key, not a part of it", p.cols[p.rawKey].name)
	}
	return p, nil
}

// decoder turns one reader's messages into rows. Not safe for concurrent
// use; values parsed are valid until the next message.
type decoder struct {
	plan     *decodePlan
	maxBytes int
	val, key fastjson.Parser
	vals     []*fastjson.Value // each payload column's value in the message
	keyVals  []*fastjson.Value // each key column's value in the JSON key
	keyVecs  []types.Vector    // the key columns' values, converted first
	visitVal func(k []byte, v *fastjson.Value)
	visitKey func(k []byte, v *fastjson.Value)
	lower    []byte // a field name, lower-cased
	scratch  []byte // a value's JSON text
	bad      error  // the message's first value that did not fit
	// fields remembers the column of the i-th field of the messages seen
	// (the messages of a topic mostly share one field order), so a field
	// costs a comparison of its name rather than a map lookup; field is
	// the position in the message being read.
	fields []seenField
	field  int
	// strs holds the message's string values (one allocation per message,
	// not one per value); strsCap is its size, the message's, which bounds
	// the unescaped strings. A row kept downstream keeps its message's
	// strings alive, no more.
	strs    []byte
	strsCap int
}

// seenField is a field name and the payload column it names (-1: none).
type seenField struct {
	name []byte
	col  int
}

// maxSeenFields bounds the remembered field order.
const maxSeenFields = 256

func newDecoder(plan *decodePlan, maxBytes int) *decoder {
	d := &decoder{plan: plan, maxBytes: maxBytes,
		vals: make([]*fastjson.Value, len(plan.cols)), keyVals: make([]*fastjson.Value, len(plan.cols))}
	d.keyVecs = make([]types.Vector, len(plan.cols))
	for _, j := range plan.keyCols {
		d.keyVecs[j].Init(plan.cols[j].typ, 1)
	}
	d.visitVal = func(k []byte, v *fastjson.Value) {
		if j := d.fieldColumn(k); j >= 0 && !plan.isKey[j] {
			d.vals[j] = v
		}
	}
	d.visitKey = func(k []byte, v *fastjson.Value) {
		if j := d.column(k); j >= 0 && plan.isKey[j] {
			d.keyVals[j] = v
		}
	}
	return d
}

// fieldColumn is column(k) for the next field of the message, answered
// from the remembered field order when the name is the one seen there.
func (d *decoder) fieldColumn(k []byte) int {
	i := d.field
	d.field++
	if i < len(d.fields) && string(d.fields[i].name) == string(k) {
		return d.fields[i].col
	}
	j := d.column(k)
	switch {
	case i < len(d.fields):
		d.fields[i] = seenField{name: append(d.fields[i].name[:0], k...), col: j}
	case i == len(d.fields) && i < maxSeenFields:
		d.fields = append(d.fields, seenField{name: append([]byte(nil), k...), col: j})
	}
	return j
}

// str returns b as a string in the message's string block, or in its own
// allocation when the block is full.
func (d *decoder) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if d.strs == nil {
		d.strs = make([]byte, 0, max(d.strsCap, len(b)))
	}
	n := len(d.strs)
	if cap(d.strs)-n < len(b) {
		return string(b)
	}
	// Bytes once appended are never written again (a new message gets a
	// new block), so the string stays immutable.
	d.strs = append(d.strs, b...)
	return unsafe.String(&d.strs[n], len(b))
}

// column returns the payload column a field names (exactly, else ignoring
// case), or -1.
func (d *decoder) column(k []byte) int {
	if j, ok := d.plan.byName[string(k)]; ok {
		return j
	}
	d.lower = d.lower[:0]
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= utf8.RuneSelf {
			d.lower = append(d.lower[:0], strings.ToLower(string(k))...)
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		d.lower = append(d.lower, c)
	}
	if j, ok := d.plan.byName[string(d.lower)]; ok {
		return j
	}
	return -1
}

// decode appends rec's row to dst and reports true, or skips rec and
// reports false. err is why rec was skipped or which of its values were
// set NULL (the first); nil when it was read whole. It never fails
// otherwise: a message's content cannot stop the reader.
func (d *decoder) decode(dst *types.Chunk, rec *kgo.Record, split string) (bool, error) {
	p := d.plan
	if n := len(rec.Key) + len(rec.Value); n > d.maxBytes {
		return false, types.Errorf(types.ErrInvalidParameter, "a message of %d bytes is larger than %s = %d: skipped", n, OptMaxMessageBytes, d.maxBytes)
	}
	d.bad = nil
	op := types.OpInsert
	if p.upsert {
		if rec.Key == nil {
			return false, types.Errorf(types.ErrInvalidText, "an upsert message without a key: skipped")
		}
		if p.rawKey < 0 {
			if err := d.parseKey(rec.Key); err != nil {
				return false, err
			}
		} else if p.cols[p.rawKey].typ.ID == types.Varchar && !utf8.Valid(rec.Key) {
			return false, types.Errorf(types.ErrInvalidText, "the key is not UTF-8 text for varchar column %q: skipped", p.cols[p.rawKey].name)
		}
		if rec.Value == nil {
			op = types.OpDelete
		}
	} else if rec.Value == nil {
		return false, nil // a tombstone carries no row
	}
	clear(d.vals)
	d.strs, d.strsCap = nil, len(rec.Value)
	if op == types.OpInsert {
		d.field = 0
		v, err := d.val.ParseBytes(rec.Value)
		if err != nil {
			return false, types.Errorf(types.ErrInvalidText, "malformed JSON: %v: skipped", err)
		}
		o, err := v.Object()
		if err != nil {
			return false, types.Errorf(types.ErrInvalidText, "the message is a JSON %s, not an object: skipped", v.Type())
		}
		o.Visit(d.visitVal)
	}

	for j := range p.cols {
		c := &p.cols[j]
		vec := &dst.Cols[j]
		switch c.kind {
		case colPayload:
			switch {
			case p.isKey[j]:
				vec.AppendFrom(&d.keyVecs[j], 0)
			case d.vals[j] == nil:
				vec.AppendNull()
			default:
				if err := d.appendJSON(vec, c.typ, d.vals[j]); err != nil && d.bad == nil {
					d.bad = fmt.Errorf("column %q: %w (set NULL)", c.name, err)
				}
			}
		case colRowID:
			appendInt(vec, RowID(rec.Partition, rec.Offset))
		case colSplit:
			appendStr(vec, split)
		case colPosition:
			appendInt(vec, rec.Offset)
		case colPartition:
			if c.typ.ID == types.Varchar {
				appendStr(vec, split)
			} else {
				appendInt(vec, int64(rec.Partition))
			}
		case colOffset:
			if c.typ.ID == types.Varchar {
				appendStr(vec, strconv.FormatInt(rec.Offset, 10))
			} else {
				appendInt(vec, rec.Offset)
			}
		case colTimestamp:
			appendInt(vec, rec.Timestamp.UnixMicro())
		case colKey:
			switch {
			case rec.Key == nil:
				vec.AppendNull()
			case c.typ.ID == types.Varchar && !utf8.Valid(rec.Key):
				vec.AppendNull()
				if d.bad == nil {
					d.bad = types.Errorf(types.ErrInvalidText, "column %q: the key is not UTF-8 text (set NULL)", c.name)
				}
			default:
				appendStr(vec, string(rec.Key))
			}
		}
	}
	if op != types.OpInsert && dst.Ops == nil {
		dst.Ops = make([]types.Op, dst.Len(), dst.Len()+types.DefaultChunkSize)
	}
	if dst.Ops != nil {
		dst.Ops = append(dst.Ops, op)
	}
	if dst.Vis != nil {
		dst.Vis = append(dst.Vis, true)
	}
	dst.SetLen(dst.Len() + 1)
	return true, d.bad
}

// parseKey reads an upsert message's JSON key into d.keyVecs: an object
// whose fields name the key columns, or a scalar when the key is one column.
// Every key column must be present, non-null and of its type.
func (d *decoder) parseKey(key []byte) error {
	p := d.plan
	v, err := d.key.ParseBytes(key)
	if err != nil {
		return types.Errorf(types.ErrInvalidText, "malformed JSON key: %v: skipped", err)
	}
	clear(d.keyVals)
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		o.Visit(d.visitKey)
	case fastjson.TypeArray:
		return types.Errorf(types.ErrInvalidText, "the key is a JSON array, not an object or a scalar: skipped")
	default:
		if len(p.keyCols) != 1 {
			return types.Errorf(types.ErrInvalidText, "the key is a JSON %s, not an object naming the %d key columns: skipped", v.Type(), len(p.keyCols))
		}
		d.keyVals[p.keyCols[0]] = v
	}
	for _, j := range p.keyCols {
		kv := d.keyVals[j]
		if kv == nil || kv.Type() == fastjson.TypeNull {
			return types.Errorf(types.ErrInvalidText, "the key has no value for key column %q: skipped", p.cols[j].name)
		}
		vec := &d.keyVecs[j]
		vec.Reset()
		if err := d.appendJSON(vec, p.cols[j].typ, kv); err != nil {
			return fmt.Errorf("key column %q: %w: skipped", p.cols[j].name, err)
		}
	}
	return nil
}

func appendInt(v *types.Vector, x int64) {
	v.Nulls = append(v.Nulls, false)
	v.I64 = append(v.I64, x)
}

func appendStr(v *types.Vector, s string) {
	v.Nulls = append(v.Nulls, false)
	v.Str = append(v.Str, s)
}

// appendJSON appends jv as a value of type t to vec: NULL, with an error
// saying why, when it does not fit. What fits:
//   - boolean: true, false, or a string PostgreSQL reads as one;
//   - smallint, int, bigint: a JSON number with an integral value in range;
//   - real, double: a number, or "NaN", "Infinity", "-Infinity";
//   - numeric: a number or a string holding one (read exactly);
//   - varchar: a string, or any other value as its JSON text;
//   - bytea, date, time, interval: a string in PostgreSQL's text form;
//   - timestamp, timestamptz: such a string, or a number of Unix ms;
//   - jsonb: any value;
//   - arrays: a JSON array of elements read as above, or a string in
//     PostgreSQL's text form ('{1,2}').
func (d *decoder) appendJSON(vec *types.Vector, t types.T, jv *fastjson.Value) error {
	jt := jv.Type()
	if jt == fastjson.TypeNull {
		vec.AppendNull()
		return nil
	}
	err := d.appendJSONValue(vec, t, jv, jt)
	if err != nil {
		vec.AppendNull()
	}
	return err
}

func (d *decoder) appendJSONValue(vec *types.Vector, t types.T, jv *fastjson.Value, jt fastjson.Type) error {
	switch t.ID {
	case types.Bool:
		switch jt {
		case fastjson.TypeTrue:
			appendInt(vec, 1)
			return nil
		case fastjson.TypeFalse:
			appendInt(vec, 0)
			return nil
		case fastjson.TypeString:
			return d.appendText(vec, t, jv)
		}
	case types.Int16, types.Int32, types.Int64:
		if jt != fastjson.TypeNumber {
			break
		}
		n, err := jv.Int64()
		if err != nil {
			f, ferr := jv.Float64()
			if ferr == nil && f != math.Trunc(f) {
				d.scratch = jv.MarshalTo(d.scratch[:0])
				return types.Errorf(types.ErrInvalidText, "%s is not an integer (type %s)", d.scratch, t.SQLName())
			}
			if ferr != nil || f < math.MinInt64 || f >= math.MaxInt64 {
				return d.outOfRange(t, jv)
			}
			n = int64(f)
		}
		var lo, hi int64 = math.MinInt64, math.MaxInt64
		switch t.ID {
		case types.Int16:
			lo, hi = math.MinInt16, math.MaxInt16
		case types.Int32:
			lo, hi = math.MinInt32, math.MaxInt32
		}
		if n < lo || n > hi {
			return d.outOfRange(t, jv)
		}
		appendInt(vec, n)
		return nil
	case types.Float32, types.Float64:
		switch jt {
		case fastjson.TypeNumber:
			f, err := jv.Float64()
			if err != nil || math.IsInf(f, 0) || (t.ID == types.Float32 && math.Abs(f) > math.MaxFloat32) {
				return d.outOfRange(t, jv)
			}
			if t.ID == types.Float32 {
				f = float64(float32(f))
			}
			vec.Nulls = append(vec.Nulls, false)
			vec.F64 = append(vec.F64, f)
			return nil
		case fastjson.TypeString:
			s, _ := jv.StringBytes()
			switch strings.ToLower(string(s)) {
			case "nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf":
				return d.appendText(vec, t, jv)
			}
		}
	case types.Numeric:
		if jt != fastjson.TypeNumber && jt != fastjson.TypeString {
			break
		}
		var dec apd.Decimal
		if jt == fastjson.TypeNumber {
			d.scratch = jv.MarshalTo(d.scratch[:0])
			if _, _, err := dec.SetString(unsafeString(d.scratch)); err != nil {
				return types.Errorf(types.ErrInvalidText, "invalid number %s", d.scratch)
			}
		} else {
			s, _ := jv.StringBytes()
			dd, err := types.ParseText(types.TNumeric, unsafeString(s))
			if err != nil {
				return err
			}
			dec.Set(&dd.Dec)
		}
		if err := types.FitNumeric(t, &dec); err != nil {
			return err
		}
		vec.Nulls = append(vec.Nulls, false)
		vec.Dec = append(vec.Dec, apd.Decimal{})
		vec.Dec[len(vec.Dec)-1].Set(&dec)
		return nil
	case types.Varchar:
		var b []byte
		if jt == fastjson.TypeString {
			b, _ = jv.StringBytes()
		} else {
			d.scratch = jv.MarshalTo(d.scratch[:0])
			b = d.scratch
		}
		if !utf8.Valid(b) {
			return types.Errorf(types.ErrInvalidText, "invalid UTF-8")
		}
		if t.Width > 0 && utf8.RuneCount(b) > int(t.Width) {
			dd, err := types.ParseText(t, string(b))
			if err != nil {
				return err
			}
			appendStr(vec, dd.S)
			return nil
		}
		appendStr(vec, d.str(b))
		return nil
	case types.Bytea, types.Date, types.Time, types.Interval, types.Uuid:
		if jt == fastjson.TypeString {
			return d.appendText(vec, t, jv)
		}
	case types.Timestamp, types.Timestamptz:
		switch jt {
		case fastjson.TypeString:
			if s, _ := jv.StringBytes(); len(s) > 0 {
				if us, ok := parseTimestamp(s); ok {
					appendInt(vec, us)
					return nil
				}
			}
			return d.appendText(vec, t, jv)
		case fastjson.TypeNumber:
			ms, err := jv.Int64()
			if err != nil || ms > math.MaxInt64/1000 || ms < math.MinInt64/1000 {
				return d.outOfRange(t, jv)
			}
			appendInt(vec, ms*1000)
			return nil
		}
	case types.Array:
		switch jt {
		case fastjson.TypeString: // PostgreSQL's text form, '{1,2}'
			return d.appendText(vec, t, jv)
		case fastjson.TypeArray:
			items, _ := jv.Array()
			elem := t.ElemType()
			ev := types.NewVector(elem, len(items))
			for _, it := range items {
				if err := d.appendJSON(ev, elem, it); err != nil {
					return err
				}
			}
			vals := make([]types.Datum, ev.Len())
			for i := range vals {
				ev.GetInto(i, &vals[i])
			}
			appendStr(vec, types.EncodeArray(elem, vals))
			return nil
		}
	case types.Jsonb:
		d.scratch = jv.MarshalTo(d.scratch[:0])
		if !utf8.Valid(d.scratch) {
			return types.Errorf(types.ErrInvalidText, "invalid UTF-8")
		}
		s, err := types.NormalizeJSON(unsafeString(d.scratch))
		if err != nil {
			return err
		}
		appendStr(vec, s)
		return nil
	}
	return types.Errorf(types.ErrDatatypeMismatch, "a JSON %s does not fit type %s", jt, t.SQLName())
}

// appendText appends the JSON string jv read as PostgreSQL text of type t.
func (d *decoder) appendText(vec *types.Vector, t types.T, jv *fastjson.Value) error {
	s, _ := jv.StringBytes()
	text := unsafeString(s)
	if t.Physical() == types.PhysStr {
		text = string(s) // the datum may keep it
	}
	dd, err := types.ParseText(t, text)
	if err != nil {
		return err
	}
	vec.Append(&dd)
	return nil
}

func (d *decoder) outOfRange(t types.T, jv *fastjson.Value) error {
	d.scratch = jv.MarshalTo(d.scratch[:0])
	return types.Errorf(types.ErrNumericOutOfRange, "%s is out of range for type %s", d.scratch, t.SQLName())
}

// unsafeString views b as a string for a call that does not keep it.
func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
