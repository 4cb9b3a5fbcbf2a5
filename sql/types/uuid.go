package types

// ParseUUID reads a uuid in any form PostgreSQL's input accepts: 32 hex
// digits (either case), optionally in braces, with a hyphen allowed after
// any group of four digits. It returns the 16 raw bytes.
func ParseUUID(s string) (string, error) {
	src := s
	braces := len(src) > 0 && src[0] == '{'
	if braces {
		src = src[1:]
	}
	var out [16]byte
	for i := range out {
		if len(src) < 2 {
			return "", invalidText(TUuid, s)
		}
		hi, ok1 := unhex(src[0])
		lo, ok2 := unhex(src[1])
		if !ok1 || !ok2 {
			return "", invalidText(TUuid, s)
		}
		out[i] = hi<<4 | lo
		src = src[2:]
		if len(src) > 0 && src[0] == '-' && i%2 == 1 && i < len(out)-1 {
			src = src[1:]
		}
	}
	if braces {
		if len(src) == 0 || src[0] != '}' {
			return "", invalidText(TUuid, s)
		}
		src = src[1:]
	}
	if src != "" {
		return "", invalidText(TUuid, s)
	}
	return string(out[:]), nil
}

// AppendUUID appends the canonical lower-case 8-4-4-4-12 form of the 16 raw
// bytes b.
func AppendUUID(buf []byte, b string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(b); i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf = append(buf, '-')
		}
		buf = append(buf, hex[b[i]>>4], hex[b[i]&15])
	}
	return buf
}
