package pgwire

import (
	"net"
	"strings"
	"testing"
)

func TestHBAMatch(t *testing.T) {
	h, err := ParseHBA(`
# TYPE    DATABASE      USER         ADDRESS          METHOD
local     all           all                           trust
hostssl   all           "all"        10.0.0.0/8       cert
hostnossl all           all          10.0.0.0/8       reject
host      sameuser      all          192.168.1.0      255.255.255.0  md5
host      dev,"prod"    alice,bob    127.0.0.1/32     scram-sha-256  # a comment
hostssl   all           all          ::1/128          password clientcert=verify-ca
host      all           root         all              scram-sha-256
`)
	if err != nil {
		t.Fatal(err)
	}
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 5432} }
	for _, c := range []struct {
		user, db, ip string
		tls          bool
		method       AuthMethod
		cert         ClientCert
		refusal      string
	}{
		{user: "x", db: "y", ip: "", method: MethodTrust},
		{user: "all", db: "y", ip: "10.1.2.3", tls: true, method: MethodCert, cert: CertVerifyFull},
		// "all" quoted is a user named all, not every user.
		{user: "x", db: "y", ip: "10.1.2.3", tls: true, method: MethodReject, refusal: `no pg_hba.conf entry for host "10.1.2.3", user "x", database "y", SSL encryption`},
		{user: "x", db: "y", ip: "10.1.2.3", method: MethodReject, refusal: `pg_hba.conf rejects connection for host "10.1.2.3", user "x", database "y", no encryption`},
		{user: "u", db: "u", ip: "192.168.1.77", method: MethodMD5},
		{user: "u", db: "v", ip: "192.168.1.77", method: MethodReject, refusal: `no pg_hba.conf entry for host "192.168.1.77", user "u", database "v", no encryption`},
		{user: "u", db: "u", ip: "192.168.2.77", tls: true, method: MethodReject, refusal: `no pg_hba.conf entry for host "192.168.2.77", user "u", database "u", SSL encryption`},
		{user: "bob", db: "prod", ip: "127.0.0.1", method: MethodSCRAM},
		{user: "carol", db: "prod", ip: "127.0.0.1", method: MethodReject, refusal: `no pg_hba.conf entry for host "127.0.0.1", user "carol", database "prod", no encryption`},
		{user: "carol", db: "dev", ip: "::1", tls: true, method: MethodPassword, cert: CertVerifyCA},
		{user: "carol", db: "dev", ip: "::1", method: MethodReject, refusal: `no pg_hba.conf entry for host "::1", user "carol", database "dev", no encryption`},
		{user: "root", db: "dev", ip: "8.8.8.8", method: MethodSCRAM},
	} {
		req := AuthRequest{User: c.user, Database: c.db, TLS: c.tls}
		if c.ip == "" {
			req.Remote = &net.UnixAddr{Name: "/tmp/.s.PGSQL.5432", Net: "unix"}
		} else {
			req.Remote = tcp(c.ip)
		}
		d := h.Match(req)
		if d.Method != c.method || d.ClientCert != c.cert || d.Refusal != c.refusal {
			t.Errorf("%+v: got %+v", c, d)
		}
	}
}

func TestHBAParseErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"hostx all all all trust", `invalid connection type "hostx"`},
		{"host all all all", "end-of-line before the authentication method"},
		{"host all all all ident", `authentication method "ident" is not supported`},
		{"host all all 10.0.0.0/33 trust", "invalid IP address"},
		{"host all all example.com trust", "is not supported"},
		{"host all all 10.0.0.1 255.0.0 trust", "invalid IP mask"},
		{"host all +admins all trust", "role membership"},
		{"host all all all cert", "only supported on hostssl"},
		{"host all all all md5 clientcert=verify-full", "hostssl rows"},
		{"hostssl all all all cert clientcert=verify-ca", "verify-full"},
		{"host all all all trust foo=bar", `option "foo=bar"`},
		{`host "all all all trust`, "unterminated quoted string"},
		{"host all, all all trust", "ends with a comma"},
	} {
		_, err := ParseHBA("local all all trust\n" + c.line)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "line 2: ") {
			t.Errorf("%q: %v, want line 2: ...%s", c.line, err, c.want)
		}
	}
}

func TestHBATrustsRemote(t *testing.T) {
	for text, line := range map[string]int{
		"host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\nhost all all all md5":   0,
		"local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all 10.0.0.0/8 trust": 3,
		"host all all all trust": 1,
		"host all all 127.0.0.0/8 scram-sha-256\nhostssl all all 0.0.0.0/0 trust":               2,
		"host all all 127.0.0.1 255.0.0.0 trust\nhost all all 127.0.0.1 255.255.255.255 reject": 0,
	} {
		h, err := ParseHBA(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.TrustsRemote(); got != line {
			t.Errorf("%q: line %d, want %d", text, got, line)
		}
	}
}
