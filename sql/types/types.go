package types

import (
	"fmt"
	"strconv"
	"strings"
)

// ID names a SQL type family.
type ID uint8

// The supported types. Unknown is the type of an untyped NULL or of a string
// literal whose type is not yet decided.
const (
	Unknown ID = iota
	Bool
	Int16
	Int32
	Int64
	Float32
	Float64
	Numeric
	Varchar // text and varchar(n)
	Bytea
	Date
	Time
	Timestamp
	Timestamptz
	Interval
	Jsonb
	Uuid   // 16 raw bytes in PhysStr, ordered bytewise as PostgreSQL does
	Array  // one-dimensional array of T.Elem, encoded in PhysStr (array.go)
	Struct // named fields T.StructFields(), encoded in PhysStr (struct.go)
	numIDs
)

// Physical says which Vector slice holds a type's values.
type Physical uint8

// Physical layouts.
const (
	PhysI64 Physical = iota // Bool (0/1), ints, Date (days since 1970-01-01), Time (µs since midnight), Timestamp(tz) (µs since 1970-01-01 UTC)
	PhysF64                 // Float32, Float64
	PhysStr                 // Varchar, Bytea (raw bytes), Jsonb (canonical text), Uuid (16 raw bytes), Array (EncodeArray), Struct (EncodeStruct)
	PhysDec                 // Numeric
	PhysIv                  // Interval
)

// T is a SQL type: a family and its modifiers.
type T struct {
	ID ID
	// Width is varchar's maximum length in characters, or numeric's precision; 0 = unconstrained.
	// An array type's Width and Scale are its element's.
	Width int32
	// Scale is numeric's scale (meaningful when Width > 0).
	Scale int32
	// Elem is an array type's element family (ID == Array); Unknown otherwise.
	Elem ID `json:",omitempty"`
	// Fields describes a struct type's fields (ID == Struct), or an array of
	// structs' element's (Elem == Struct): see StructFields.
	Fields string `json:",omitempty"`
}

// Convenience values for unmodified types.
var (
	TUnknown     = T{ID: Unknown}
	TBool        = T{ID: Bool}
	TInt16       = T{ID: Int16}
	TInt32       = T{ID: Int32}
	TInt64       = T{ID: Int64}
	TFloat32     = T{ID: Float32}
	TFloat64     = T{ID: Float64}
	TNumeric     = T{ID: Numeric}
	TVarchar     = T{ID: Varchar}
	TBytea       = T{ID: Bytea}
	TDate        = T{ID: Date}
	TTime        = T{ID: Time}
	TTimestamp   = T{ID: Timestamp}
	TTimestamptz = T{ID: Timestamptz}
	TInterval    = T{ID: Interval}
	TJsonb       = T{ID: Jsonb}
	TUuid        = T{ID: Uuid}
)

// Physical returns the vector layout of t.
func (t T) Physical() Physical {
	switch t.ID {
	case Float32, Float64:
		return PhysF64
	case Varchar, Bytea, Jsonb, Uuid, Array, Struct, Unknown:
		return PhysStr
	case Numeric:
		return PhysDec
	case Interval:
		return PhysIv
	default:
		return PhysI64
	}
}

// IsNumeric reports whether t is a number type.
func (t T) IsNumeric() bool {
	switch t.ID {
	case Int16, Int32, Int64, Float32, Float64, Numeric:
		return true
	}
	return false
}

// IsInteger reports whether t is an integer type.
func (t T) IsInteger() bool { return t.ID == Int16 || t.ID == Int32 || t.ID == Int64 }

// IsString reports whether t holds text.
func (t T) IsString() bool { return t.ID == Varchar }

// IsTemporal reports whether t is a date/time type.
func (t T) IsTemporal() bool {
	switch t.ID {
	case Date, Time, Timestamp, Timestamptz, Interval:
		return true
	}
	return false
}

// Base returns t without modifiers (an array keeps its element family).
func (t T) Base() T { return T{ID: t.ID, Elem: t.Elem, Fields: t.Fields} }

// Equal reports whether two types are the same, modifiers included.
func (t T) Equal(o T) bool { return t == o }

// PostgreSQL type OIDs.
const (
	OIDBool        = 16
	OIDBytea       = 17
	OIDName        = 19
	OIDInt8        = 20
	OIDInt2        = 21
	OIDInt4        = 23
	OIDText        = 25
	OIDOid         = 26
	OIDJSON        = 114
	OIDFloat4      = 700
	OIDFloat8      = 701
	OIDUnknown     = 705
	OIDBpchar      = 1042
	OIDVarchar     = 1043
	OIDDate        = 1082
	OIDTime        = 1083
	OIDTimestamp   = 1114
	OIDTimestamptz = 1184
	OIDInterval    = 1186
	OIDNumeric     = 1700
	OIDJsonb       = 3802
	OIDRegclass    = 2205
	OIDUuid        = 2950
)

// OID returns the PostgreSQL type oid clients see for t.
func (t T) OID() uint32 {
	switch t.ID {
	case Bool:
		return OIDBool
	case Int16:
		return OIDInt2
	case Int32:
		return OIDInt4
	case Int64:
		return OIDInt8
	case Float32:
		return OIDFloat4
	case Float64:
		return OIDFloat8
	case Numeric:
		return OIDNumeric
	case Varchar:
		return OIDVarchar
	case Bytea:
		return OIDBytea
	case Date:
		return OIDDate
	case Time:
		return OIDTime
	case Timestamp:
		return OIDTimestamp
	case Timestamptz:
		return OIDTimestamptz
	case Interval:
		return OIDInterval
	case Jsonb:
		return OIDJsonb
	case Uuid:
		return OIDUuid
	case Array:
		if t.Elem == Struct {
			return OIDRecordArray
		}
		return ArrayOID(t.ElemType().OID())
	case Struct:
		return OIDRecord
	default:
		return OIDText
	}
}

// Typmod returns PostgreSQL's atttypmod for t (-1 when unconstrained).
func (t T) Typmod() int32 {
	if t.ID == Array {
		return t.ElemType().Typmod()
	}
	switch {
	case t.ID == Varchar && t.Width > 0:
		return t.Width + 4
	case t.ID == Numeric && t.Width > 0:
		return ((t.Width << 16) | t.Scale) + 4
	}
	return -1
}

// Size returns pg_type.typlen for t (-1 for variable length).
func (t T) Size() int16 {
	switch t.ID {
	case Bool:
		return 1
	case Int16:
		return 2
	case Int32, Float32, Date:
		return 4
	case Int64, Float64, Time, Timestamp, Timestamptz:
		return 8
	case Interval, Uuid:
		return 16
	}
	return -1
}

// FromOID maps a PostgreSQL type oid to a type; ok is false for unknown oids.
func FromOID(oid uint32) (T, bool) {
	switch oid {
	case OIDBool:
		return TBool, true
	case OIDInt2:
		return TInt16, true
	case OIDInt4, OIDOid, OIDRegclass:
		return TInt32, true
	case OIDInt8:
		return TInt64, true
	case OIDFloat4:
		return TFloat32, true
	case OIDFloat8:
		return TFloat64, true
	case OIDNumeric:
		return TNumeric, true
	case OIDText, OIDVarchar, OIDBpchar, OIDName:
		return TVarchar, true
	case OIDBytea:
		return TBytea, true
	case OIDDate:
		return TDate, true
	case OIDTime:
		return TTime, true
	case OIDTimestamp:
		return TTimestamp, true
	case OIDTimestamptz:
		return TTimestamptz, true
	case OIDInterval:
		return TInterval, true
	case OIDJsonb, OIDJSON:
		return TJsonb, true
	case OIDUuid:
		return TUuid, true
	case 0, OIDUnknown:
		return TUnknown, true
	}
	if e := ElemOID(oid); e != 0 {
		if et, ok := FromOID(e); ok {
			return ArrayOf(et), true
		}
	}
	return TUnknown, false
}

// String returns PostgreSQL's format_type spelling, e.g. "character varying(20)".
func (t T) String() string {
	switch t.ID {
	case Array:
		return t.ElemType().String() + "[]"
	case Struct:
		return structString(t, T.String)
	case Varchar:
		if t.Width > 0 {
			return fmt.Sprintf("character varying(%d)", t.Width)
		}
		return "character varying"
	case Numeric:
		if t.Width > 0 {
			return fmt.Sprintf("numeric(%d,%d)", t.Width, t.Scale)
		}
		return "numeric"
	}
	return t.ID.String()
}

// SQLName returns the short name RisingWave/psql users type, e.g. "varchar", "integer".
func (t T) SQLName() string {
	switch t.ID {
	case Array:
		return t.ElemType().SQLName() + "[]"
	case Struct:
		return structString(t, T.SQLName)
	case Varchar:
		return "varchar"
	case Timestamp:
		return "timestamp"
	case Timestamptz:
		return "timestamptz"
	case Time:
		return "time"
	}
	return t.ID.String()
}

var idNames = [numIDs]string{
	Unknown: "unknown", Bool: "boolean", Int16: "smallint", Int32: "integer", Int64: "bigint",
	Float32: "real", Float64: "double precision", Numeric: "numeric", Varchar: "character varying",
	Bytea: "bytea", Date: "date", Time: "time without time zone", Timestamp: "timestamp without time zone",
	Timestamptz: "timestamp with time zone", Interval: "interval", Jsonb: "jsonb",
	Uuid: "uuid", Array: "array", Struct: "struct",
}

func (id ID) String() string {
	if int(id) < len(idNames) {
		return idNames[id]
	}
	return "id(" + strconv.Itoa(int(id)) + ")"
}

// FromName resolves a type name (as PostgreSQL users spell it, any case, with
// optional modifiers given separately) to a type.
func FromName(name string, args []int) (T, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if strings.HasPrefix(n, "struct") && strings.HasPrefix(strings.TrimSpace(n[6:]), "<") && len(args) == 0 {
		return parseStructType(name)
	}
	if base, ok := strings.CutSuffix(n, "[]"); ok {
		if strings.HasSuffix(base, "[]") {
			return TUnknown, Errorf(ErrUnsupported, "multidimensional arrays are not supported")
		}
		elem, err := FromName(base, args)
		if err != nil {
			return TUnknown, err
		}
		if elem.ID == Unknown || elem.ID == Array {
			return TUnknown, Errorf(ErrUndefinedObject, "type %q does not exist", name)
		}
		return ArrayOf(elem), nil
	}
	if base, ok := strings.CutPrefix(n, "_"); ok && base != "" {
		// PostgreSQL's internal array type names (_int4, _text), as pg_type lists them.
		if elem, err := FromName(base, nil); err == nil && elem.ID != Array && len(args) == 0 {
			return ArrayOf(elem), nil
		}
	}
	n = strings.TrimPrefix(n, "pg_catalog.")
	var t T
	switch n {
	case "bool", "boolean":
		t = TBool
	case "smallint", "int2":
		t = TInt16
	case "int", "integer", "int4", "oid", "regclass", "regtype", "regproc", "regnamespace":
		t = TInt32
	case "bigint", "int8":
		t = TInt64
	case "real", "float4":
		t = TFloat32
	case "double precision", "float8", "float", "double":
		t = TFloat64
	case "numeric", "decimal":
		t = TNumeric
		if len(args) > 0 {
			if args[0] < 1 || args[0] > 1000 {
				return t, Errorf(ErrInvalidParameter, "NUMERIC precision %d must be between 1 and 1000", args[0])
			}
			t.Width = int32(args[0])
			if len(args) > 1 {
				if args[1] < 0 || args[1] > args[0] {
					return t, Errorf(ErrInvalidParameter, "NUMERIC scale %d must be between 0 and precision %d", args[1], args[0])
				}
				t.Scale = int32(args[1])
			}
			if len(args) > 2 {
				return t, Errorf(ErrSyntax, "invalid NUMERIC type modifier")
			}
		}
		return t, nil
	case "varchar", "character varying", "char", "character", "bpchar":
		t = TVarchar
		if len(args) > 0 {
			if args[0] < 1 {
				return t, Errorf(ErrInvalidParameter, "length for type varchar must be at least 1")
			}
			t.Width = int32(args[0])
		}
		return t, nil
	case "text", "name", "string":
		t = TVarchar
	case "bytea":
		t = TBytea
	case "date":
		t = TDate
	case "time", "time without time zone":
		t = TTime
	case "timestamp", "timestamp without time zone":
		t = TTimestamp
	case "timestamptz", "timestamp with time zone":
		t = TTimestamptz
	case "interval":
		t = TInterval
	case "jsonb", "json":
		t = TJsonb
	case "uuid":
		t = TUuid
	default:
		return TUnknown, Errorf(ErrUndefinedObject, "type %q does not exist", name)
	}
	if len(args) > 0 && t.ID != Time && t.ID != Timestamp && t.ID != Timestamptz && t.ID != Interval {
		return TUnknown, Errorf(ErrSyntax, "type modifier is not allowed for type %q", name)
	}
	return t, nil
}
