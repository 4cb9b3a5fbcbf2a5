package pgwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/tributary/tributary/sql/types"
)

// codeBadCopyFormat is bad_copy_file_format: malformed COPY data.
const codeBadCopyFormat = "22P04"

// copySignature starts every binary COPY stream.
var copySignature = []byte("PGCOPY\n\xff\r\n\x00")

// maxCopyDisplay is how much of a line or value an error context quotes.
const maxCopyDisplay = 100

// CopySource yields the rows of a COPY FROM, decoded to the columns' types.
type CopySource interface {
	// Next returns the next rows, io.EOF at the end; the chunk stays valid
	// until the next call. Errors carry the COPY context (line, column).
	Next(ctx context.Context) (*types.Chunk, error)
	// Rewind starts over from the first row (for a statement run again
	// after an engine recovery).
	Rewind() error
	// RowError adds row i (of the chunk Next returned last) as the context
	// of err, an error writing that row.
	RowError(i int, err error) error
}

// copyError is an error with PostgreSQL's COPY context (ErrorResponse's
// Where field), e.g. `COPY t, line 3, column b: "x"`.
type copyError struct {
	where string
	err   error
}

func (e *copyError) Error() string { return e.err.Error() }
func (e *copyError) Unwrap() error { return e.err }

// copyDecoder reads COPY FROM data (text, csv or binary) from r in chunks of
// at most types.DefaultChunkSize rows.
type copyDecoder struct {
	open  func() (io.Reader, error) // for Rewind
	r     *bufio.Reader
	opts  CopyOptions
	table string
	cols  []Column

	line    int64 // lines (text, csv) or tuples (binary) read so far
	started bool
	done    bool
	chunk   *types.Chunk
	row     []types.Datum
	lines   []int64  // line of each row of chunk
	texts   []string // text of each row's line (text, csv)
	fields  [][]byte // current line's raw fields
	quoted  []bool   // csv: whether each field was quoted
	buf     []byte
	val     []byte
}

func newCopyDecoder(r io.Reader, table string, cols []Column, opts CopyOptions) *copyDecoder {
	return newCopyDecoderOpen(func() (io.Reader, error) { return nil, errors.New("COPY data cannot be read again") }, r, table, cols, opts)
}

// newCopyDecoderOpen is newCopyDecoder whose Rewind reads open's reader.
func newCopyDecoderOpen(open func() (io.Reader, error), r io.Reader, table string, cols []Column, opts CopyOptions) *copyDecoder {
	ts := make([]types.T, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	return &copyDecoder{
		open: open,
		r:    bufio.NewReaderSize(r, 64<<10), opts: opts, table: table, cols: cols,
		chunk: types.NewChunk(ts, types.DefaultChunkSize), row: make([]types.Datum, len(cols)),
	}
}

// Next implements CopySource.
func (d *copyDecoder) Next(ctx context.Context) (*types.Chunk, error) {
	d.chunk.Reset()
	d.lines, d.texts = d.lines[:0], d.texts[:0]
	if !d.started {
		d.started = true
		if err := d.start(); err != nil {
			return nil, err
		}
	}
	for !d.done && d.chunk.Len() < types.DefaultChunkSize {
		var ok bool
		var err error
		if d.opts.Format == CopyBinary {
			ok, err = d.binaryRow()
		} else {
			ok, err = d.textRow()
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			d.done = true
			break
		}
		d.chunk.AppendRow(d.row)
		d.lines = append(d.lines, d.line)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if d.chunk.Len() == 0 {
		return nil, io.EOF
	}
	return d.chunk, nil
}

// Rewind implements CopySource.
func (d *copyDecoder) Rewind() error {
	r, err := d.open()
	if err != nil {
		return err
	}
	d.r.Reset(r)
	d.line, d.started, d.done = 0, false, false
	return nil
}

// RowError implements CopySource.
func (d *copyDecoder) RowError(i int, err error) error {
	if i < 0 || i >= len(d.lines) {
		return err
	}
	where := fmt.Sprintf("COPY %s, line %d", d.table, d.lines[i])
	if errors.Is(err, types.ErrNotNullViolation) && i < len(d.texts) {
		where += fmt.Sprintf(": \"%s\"", displayCopy(d.texts[i]))
	}
	return &copyError{where: where, err: err}
}

// start reads the binary header or the header line.
func (d *copyDecoder) start() error {
	if d.opts.Format == CopyBinary {
		hdr := make([]byte, len(copySignature)+8)
		if _, err := io.ReadFull(d.r, hdr); err != nil || !bytes.Equal(hdr[:len(copySignature)], copySignature) {
			return d.lineErr(wireErrorf(codeBadCopyFormat, "COPY file signature not recognized"), "")
		}
		flags := binary.BigEndian.Uint32(hdr[len(copySignature):])
		if flags&(1<<16) != 0 {
			return d.lineErr(wireErrorf(codeBadCopyFormat, "invalid COPY file header (WITH OIDS)"), "")
		}
		if flags&^(0xffff) != 0 {
			return d.lineErr(wireErrorf(codeBadCopyFormat, "unrecognized critical flags in COPY file header"), "")
		}
		ext := binary.BigEndian.Uint32(hdr[len(copySignature)+4:])
		if ext > 1<<30 {
			return d.lineErr(wireErrorf(codeBadCopyFormat, "invalid COPY file header (wrong length)"), "")
		}
		if _, err := d.r.Discard(int(ext)); err != nil {
			return d.lineErr(wireErrorf(codeBadCopyFormat, "invalid COPY file header (wrong length)"), "")
		}
		return nil
	}
	if !d.opts.Header {
		return nil
	}
	text, ok, err := d.readRecord()
	if err != nil || !ok {
		d.done = !ok
		return err
	}
	if !d.opts.HeaderMatch {
		return nil
	}
	if len(d.fields) != len(d.cols) {
		return d.lineErr(wireErrorf(codeBadCopyFormat, "wrong number of fields in header line: got %d, expected %d", len(d.fields), len(d.cols)), text)
	}
	for i, f := range d.fields {
		name := string(f)
		if d.opts.Format == CopyText {
			name = string(unescapeText(nil, f))
		}
		if name != d.cols[i].Name {
			return d.lineErr(wireErrorf(codeBadCopyFormat, "column name mismatch in header line field %d: got \"%s\", expected \"%s\"", i+1, name, d.cols[i].Name), text)
		}
	}
	return nil
}

func (d *copyDecoder) lineErr(err error, text string) error {
	line := max(d.line, 1)
	if text == "" {
		return &copyError{where: fmt.Sprintf("COPY %s, line %d", d.table, line), err: err}
	}
	return &copyError{where: fmt.Sprintf("COPY %s, line %d: \"%s\"", d.table, line, displayCopy(text)), err: err}
}

func (d *copyDecoder) fieldErr(err error, col int, val []byte, binaryField bool) error {
	where := fmt.Sprintf("COPY %s, line %d, column %s", d.table, d.line, d.cols[col].Name)
	if !binaryField {
		where += fmt.Sprintf(": \"%s\"", displayCopy(string(val)))
	}
	return &copyError{where: where, err: err}
}

// displayCopy shortens s for an error context as PostgreSQL does.
func displayCopy(s string) string {
	if len(s) <= maxCopyDisplay {
		return s
	}
	n := maxCopyDisplay
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// readLine returns the next physical line without its terminator (\n or
// \r\n); ok is false at the end of the data.
func (d *copyDecoder) readLine() (line []byte, ok bool, err error) {
	d.buf = d.buf[:0]
	for {
		part, err := d.r.ReadSlice('\n')
		d.buf = append(d.buf, part...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if len(d.buf) == 0 {
				return nil, false, nil
			}
			return d.buf, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		l := d.buf[:len(d.buf)-1]
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
		return l, true, nil
	}
}

// readRecord reads one line (text) or record (csv, which may span lines)
// into d.fields; ok is false at the end of the data (or at `\.`).
func (d *copyDecoder) readRecord() (text string, ok bool, err error) {
	line, ok, err := d.readLine()
	if err != nil || !ok {
		return "", false, err
	}
	d.line++
	if string(line) == `\.` {
		return "", false, nil
	}
	if d.opts.Format == CopyCSV {
		return d.splitCSV(line)
	}
	d.splitText(line)
	return string(line), true, nil
}

// splitText splits a text-format line at unescaped delimiters; fields keep
// their backslash escapes.
func (d *copyDecoder) splitText(line []byte) {
	d.fields = d.fields[:0]
	start := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case d.opts.Delimiter:
			d.fields = append(d.fields, line[start:i])
			start = i + 1
		}
	}
	d.fields = append(d.fields, line[start:])
}

// splitCSV splits a CSV record starting with line, reading more lines while
// a quoted field is open. Fields are unquoted into one buffer.
func (d *copyDecoder) splitCSV(line []byte) (string, bool, error) {
	o := &d.opts
	rec := append([]byte(nil), line...)
	d.fields, d.quoted = d.fields[:0], d.quoted[:0]
	d.val = d.val[:0]
	var bounds []int // start, end of each field in d.val
	i := 0
	for {
		fieldStart := len(d.val)
		quoted := false
		inQuote := false
	field:
		for {
			if i >= len(rec) {
				if !inQuote {
					break field
				}
				// A newline inside quotes belongs to the value: read on.
				next, ok, err := d.readLine()
				if err != nil {
					return "", false, err
				}
				if !ok {
					return "", false, d.lineErr(wireErrorf(codeBadCopyFormat, "unterminated CSV quoted field"), string(rec))
				}
				d.line++
				rec = append(append(rec, '\n'), next...)
				continue
			}
			c := rec[i]
			switch {
			case inQuote && c == o.Escape && i+1 < len(rec) && (rec[i+1] == o.Quote || rec[i+1] == o.Escape) && (o.Escape != o.Quote || rec[i+1] == o.Quote):
				d.val = append(d.val, rec[i+1])
				i += 2
			case inQuote && c == o.Quote:
				inQuote = false
				i++
			case inQuote:
				d.val = append(d.val, c)
				i++
			case c == o.Quote:
				inQuote, quoted = true, true
				i++
			case c == o.Delimiter:
				break field
			default:
				d.val = append(d.val, c)
				i++
			}
		}
		bounds = append(bounds, fieldStart, len(d.val))
		d.quoted = append(d.quoted, quoted)
		if i >= len(rec) {
			break
		}
		i++ // the delimiter
	}
	for k := 0; k < len(bounds); k += 2 {
		d.fields = append(d.fields, d.val[bounds[k]:bounds[k+1]])
	}
	return string(rec), true, nil
}

// textRow reads and decodes one text or csv row into d.row.
func (d *copyDecoder) textRow() (bool, error) {
	text, ok, err := d.readRecord()
	if err != nil || !ok {
		return false, err
	}
	d.texts = append(d.texts, text)
	if len(d.fields) > len(d.cols) {
		return false, d.lineErr(wireErrorf(codeBadCopyFormat, "extra data after last expected column"), text)
	}
	if len(d.fields) < len(d.cols) {
		if len(d.cols) == 0 {
			return false, d.lineErr(wireErrorf(codeBadCopyFormat, "extra data after last expected column"), text)
		}
		return false, d.lineErr(wireErrorf(codeBadCopyFormat, "missing data for column \"%s\"", d.cols[len(d.fields)].Name), text)
	}
	if len(d.cols) == 0 && len(text) > 0 {
		return false, d.lineErr(wireErrorf(codeBadCopyFormat, "extra data after last expected column"), text)
	}
	o := &d.opts
	for j, raw := range d.fields {
		isNull := string(raw) == o.Null
		var val []byte
		if o.Format == CopyCSV {
			q := d.quoted[j]
			switch {
			case o.ForceNotNull != nil && o.ForceNotNull[j]:
				isNull = false
			case q && o.ForceNull != nil && o.ForceNull[j]:
			case q:
				isNull = false
			}
			val = raw
		} else if !isNull {
			d.val = unescapeText(d.val[:0], raw)
			val = d.val
		}
		if isNull {
			d.row[j] = types.NullDatum
			continue
		}
		if err := checkCopyText(val); err != nil {
			return false, d.fieldErr(err, j, val, false)
		}
		v, err := types.ParseText(d.cols[j].Type, string(val))
		if err != nil {
			return false, d.fieldErr(err, j, val, false)
		}
		d.row[j] = v
	}
	return true, nil
}

// checkCopyText refuses invalid UTF-8 and NUL bytes as PostgreSQL does.
func checkCopyText(b []byte) error {
	if utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		return nil
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if b[i] == 0 || (r == utf8.RuneError && n <= 1) {
			return wireErrorf(codeCharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x%02x", b[i])
		}
		i += n
	}
	return nil
}

// unescapeText appends the text format's de-escaped form of raw to dst:
// \b \f \n \r \t \v, \ooo octal, \xhh hex, and \c = c otherwise.
func unescapeText(dst, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			dst = append(dst, c)
			continue
		}
		i++
		c = raw[i]
		switch c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'v':
			dst = append(dst, '\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for k := 0; k < 2 && i+1 < len(raw) && raw[i+1] >= '0' && raw[i+1] <= '7'; k++ {
				i++
				v = v*8 + int(raw[i]-'0')
			}
			dst = append(dst, byte(v))
		case 'x':
			if i+1 < len(raw) && isHex(raw[i+1]) {
				i++
				v := hexVal(raw[i])
				if i+1 < len(raw) && isHex(raw[i+1]) {
					i++
					v = v*16 + hexVal(raw[i])
				}
				dst = append(dst, byte(v))
			} else {
				dst = append(dst, 'x')
			}
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}

// binaryRow reads one binary tuple into d.row; false at the trailer.
func (d *copyDecoder) binaryRow() (bool, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(d.r, hdr[:2]); err != nil {
		if err == io.EOF { // no trailer: PostgreSQL accepts the end of data
			return false, nil
		}
		return false, d.lineErr(wireErrorf(codeBadCopyFormat, "unexpected EOF in COPY data"), "")
	}
	n := int16(binary.BigEndian.Uint16(hdr[:2]))
	if n == -1 {
		return false, nil
	}
	d.line++
	if int(n) != len(d.cols) {
		return false, d.lineErr(wireErrorf(codeBadCopyFormat, "row field count is %d, expected %d", n, len(d.cols)), "")
	}
	for j := range d.cols {
		if _, err := io.ReadFull(d.r, hdr[:]); err != nil {
			return false, d.lineErr(wireErrorf(codeBadCopyFormat, "unexpected EOF in COPY data"), "")
		}
		size := int32(binary.BigEndian.Uint32(hdr[:]))
		if size == -1 {
			d.row[j] = types.NullDatum
			continue
		}
		if size < 0 {
			return false, d.fieldErr(wireErrorf(codeBadCopyFormat, "invalid field size"), j, nil, true)
		}
		if cap(d.val) < int(size) {
			d.val = make([]byte, size)
		}
		d.val = d.val[:size]
		if _, err := io.ReadFull(d.r, d.val); err != nil {
			return false, d.lineErr(wireErrorf(codeBadCopyFormat, "unexpected EOF in COPY data"), "")
		}
		v, err := decodeBinary(d.cols[j].Type, d.val, j)
		if err != nil {
			if SQLState(err) == codeInvalidBinaryFormat {
				err = wireErrorf(codeInvalidBinaryFormat, "incorrect binary data format")
			}
			return false, d.fieldErr(err, j, nil, true)
		}
		d.row[j] = v // decodeBinary copies what it keeps of d.val
	}
	return true, nil
}

// copyEncoder appends COPY TO rows in text, csv or binary format.
type copyEncoder struct {
	opts CopyOptions
	enc  rowEncoder
	d    types.Datum
	tmp  []byte
}

// appendHeader appends what precedes the rows: the binary signature, or the
// header line of column names.
func (e *copyEncoder) appendHeader(buf []byte, cols []Column) []byte {
	switch {
	case e.opts.Format == CopyBinary:
		buf = append(buf, copySignature...)
		return append(buf, 0, 0, 0, 0, 0, 0, 0, 0)
	case !e.opts.Header:
		return buf
	}
	for j, c := range cols {
		if j > 0 {
			buf = append(buf, e.opts.Delimiter)
		}
		if e.opts.Format == CopyCSV {
			buf = e.appendCSV(buf, []byte(c.Name), false, len(cols) == 1)
		} else {
			buf = e.appendTextField(buf, []byte(c.Name))
		}
	}
	return append(buf, '\n')
}

// appendTrailer appends what follows the rows (binary's -1 field count).
func (e *copyEncoder) appendTrailer(buf []byte) []byte {
	if e.opts.Format == CopyBinary {
		return append(buf, 0xff, 0xff)
	}
	return buf
}

// appendRow appends row i of ch.
func (e *copyEncoder) appendRow(buf []byte, ch *types.Chunk, i int, cols []Column) ([]byte, error) {
	if e.opts.Format == CopyBinary {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(cols)))
		for j := range cols {
			v := &ch.Cols[j]
			if v.Nulls[i] {
				buf = append(buf, 0xff, 0xff, 0xff, 0xff)
				continue
			}
			at := len(buf)
			buf = append(buf, 0, 0, 0, 0)
			var err error
			if buf, err = e.enc.appendBinary(buf, cols[j].Type, v, i); err != nil {
				return buf[:at], err
			}
			binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
		}
		return buf, nil
	}
	for j := range cols {
		if j > 0 {
			buf = append(buf, e.opts.Delimiter)
		}
		v := &ch.Cols[j]
		if v.Nulls[i] {
			buf = append(buf, e.opts.Null...)
			continue
		}
		v.GetInto(i, &e.d)
		e.tmp = types.AppendText(e.tmp[:0], cols[j].Type, &e.d)
		if e.opts.Format == CopyCSV {
			force := e.opts.ForceQuote != nil && e.opts.ForceQuote[j]
			buf = e.appendCSV(buf, e.tmp, force, len(cols) == 1)
		} else {
			buf = e.appendTextField(buf, e.tmp)
		}
	}
	return append(buf, '\n'), nil
}

// appendTextField escapes s as the text format does: backslash, the
// delimiter and the control characters \b \f \n \r \t \v.
func (e *copyEncoder) appendTextField(buf, s []byte) []byte {
	for _, c := range s {
		switch c {
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		case '\v':
			buf = append(buf, '\\', 'v')
		case '\\':
			buf = append(buf, '\\', '\\')
		default:
			if c == e.opts.Delimiter {
				buf = append(buf, '\\')
			}
			buf = append(buf, c)
		}
	}
	return buf
}

// appendCSV appends s, quoted when forced, when it contains the delimiter,
// the quote, CR or LF, when it equals the NULL string, or when it is `\.`
// as the only column.
func (e *copyEncoder) appendCSV(buf, s []byte, force, single bool) []byte {
	o := &e.opts
	quote := force || string(s) == o.Null
	if !quote {
		if single && string(s) == `\.` {
			quote = true
		} else {
			for _, c := range s {
				if c == o.Delimiter || c == o.Quote || c == '\n' || c == '\r' {
					quote = true
					break
				}
			}
		}
	}
	if !quote {
		return append(buf, s...)
	}
	buf = append(buf, o.Quote)
	for _, c := range s {
		if c == o.Quote || c == o.Escape {
			buf = append(buf, o.Escape)
		}
		buf = append(buf, c)
	}
	return append(buf, o.Quote)
}

// copyTag is COPY's command tag.
func copyTag(n int64) string { return "COPY " + strconv.FormatInt(n, 10) }
