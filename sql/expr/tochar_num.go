package expr

import (
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

// to_char(number, format) with PostgreSQL's numeric template patterns: 9 and
// 0 (digit positions, 0 printing leading zeros), . and D (decimal point), ,
// and G (group separator), S, MI, PR (sign), FM (no padding, no trailing
// fraction zeros), EEEE (scientific notation) and "quoted" literal text.
// Other characters are copied. The locale is C: D is ".", G is ",".

func init() {
	for _, t := range []types.T{tI8, tN, tF8} {
		t := t
		def("to_char", tS, t, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			var d apd.Decimal
			switch t.ID {
			case types.Int64:
				d.SetInt64(a[0].I)
			case types.Float64:
				f := a[0].F
				if math.IsNaN(f) || math.IsInf(f, 0) {
					return types.DString(numFormatSpecial(a[1].S, f)), nil
				}
				// C's printf rounding of the binary value, as PostgreSQL does for floats.
				text := strconv.FormatFloat(f, 'g', 15, 64)
				if nf := parseNumFormat(a[1].S); !nf.eeee {
					text = strconv.FormatFloat(f, 'f', nf.post, 64)
				}
				if _, _, err := d.SetString(text); err != nil {
					return types.NullDatum, err
				}
			default:
				d.Set(&a[0].Dec)
				if d.Form != apd.Finite {
					return types.DString(numFormatSpecial(a[1].S, math.NaN())), nil
				}
			}
			return types.DString(numToChar(&d, a[1].S)), nil
		})
	}
}

// numTok is one element of a numeric format.
type numTok struct {
	kind byte // '9', '0', '.', ',', 'S', 'M' (MI), 'P' (PR), 'E' (EEEE), 'L' (literal)
	lit  string
}

type numFormat struct {
	toks      []numTok
	pre, post int
	zeroStart int // integer digit position of the first 0, -1 when none
	fm        bool
	sign      bool // an explicit sign (S, MI, PR)
	pr        bool
	eeee      bool
	lastZero  int // fraction position of the last 0, -1 when none
}

func parseNumFormat(f string) numFormat {
	nf := numFormat{zeroStart: -1, lastZero: -1}
	afterPoint := false
	for i := 0; i < len(f); {
		rest := strings.ToUpper(f[i:])
		switch {
		case strings.HasPrefix(rest, "FM"):
			nf.fm = true
			i += 2
		case strings.HasPrefix(rest, "EEEE"):
			nf.eeee = true
			nf.toks = append(nf.toks, numTok{kind: 'E'})
			i += 4
		case strings.HasPrefix(rest, "MI"):
			nf.sign = true
			nf.toks = append(nf.toks, numTok{kind: 'M'})
			i += 2
		case strings.HasPrefix(rest, "PR"):
			nf.sign, nf.pr = true, true
			i += 2
		case rest[0] == '9' || rest[0] == '0':
			if afterPoint {
				if rest[0] == '0' {
					nf.lastZero = nf.post
				}
				nf.post++
			} else {
				if rest[0] == '0' && nf.zeroStart < 0 {
					nf.zeroStart = nf.pre
				}
				nf.pre++
			}
			nf.toks = append(nf.toks, numTok{kind: rest[0]})
			i++
		case rest[0] == '.' || rest[0] == 'D':
			if !afterPoint {
				afterPoint = true
				nf.toks = append(nf.toks, numTok{kind: '.'})
			} else {
				nf.toks = append(nf.toks, numTok{kind: 'L', lit: f[i : i+1]})
			}
			i++
		case rest[0] == ',' || rest[0] == 'G':
			nf.toks = append(nf.toks, numTok{kind: ','})
			i++
		case rest[0] == 'S':
			nf.sign = true
			nf.toks = append(nf.toks, numTok{kind: 'S'})
			i++
		case rest[0] == '"':
			j := strings.IndexByte(f[i+1:], '"')
			if j < 0 {
				j = len(f) - i - 1
			}
			nf.toks = append(nf.toks, numTok{kind: 'L', lit: f[i+1 : i+1+j]})
			i += j + 2
		default:
			nf.toks = append(nf.toks, numTok{kind: 'L', lit: f[i : i+1]})
			i++
		}
	}
	return nf
}

// numFormatSpecial renders NaN or an infinity: # in every digit position.
func numFormatSpecial(f string, v float64) string {
	nf := parseNumFormat(f)
	var b strings.Builder
	if !nf.fm && !nf.sign {
		b.WriteByte(' ')
	}
	for _, t := range nf.toks {
		switch t.kind {
		case '9', '0':
			b.WriteByte('#')
		case '.':
			b.WriteByte('.')
		case 'L':
			b.WriteString(t.lit)
		case ',':
			b.WriteByte(',')
		}
	}
	return b.String()
}

func numToChar(d *apd.Decimal, f string) string {
	nf := parseNumFormat(f)
	neg := d.Negative && !d.IsZero()
	if nf.eeee {
		return numToCharEEEE(d, nf, neg)
	}
	var r apd.Decimal
	rc := apd.BaseContext.WithPrecision(1000)
	rc.Rounding = apd.RoundHalfUp
	_, _ = rc.Quantize(&r, d, -int32(nf.post))
	r.Negative = false
	s := r.Text('f')
	intd, fracd := s, ""
	if p := strings.IndexByte(s, '.'); p >= 0 {
		intd, fracd = s[:p], s[p+1:]
	}
	if r.IsZero() && neg {
		neg = false
	}
	if len(intd) > nf.pre {
		intd = strings.Repeat("#", nf.pre)
		fracd = strings.Repeat("#", nf.post)
	}
	if nf.pre == 0 && intd == "0" {
		intd = ""
	}
	// FM drops trailing fraction zeros not in a 0 position.
	keep := nf.post
	if nf.fm {
		keep = nf.lastZero + 1
		for i := len(fracd) - 1; i >= keep; i-- {
			if fracd[i] != '0' {
				keep = i + 1
				break
			}
		}
	}
	if intd == "0" && nf.zeroStart < 0 && nf.post > 0 && (!nf.fm || keep > 0) {
		intd = "" // PostgreSQL (after Oracle) drops the zero before the point
	}
	var b strings.Builder
	signWritten := false
	writeSign := func() {
		if signWritten {
			return
		}
		signWritten = true
		switch {
		case nf.pr:
			if neg {
				b.WriteByte('<')
			} else if !nf.fm {
				b.WriteByte(' ')
			}
		case nf.sign:
			// S is written at its own position, MI likewise.
		case neg:
			b.WriteByte('-')
		case !nf.fm:
			b.WriteByte(' ')
		}
	}
	leadingS := false
	for _, t := range nf.toks {
		if t.kind == 'S' {
			leadingS = true
			break
		}
		if t.kind == '9' || t.kind == '0' || t.kind == '.' {
			break
		}
	}
	sSign := func() {
		if neg {
			b.WriteByte('-')
		} else {
			b.WriteByte('+')
		}
	}
	pos, fpos := 0, 0
	printed := false
	for _, t := range nf.toks {
		switch t.kind {
		case '9', '0':
			if pos < nf.pre {
				d := pos - (nf.pre - len(intd))
				pos++
				if d < 0 {
					if nf.zeroStart >= 0 && pos-1 >= nf.zeroStart {
						writeSign()
						if leadingS && !printed {
							sSign()
						}
						b.WriteByte('0')
						printed = true
					} else if !nf.fm {
						b.WriteByte(' ')
					}
					continue
				}
				writeSign()
				if leadingS && !printed {
					sSign()
				}
				b.WriteByte(intd[d])
				printed = true
				continue
			}
			if fpos < keep {
				b.WriteByte(fracd[fpos])
			}
			fpos++
		case '.':
			writeSign()
			if leadingS && !printed {
				sSign()
				printed = true
			}
			b.WriteByte('.')
		case ',':
			if printed {
				b.WriteByte(',')
			} else if !nf.fm {
				b.WriteByte(' ')
			}
		case 'S':
			if !leadingS {
				sSign()
			}
		case 'M':
			if neg {
				b.WriteByte('-')
			} else if !nf.fm {
				b.WriteByte(' ')
			}
		case 'L':
			b.WriteString(t.lit)
		}
	}
	writeSign()
	if nf.pr {
		if neg {
			b.WriteByte('>')
		} else if !nf.fm {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func numToCharEEEE(d *apd.Decimal, nf numFormat, neg bool) string {
	f, _ := d.Float64()
	s := strconv.FormatFloat(math.Abs(f), 'e', nf.post, 64)
	var b strings.Builder
	switch {
	case neg:
		b.WriteByte('-')
	case !nf.fm:
		b.WriteByte(' ')
	}
	b.WriteString(s)
	return b.String()
}
