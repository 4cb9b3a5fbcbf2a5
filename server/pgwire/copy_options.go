package pgwire

import (
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// CopyFormat is COPY's data format.
type CopyFormat uint8

// COPY formats.
const (
	CopyText CopyFormat = iota
	CopyCSV
	CopyBinary
)

func (f CopyFormat) String() string {
	switch f {
	case CopyCSV:
		return "csv"
	case CopyBinary:
		return "binary"
	}
	return "text"
}

// CopyOption is one option of a COPY statement as written (lower-case key):
// a value, a column list or "*".
type CopyOption struct {
	Key     string
	Value   string
	Columns []string
	All     bool
}

// CopyOptions are a COPY statement's validated options.
type CopyOptions struct {
	Format    CopyFormat
	Delimiter byte
	Null      string
	Header    bool
	// HeaderMatch (COPY FROM only) checks the header's names against the columns.
	HeaderMatch bool
	Quote       byte
	Escape      byte
	// ForceQuote, ForceNotNull and ForceNull are per column (nil: none).
	ForceQuote   []bool
	ForceNotNull []bool
	ForceNull    []bool
}

// NewCopyOptions checks opts as PostgreSQL does for a COPY of the named
// columns (from: COPY FROM, else COPY TO) and fills in the format's defaults.
func NewCopyOptions(opts []CopyOption, cols []string, from bool) (CopyOptions, error) {
	var o CopyOptions
	seen := map[string]bool{}
	var delim, null, quote, escape *string
	var forceQuote, forceNotNull, forceNull *CopyOption
	for i := range opts {
		op := &opts[i]
		if seen[op.Key] {
			return o, types.Errorf(types.ErrSyntax, "conflicting or redundant options")
		}
		seen[op.Key] = true
		switch op.Key {
		case "format":
			switch strings.ToLower(op.Value) {
			case "text":
				o.Format = CopyText
			case "csv":
				o.Format = CopyCSV
			case "binary":
				o.Format = CopyBinary
			default:
				return o, types.Errorf(types.ErrInvalidParameter, "COPY format \"%s\" not recognized", op.Value)
			}
		case "delimiter":
			delim = &op.Value
		case "null":
			null = &op.Value
		case "quote":
			quote = &op.Value
		case "escape":
			escape = &op.Value
		case "header":
			switch strings.ToLower(op.Value) {
			case "", "true", "on", "1":
				o.Header = true
			case "false", "off", "0":
			case "match":
				if !from {
					return o, types.Errorf(types.ErrSyntax, "cannot use \"%s\" with HEADER in COPY TO", op.Value)
				}
				o.Header, o.HeaderMatch = true, true
			default:
				return o, types.Errorf(types.ErrSyntax, "%s requires a Boolean value or \"match\"", "header")
			}
		case "force_quote":
			forceQuote = op
		case "force_not_null":
			forceNotNull = op
		case "force_null":
			forceNull = op
		case "freeze":
			switch strings.ToLower(op.Value) {
			case "", "true", "on", "1", "false", "off", "0":
			default:
				return o, types.Errorf(types.ErrSyntax, "freeze requires a Boolean value")
			}
		case "encoding":
			if e := strings.ToLower(strings.ReplaceAll(op.Value, "-", "")); e != "utf8" && e != "unicode" {
				return o, types.Errorf(types.ErrUnsupported, "COPY encoding %q is not supported: only UTF8", op.Value)
			}
		default:
			return o, types.Errorf(types.ErrSyntax, "option \"%s\" not recognized", op.Key)
		}
	}
	binary, csv := o.Format == CopyBinary, o.Format == CopyCSV
	switch {
	case binary && delim != nil:
		return o, types.Errorf(types.ErrSyntax, "cannot specify DELIMITER in BINARY mode")
	case binary && null != nil:
		return o, types.Errorf(types.ErrSyntax, "cannot specify NULL in BINARY mode")
	case binary && o.Header:
		return o, types.Errorf(types.ErrUnsupported, "cannot specify HEADER in BINARY mode")
	case !csv && quote != nil:
		return o, types.Errorf(types.ErrUnsupported, "COPY quote available only in CSV mode")
	case !csv && escape != nil:
		return o, types.Errorf(types.ErrUnsupported, "COPY escape available only in CSV mode")
	case !csv && forceQuote != nil:
		return o, types.Errorf(types.ErrUnsupported, "COPY force quote available only in CSV mode")
	case forceQuote != nil && from:
		return o, types.Errorf(types.ErrUnsupported, "COPY force quote only available using COPY TO")
	case !csv && forceNotNull != nil:
		return o, types.Errorf(types.ErrUnsupported, "COPY force not null available only in CSV mode")
	case forceNotNull != nil && !from:
		return o, types.Errorf(types.ErrUnsupported, "COPY force not null only available using COPY FROM")
	case !csv && forceNull != nil:
		return o, types.Errorf(types.ErrUnsupported, "COPY force null available only in CSV mode")
	case forceNull != nil && !from:
		return o, types.Errorf(types.ErrUnsupported, "COPY force null only available using COPY FROM")
	}
	o.Delimiter, o.Null = '\t', `\N`
	if csv {
		o.Delimiter, o.Null, o.Quote = ',', "", '"'
	}
	if delim != nil {
		if len(*delim) != 1 {
			return o, types.Errorf(types.ErrUnsupported, "COPY delimiter must be a single one-byte character")
		}
		o.Delimiter = (*delim)[0]
	}
	if o.Delimiter == '\n' || o.Delimiter == '\r' {
		return o, types.Errorf(types.ErrInvalidParameter, "COPY delimiter cannot be newline or carriage return")
	}
	if null != nil {
		o.Null = *null
	}
	if strings.ContainsAny(o.Null, "\r\n") {
		return o, types.Errorf(types.ErrInvalidParameter, "COPY null representation cannot use newline or carriage return")
	}
	if o.Format == CopyText && strings.IndexByte("\\.abcdefghijklmnopqrstuvwxyz0123456789", o.Delimiter) >= 0 {
		return o, types.Errorf(types.ErrInvalidParameter, "COPY delimiter cannot be \"%s\"", string(o.Delimiter))
	}
	if csv {
		if quote != nil {
			if len(*quote) != 1 {
				return o, types.Errorf(types.ErrUnsupported, "COPY quote must be a single one-byte character")
			}
			o.Quote = (*quote)[0]
		}
		o.Escape = o.Quote
		if escape != nil {
			if len(*escape) != 1 {
				return o, types.Errorf(types.ErrUnsupported, "COPY escape must be a single one-byte character")
			}
			o.Escape = (*escape)[0]
		}
		if o.Delimiter == o.Quote {
			return o, types.Errorf(types.ErrInvalidParameter, "COPY delimiter and quote must be different")
		}
		if strings.IndexByte(o.Null, o.Delimiter) >= 0 {
			return o, types.Errorf(types.ErrInvalidParameter, "COPY delimiter character must not appear in the NULL specification")
		}
		if strings.IndexByte(o.Null, o.Quote) >= 0 {
			return o, types.Errorf(types.ErrInvalidParameter, "CSV quote character must not appear in the NULL specification")
		}
	} else if o.Format == CopyText && strings.IndexByte(o.Null, o.Delimiter) >= 0 {
		return o, types.Errorf(types.ErrInvalidParameter, "COPY delimiter must not appear in the NULL specification")
	}
	var err error
	if o.ForceQuote, err = copyColumnFlags(forceQuote, cols, "FORCE_QUOTE"); err != nil {
		return o, err
	}
	if o.ForceNotNull, err = copyColumnFlags(forceNotNull, cols, "FORCE_NOT_NULL"); err != nil {
		return o, err
	}
	if o.ForceNull, err = copyColumnFlags(forceNull, cols, "FORCE_NULL"); err != nil {
		return o, err
	}
	return o, nil
}

// copyColumnFlags marks the columns a FORCE_* option names (all for "*").
func copyColumnFlags(op *CopyOption, cols []string, name string) ([]bool, error) {
	if op == nil {
		return nil, nil
	}
	flags := make([]bool, len(cols))
	if op.All {
		for i := range flags {
			flags[i] = true
		}
		return flags, nil
	}
	if len(op.Columns) == 0 {
		return nil, types.Errorf(types.ErrSyntax, "argument to option \"%s\" must be a list of column names", strings.ToLower(name))
	}
	for _, c := range op.Columns {
		found := false
		for i, n := range cols {
			if n == c {
				flags[i], found = true, true
				break
			}
		}
		if !found {
			return nil, types.Errorf(types.ErrInvalidColumnRef, "%s column \"%s\" not referenced by COPY", name, c)
		}
	}
	return flags, nil
}
