package testserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLSFiles are PEM files of a throwaway certificate authority, a server
// certificate it signed for 127.0.0.1, ::1 and localhost, and client
// certificates it signed, by common name.
type TLSFiles struct {
	CA, Cert, Key string
	// Clients holds each client's certificate and key file.
	Clients map[string][2]string
}

// WriteTLSFiles makes a fresh CA, server certificate and one client
// certificate per name in dir (keys 0600). Nothing is committed: every
// test run has its own.
func WriteTLSFiles(t testing.TB, dir string, clients ...string) TLSFiles {
	t.Helper()
	serial := int64(1)
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatalf("generate key: %v", err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, "PRIVATE KEY", der)
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "tributary test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("create CA: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(cn string, usage x509.ExtKeyUsage, server bool) ([]byte, *ecdsa.PrivateKey) {
		serial++
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatalf("sign %s: %v", cn, err)
		}
		return der, k
	}
	f := TLSFiles{CA: write("ca.crt", "CERTIFICATE", caDER), Clients: map[string][2]string{}}
	der, k := sign("localhost", x509.ExtKeyUsageServerAuth, true)
	f.Cert, f.Key = write("server.crt", "CERTIFICATE", der), writeKey("server.key", k)
	for _, cn := range clients {
		der, k := sign(cn, x509.ExtKeyUsageClientAuth, false)
		f.Clients[cn] = [2]string{write(cn+".crt", "CERTIFICATE", der), writeKey(cn+".key", k)}
	}
	return f
}
