package pgwire

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLS. With Config.TLS set, an SSLRequest is answered 'S' and the TLS
// handshake runs on the socket before the startup message, as PostgreSQL
// does; without it the answer is 'N' and a client that insists
// (sslmode=require) gives up. The handshake counts against StartupTimeout.

// startTLS answers an SSLRequest with 'S' and runs the server side of the
// TLS handshake; false when the connection must close.
func (c *conn) startTLS() bool {
	if _, err := c.rw.Write([]byte{'S'}); err != nil {
		return false
	}
	tc := tls.Server(c.nc, c.srv.cfg.TLS)
	if err := tc.Handshake(); err != nil {
		// Nothing can be said to the client: it may not speak TLS at all.
		c.log.Info("pgwire: TLS handshake failed", "err", err)
		return false
	}
	st := tc.ConnectionState()
	c.rw, c.tlsState = tc, &st
	c.w.setWriter(tc)
	return true
}

// TLSConfig loads a server certificate and key (PEM files) for Config.TLS.
// With clientCA, the server asks every TLS client for a certificate and
// verifies one that is given against those CAs (PostgreSQL's ssl_ca_file);
// whether a certificate is required is the authentication rules' business
// (hba.go: method cert, option clientcert).
func TLSConfig(certFile, keyFile, clientCA string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("read client CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA file %s holds no PEM certificate", clientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// clientCertName is the common name of the client's verified certificate
// ("" without one).
func (c *conn) clientCertName() string {
	if c.tlsState == nil || len(c.tlsState.VerifiedChains) == 0 {
		return ""
	}
	return c.tlsState.VerifiedChains[0][0].Subject.CommonName
}
