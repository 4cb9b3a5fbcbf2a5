package pgwire

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// HBA is a pg_hba.conf-style rule list (--hba-file): one rule a line,
//
//	local      DATABASE USER          METHOD [OPTIONS]
//	host       DATABASE USER ADDRESS  METHOD [OPTIONS]
//	hostssl    DATABASE USER ADDRESS  METHOD [OPTIONS]
//	hostnossl  DATABASE USER ADDRESS  METHOD [OPTIONS]
//
// DATABASE is all, sameuser or a comma list of names; USER is all or a
// comma list of names; ADDRESS is all, a CIDR block, or an address followed
// by a mask in the next field; METHOD is trust, reject, scram-sha-256, md5,
// password or cert; the one option is clientcert=verify-ca|verify-full.
// Double quotes keep a name from being a keyword; # starts a comment. The
// first rule whose connection type, database, user and address match
// decides; with none, the connection is refused (28000), as PostgreSQL does.
type HBA struct {
	rules []hbaRule
}

type hbaRule struct {
	line     int
	connType string // local, host, hostssl, hostnossl
	dbs      []hbaName
	users    []hbaName
	addr     *net.IPNet // nil: all
	method   AuthMethod
	cert     ClientCert
}

// hbaName is one name of a DATABASE or USER list; quoted names are never
// keywords.
type hbaName struct {
	name   string
	quoted bool
}

func (n hbaName) is(keyword string) bool { return !n.quoted && n.name == keyword }

// LoadHBA reads and parses a rule file.
func LoadHBA(path string) (*HBA, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read hba file: %w", err)
	}
	h, err := ParseHBA(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// ParseHBA parses rules (LoadHBA's format); errors name the line.
func ParseHBA(text string) (*HBA, error) {
	h := &HBA{}
	for i, line := range strings.Split(text, "\n") {
		fields, err := hbaFields(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if len(fields) == 0 {
			continue
		}
		r, err := parseHBARule(fields)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		r.line = i + 1
		h.rules = append(h.rules, r)
	}
	return h, nil
}

// hbaFields splits a line into whitespace-separated fields, each a comma
// list of names, honouring double quotes and # comments.
func hbaFields(line string) ([][]hbaName, error) {
	var fields [][]hbaName
	var field []hbaName
	var cur strings.Builder
	inQuote, quoted, inToken := false, false, false
	endName := func() {
		if inToken {
			field = append(field, hbaName{name: cur.String(), quoted: quoted})
		}
		cur.Reset()
		quoted, inToken = false, false
	}
	endField := func() {
		endName()
		if len(field) > 0 {
			fields = append(fields, field)
		}
		field = nil
	}
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case inQuote && ch == '"':
			inQuote = false
		case inQuote:
			cur.WriteByte(ch)
		case ch == '"':
			inQuote, quoted, inToken = true, true, true
		case ch == '#':
			endField()
			return fields, nil
		case ch == ',':
			if !inToken {
				return nil, fmt.Errorf("empty name in a list")
			}
			endName()
			if i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t' {
				return nil, fmt.Errorf("a list ends with a comma")
			}
		case ch == ' ' || ch == '\t' || ch == '\r':
			endField()
		default:
			cur.WriteByte(ch)
			inToken = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated quoted string")
	}
	endField()
	return fields, nil
}

func parseHBARule(fields [][]hbaName) (hbaRule, error) {
	var r hbaRule
	word := func(i int) (string, error) {
		if i >= len(fields) {
			return "", fmt.Errorf("end-of-line before the authentication method")
		}
		if len(fields[i]) != 1 {
			return "", fmt.Errorf("%q: a list is not allowed here", joinNames(fields[i]))
		}
		return fields[i][0].name, nil
	}
	typ, _ := word(0)
	switch typ {
	case "local", "host", "hostssl", "hostnossl":
	default:
		return r, fmt.Errorf("invalid connection type %q", typ)
	}
	r.connType = typ
	if len(fields) < 4 {
		return r, fmt.Errorf("end-of-line before the authentication method")
	}
	r.dbs, r.users = fields[1], fields[2]
	for _, n := range r.users {
		if !n.quoted && strings.HasPrefix(n.name, "+") {
			return r, fmt.Errorf("role membership (%q) is not supported; list the users", n.name)
		}
	}
	next := 3
	if typ != "local" {
		a, err := word(3)
		if err != nil {
			return r, err
		}
		next = 4
		switch {
		case a == "all":
		case strings.Contains(a, "/"):
			_, ipnet, err := net.ParseCIDR(a)
			if err != nil {
				return r, fmt.Errorf("invalid IP address %q: %w", a, err)
			}
			r.addr = ipnet
		case net.ParseIP(a) != nil:
			m, err := word(4)
			if err != nil {
				return r, err
			}
			mask := net.ParseIP(m)
			ip := net.ParseIP(a)
			if mask == nil {
				return r, fmt.Errorf("invalid IP mask %q", m)
			}
			if ip4 := ip.To4(); ip4 != nil {
				ip, mask = ip4, mask.To4()
			}
			if mask == nil || len(mask) != len(ip) {
				return r, fmt.Errorf("IP address %q and mask %q do not match", a, m)
			}
			ones, bits := net.IPMask(mask).Size()
			if bits == 0 {
				return r, fmt.Errorf("invalid IP mask %q", m)
			}
			r.addr = &net.IPNet{IP: ip.Mask(net.CIDRMask(ones, bits)), Mask: net.CIDRMask(ones, bits)}
			next = 5
		default:
			return r, fmt.Errorf("address %q is not supported: give all, a CIDR block or an address and a mask", a)
		}
	}
	m, err := word(next)
	if err != nil {
		return r, err
	}
	switch AuthMethod(m) {
	case MethodTrust, MethodReject, MethodSCRAM, MethodMD5, MethodPassword:
	case MethodCert:
		if typ != "hostssl" {
			return r, fmt.Errorf("cert authentication is only supported on hostssl connections")
		}
		r.cert = CertVerifyFull
	default:
		return r, fmt.Errorf("authentication method %q is not supported", m)
	}
	r.method = AuthMethod(m)
	for _, f := range fields[next+1:] {
		o := joinNames(f)
		switch o {
		case "clientcert=verify-ca":
			if r.method == MethodCert {
				return r, fmt.Errorf("clientcert only accepts verify-full when using cert authentication")
			}
			r.cert = CertVerifyCA
		case "clientcert=verify-full":
			r.cert = CertVerifyFull
		default:
			return r, fmt.Errorf("authentication option %q is not supported", o)
		}
		if typ != "hostssl" {
			return r, fmt.Errorf("clientcert can only be configured for hostssl rows")
		}
	}
	return r, nil
}

func joinNames(ns []hbaName) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = n.name
	}
	return strings.Join(s, ",")
}

// TrustsRemote returns the line of the first rule that lets a connection
// from a non-loopback address in without a password (trust), or 0.
func (h *HBA) TrustsRemote() int {
	for _, r := range h.rules {
		if r.method != MethodTrust || r.connType == "local" {
			continue
		}
		if r.addr == nil || !loopbackOnly(r.addr) {
			return r.line
		}
	}
	return 0
}

// loopbackOnly reports whether every address of n is a loopback one.
func loopbackOnly(n *net.IPNet) bool {
	ones, bits := n.Mask.Size()
	if ip4 := n.IP.To4(); ip4 != nil && bits == 32 {
		return ip4[0] == 127 && ones >= 8
	}
	return n.IP.Equal(net.IPv6loopback) && ones == 128
}

// Match returns the decision of the first rule that matches req (without
// the user's secret), or a refusal naming the host when none does.
func (h *HBA) Match(req AuthRequest) AuthDecision {
	tcp, isTCP := req.Remote.(*net.TCPAddr)
	for _, r := range h.rules {
		switch r.connType {
		case "local":
			if isTCP {
				continue
			}
		case "hostssl":
			if !isTCP || !req.TLS {
				continue
			}
		case "hostnossl":
			if !isTCP || req.TLS {
				continue
			}
		default:
			if !isTCP {
				continue
			}
		}
		if r.addr != nil && !r.addr.Contains(tcp.IP) {
			continue
		}
		if !matchNames(r.dbs, req.Database, req.User) || !matchNames(r.users, req.User, "") {
			continue
		}
		d := AuthDecision{Method: r.method, ClientCert: r.cert}
		if r.method == MethodReject {
			d.Refusal = fmt.Sprintf("pg_hba.conf rejects connection for %s", hbaWho(req))
		}
		return d
	}
	return AuthDecision{Method: MethodReject, Refusal: fmt.Sprintf("no pg_hba.conf entry for %s", hbaWho(req))}
}

// matchNames matches a DATABASE (with user for sameuser) or USER list.
func matchNames(list []hbaName, name, user string) bool {
	for _, n := range list {
		switch {
		case n.is("all"):
			return true
		case user != "" && n.is("sameuser") && name == user:
			return true
		case n.is("replication"):
			// only replication connections, which are not served
		case n.name == name:
			return true
		}
	}
	return false
}

// hbaWho is PostgreSQL's description of a connection in its refusals.
func hbaWho(req AuthRequest) string {
	enc := "no encryption"
	if req.TLS {
		enc = "SSL encryption"
	}
	host := "[local]"
	if tcp, ok := req.Remote.(*net.TCPAddr); ok {
		host = tcp.IP.String()
	}
	return fmt.Sprintf("host \"%s\", user \"%s\", database \"%s\", %s", host, req.User, req.Database, enc)
}
