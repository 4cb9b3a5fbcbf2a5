package kafka

import (
	"strconv"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// encoder writes rows as JSON objects keyed by column name, as the file
// sink does: numbers and booleans as JSON, NULL as null, every other value
// as its PostgreSQL text in a string; hidden columns are left out of rows
// (a key may name one: a query's generated row id).
type encoder struct {
	cols   []connector.Column
	names  [][]byte // each column's `"name":`
	key    []int    // the key columns
	source []byte   // a Debezium event's end: `,"source":{...}}`
	text   []byte   // a value's text, reused
}

func newEncoder(target connector.SinkTarget, key []string) (*encoder, error) {
	e := &encoder{cols: target.Columns}
	for _, c := range target.Columns {
		e.names = append(e.names, append(appendJSONString(nil, c.Name), ':'))
	}
	for _, name := range key {
		j := keyColumn(target.Columns, name)
		if j < 0 {
			return nil, types.Errorf(types.ErrInvalidParameter, "key column %q is not a column of the sink", name)
		}
		e.key = append(e.key, j)
	}
	e.source = append(e.source, `,"source":{"db":"dev","table":`...)
	e.source = appendJSONString(e.source, target.Sink)
	e.source = append(e.source, "}}"...)
	return e, nil
}

// appendRow appends row's visible columns as a JSON object.
func (e *encoder) appendRow(b []byte, row []types.Datum) []byte {
	b = append(b, '{')
	first := true
	for j := range e.cols {
		if e.cols[j].Hidden {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, e.names[j]...)
		b = e.appendValue(b, e.cols[j].Type, &row[j])
	}
	return append(b, '}')
}

// appendKey appends row's key columns as a JSON object.
func (e *encoder) appendKey(b []byte, row []types.Datum) []byte {
	b = append(b, '{')
	for i, j := range e.key {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.names[j]...)
		b = e.appendValue(b, e.cols[j].Type, &row[j])
	}
	return append(b, '}')
}

// appendDebezium appends a Debezium change event; before and after are
// encoded rows, nil for null.
func (e *encoder) appendDebezium(b []byte, op byte, before, after []byte, tsMillis int64) []byte {
	b = append(b, `{"before":`...)
	b = appendRaw(b, before)
	b = append(b, `,"after":`...)
	b = appendRaw(b, after)
	b = append(b, `,"op":"`...)
	b = append(b, op, '"')
	b = append(b, `,"ts_ms":`...)
	b = strconv.AppendInt(b, tsMillis, 10)
	return append(b, e.source...)
}

func appendRaw(b, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return append(b, v...)
}

// appendValue appends d, of type t, as a JSON value (connector.AppendJSONValue).
func (e *encoder) appendValue(b []byte, t types.T, d *types.Datum) []byte {
	b, e.text = connector.AppendJSONValue(b, e.text, t, d)
	return b
}

// appendJSONString appends s as a JSON string.
func appendJSONString[S ~string | ~[]byte](b []byte, s S) []byte {
	return connector.AppendJSONString(b, s)
}
