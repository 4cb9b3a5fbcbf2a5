package pgwire

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/xdg-go/scram"
)

// Authentication. A Server with Config.Auth asks it, for each connecting
// user, database, address and TLS state, which method applies (trust,
// reject, scram-sha-256, md5, password or cert: PostgreSQL's pg_hba.conf
// methods) and the user's stored password: a SCRAM-SHA-256 verifier or an
// md5 hash. SCRAM goes through xdg-go/scram. Unknown users go through the
// same exchange against a decoy, so a wrong user and a wrong password fail
// alike (28P01) and take about as long.

// AuthRequest is what a connection tells about itself before it
// authenticates.
type AuthRequest struct {
	User, Database string
	Remote         net.Addr
	// TLS is set when the connection is encrypted.
	TLS bool
}

// AuthMethod is how a connection authenticates (pg_hba.conf's names).
type AuthMethod string

// Authentication methods.
const (
	MethodTrust    AuthMethod = "trust"
	MethodReject   AuthMethod = "reject"
	MethodSCRAM    AuthMethod = "scram-sha-256"
	MethodMD5      AuthMethod = "md5" // md5, or SCRAM-SHA-256 for a user whose secret is a SCRAM verifier
	MethodPassword AuthMethod = "password"
	MethodCert     AuthMethod = "cert" // a verified TLS client certificate whose common name is the user
)

// ClientCert is what a rule asks of the client's TLS certificate besides
// its method (pg_hba.conf's clientcert option).
type ClientCert string

// Client certificate requirements.
const (
	CertNone       ClientCert = ""
	CertVerifyCA   ClientCert = "verify-ca"   // a certificate signed by a client CA
	CertVerifyFull ClientCert = "verify-full" // and its common name is the user
)

// AuthDecision is how a connecting user authenticates.
type AuthDecision struct {
	// Method is the method; "" refuses like MethodReject.
	Method AuthMethod
	// Secret is the user's stored password: a SCRAM-SHA-256 verifier
	// (VerifierFor) or an md5 hash (MD5For); "" when the user is unknown,
	// cannot log in or has no password.
	Secret string
	// Refusal is the FATAL 28000 message of MethodReject.
	Refusal string
	// ClientCert is asked of the client's certificate whatever the method.
	ClientCert ClientCert
}

// scramIterations is PostgreSQL's default for new verifiers.
const scramIterations = 4096

const (
	scramPrefix = "SCRAM-SHA-256$"
	md5Prefix   = "md5"
)

// MD5For returns PostgreSQL's md5 password hash of user's password:
// "md5" followed by the hex md5 of password+user.
func MD5For(user, password string) string {
	sum := md5.Sum([]byte(password + user))
	return md5Prefix + hex.EncodeToString(sum[:])
}

// IsMD5Hash reports whether s has the form of an md5 password hash.
func IsMD5Hash(s string) bool {
	rest, ok := strings.CutPrefix(s, md5Prefix)
	if !ok || len(rest) != 32 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// md5Salted is what a client proving the password behind hash answers to
// salt: "md5" + md5hex(hash without its prefix + salt).
func md5Salted(hash string, salt []byte) string {
	sum := md5.Sum(append([]byte(strings.TrimPrefix(hash, md5Prefix)), salt...))
	return md5Prefix + hex.EncodeToString(sum[:])
}

// PasswordMatches reports whether password is the one behind secret (a
// SCRAM-SHA-256 verifier or user's md5 hash).
func PasswordMatches(secret, user, password string) bool {
	if IsMD5Hash(secret) {
		return subtle.ConstantTimeCompare([]byte(MD5For(user, password)), []byte(secret)) == 1
	}
	creds, err := parseVerifier(secret)
	if err != nil {
		return false
	}
	v, err := verifierWith(password, []byte(creds.Salt), creds.Iters)
	if err != nil {
		return false
	}
	got, err := parseVerifier(v)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got.StoredKey, creds.StoredKey) == 1 && subtle.ConstantTimeCompare(got.ServerKey, creds.ServerKey) == 1
}

// VerifierFor returns PostgreSQL's SCRAM-SHA-256 verifier of password
// ("SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", base64),
// with a fresh random salt: what a role stores instead of its password.
func VerifierFor(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("scram salt: %w", err)
	}
	return verifierWith(password, salt, scramIterations)
}

func verifierWith(password string, salt []byte, iters int) (string, error) {
	c, err := scram.SHA256.NewClient("", password, "")
	if err != nil {
		return "", fmt.Errorf("scram: %w", err)
	}
	creds, err := c.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return "", fmt.Errorf("scram: %w", err)
	}
	b := base64.StdEncoding
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iters, b.EncodeToString(salt), b.EncodeToString(creds.StoredKey), b.EncodeToString(creds.ServerKey)), nil
}

// parseVerifier reads a VerifierFor string.
func parseVerifier(v string) (scram.StoredCredentials, error) {
	rest, ok := strings.CutPrefix(v, scramPrefix)
	if !ok {
		return scram.StoredCredentials{}, errors.New("not a SCRAM-SHA-256 verifier")
	}
	factors, keys, ok := strings.Cut(rest, "$")
	iters, salt, ok1 := strings.Cut(factors, ":")
	stored, server, ok2 := strings.Cut(keys, ":")
	if !ok || !ok1 || !ok2 {
		return scram.StoredCredentials{}, errors.New("malformed SCRAM-SHA-256 verifier")
	}
	n, err := strconv.Atoi(iters)
	b := base64.StdEncoding
	s, err1 := b.DecodeString(salt)
	sk, err2 := b.DecodeString(stored)
	vk, err3 := b.DecodeString(server)
	if err := errors.Join(err, err1, err2, err3); err != nil || n <= 0 {
		return scram.StoredCredentials{}, fmt.Errorf("malformed SCRAM-SHA-256 verifier: %v", err)
	}
	return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(s), Iters: n}, StoredKey: sk, ServerKey: vk}, nil
}

// decoy is the verifier unknown users are checked against ("" if it could
// not be made: the exchange then fails at its first step, as it would).
var decoy = func() string {
	v, _ := verifierWith("no password matches this decoy", []byte("tributary-decoy!"), scramIterations)
	return v
}()

// authenticate authenticates the startup message's user (after it,
// before AuthenticationOk); false when the connection must close (the
// error has been sent).
func (c *conn) authenticate(user, database string) bool {
	if c.srv.cfg.Auth == nil {
		return true
	}
	d := c.srv.cfg.Auth(AuthRequest{User: user, Database: database, Remote: c.nc.RemoteAddr(), TLS: c.tlsState != nil})
	if d.ClientCert != CertNone || d.Method == MethodCert {
		cn := c.clientCertName()
		switch {
		case cn == "":
			c.fatal(pgError{Code: codeInvalidAuthSpec, Message: "connection requires a valid client certificate"})
			return false
		case d.Method == MethodCert && cn != user:
			c.log.Info("pgwire: certificate authentication failed", "user", user, "cn", cn)
			c.fatal(pgError{Code: codeInvalidAuthSpec, Message: fmt.Sprintf("certificate authentication failed for user \"%s\"", user)})
			return false
		case d.ClientCert == CertVerifyFull && cn != user:
			c.log.Info("pgwire: client certificate does not name the user", "user", user, "cn", cn)
			c.fatal(pgError{Code: codeInvalidAuthSpec, Message: fmt.Sprintf("certificate validation (clientcert=verify-full) failed for user \"%s\": CN mismatch", user)})
			return false
		}
	}
	switch d.Method {
	case MethodTrust, MethodCert:
		return true
	case MethodSCRAM:
		if !strings.HasPrefix(d.Secret, scramPrefix) {
			d.Secret = "" // an md5 hash cannot answer SCRAM: fail as for an unknown user
		}
		return c.authSCRAM(user, d.Secret)
	case MethodMD5:
		if strings.HasPrefix(d.Secret, md5Prefix) {
			return c.authMD5(user, d.Secret)
		}
		return c.authSCRAM(user, d.Secret)
	case MethodPassword:
		return c.authPassword(user, d.Secret)
	}
	msg := d.Refusal
	if msg == "" {
		msg = fmt.Sprintf("authentication refused for user \"%s\"", user)
	}
	c.log.Info("pgwire: connection rejected", "user", user, "database", database, "msg", msg)
	c.fatal(pgError{Code: codeInvalidAuthSpec, Message: msg})
	return false
}

// authFailed sends 28P01 and logs it; it returns false.
func (c *conn) authFailed(user string) bool {
	c.log.Info("pgwire: password authentication failed", "user", user, "remote", c.nc.RemoteAddr().String())
	c.fatal(pgError{Code: codeInvalidPassword, Message: fmt.Sprintf("password authentication failed for user \"%s\"", user)})
	return false
}

// backend is the connection's message reader, made on first use.
func (c *conn) backend() *pgproto3.Backend {
	if c.be == nil {
		c.be = pgproto3.NewBackend(c.rw, io.Discard) // output goes through c.w
		c.be.SetMaxBodyLen(c.srv.cfg.MaxMessageSize)
	}
	return c.be
}

// ask sends an authentication request and reads the client's answer, of
// type authType for pgproto3; nil when the connection must close.
func (c *conn) ask(req pgproto3.BackendMessage, authType uint32) pgproto3.FrontendMessage {
	c.w.send(req)
	if err := c.w.flush(); err != nil {
		return nil
	}
	be := c.backend()
	if err := be.SetAuthType(authType); err != nil {
		return nil
	}
	msg, err := be.Receive()
	if err != nil {
		c.log.Debug("pgwire: reading an authentication answer", "err", err)
		return nil
	}
	return msg
}

// authSCRAM runs the SCRAM-SHA-256 exchange against verifier (a decoy
// when "").
func (c *conn) authSCRAM(user, verifier string) bool {
	known := verifier != ""
	if !known {
		verifier = decoy
	}
	creds, err := parseVerifier(verifier)
	if err != nil {
		c.log.Error("pgwire: a stored password verifier does not parse", "user", user, "err", err)
		creds, _ = parseVerifier(decoy)
		known = false
	}
	server, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return creds, nil })
	if err != nil {
		return c.authFailed(user)
	}
	conv := server.NewConversation()
	msg := c.ask(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}}, pgproto3.AuthTypeSASL)
	if msg == nil {
		return false
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || first.AuthMechanism != "SCRAM-SHA-256" {
		c.fatal(pgError{Code: codeProtocolViolation, Message: "expected a SASL initial response for SCRAM-SHA-256"})
		return false
	}
	out, err := conv.Step(string(first.Data))
	if err != nil {
		return c.authFailed(user)
	}
	if msg = c.ask(&pgproto3.AuthenticationSASLContinue{Data: []byte(out)}, pgproto3.AuthTypeSASLContinue); msg == nil {
		return false
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		c.fatal(pgError{Code: codeProtocolViolation, Message: "expected a SASL response"})
		return false
	}
	out, err = conv.Step(string(final.Data))
	if err != nil || !conv.Valid() || !known {
		return c.authFailed(user)
	}
	c.w.send(&pgproto3.AuthenticationSASLFinal{Data: []byte(out)})
	return true
}

// authMD5 runs PostgreSQL's md5 challenge against hash (MD5For's form):
// the client answers "md5" + md5hex(md5hex(password+user) + salt).
func (c *conn) authMD5(user, hash string) bool {
	var salt [4]byte
	if _, err := rand.Read(salt[:]); err != nil {
		c.log.Error("pgwire: md5 salt", "err", err)
		return c.authFailed(user)
	}
	msg := c.ask(&pgproto3.AuthenticationMD5Password{Salt: salt}, pgproto3.AuthTypeMD5Password)
	if msg == nil {
		return false
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		c.fatal(pgError{Code: codeProtocolViolation, Message: "expected a password response"})
		return false
	}
	if subtle.ConstantTimeCompare([]byte(pm.Password), []byte(md5Salted(hash, salt[:]))) != 1 {
		return c.authFailed(user)
	}
	return true
}

// authPassword asks for the password in clear (PostgreSQL's password
// method: only sensible over TLS) and checks it against secret, or
// against the decoy when "".
func (c *conn) authPassword(user, secret string) bool {
	msg := c.ask(&pgproto3.AuthenticationCleartextPassword{}, pgproto3.AuthTypeCleartextPassword)
	if msg == nil {
		return false
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		c.fatal(pgError{Code: codeProtocolViolation, Message: "expected a password response"})
		return false
	}
	if secret == "" {
		_ = PasswordMatches(decoy, user, pm.Password)
		return c.authFailed(user)
	}
	if !PasswordMatches(secret, user, pm.Password) {
		return c.authFailed(user)
	}
	return true
}

// IsLoopback reports whether addr is a loopback address (or a Unix socket).
func IsLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return true
	}
	return tcp.IP.IsLoopback()
}
