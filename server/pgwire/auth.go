package pgwire

import (
	"crypto/rand"
	"encoding/base64"
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
// user and address, whether a password is needed and the user's
// SCRAM-SHA-256 verifier; the client then proves the password with
// SCRAM-SHA-256 (PostgreSQL's default method, through xdg-go/scram).
// Unknown users go through the same exchange against a decoy verifier, so
// a wrong user and a wrong password fail alike (28P01) and take as long.

// AuthDecision is how a connecting user authenticates.
type AuthDecision struct {
	// Trust: no password is asked for.
	Trust bool
	// Verifier is the user's SCRAM-SHA-256 verifier (VerifierFor's form);
	// "" when the user is unknown, cannot log in or has no password.
	Verifier string
}

// scramIterations is PostgreSQL's default for new verifiers.
const scramIterations = 4096

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
	rest, ok := strings.CutPrefix(v, "SCRAM-SHA-256$")
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

// authenticate runs the SCRAM-SHA-256 exchange for user (after the startup
// packet, before AuthenticationOk); false when the connection must close
// (the error has been sent).
func (c *conn) authenticate(user string) bool {
	if c.srv.cfg.Auth == nil {
		return true
	}
	d := c.srv.cfg.Auth(user, c.nc.RemoteAddr())
	if d.Trust {
		return true
	}
	verifier, known := d.Verifier, d.Verifier != ""
	if !known {
		verifier = decoy
	}
	creds, err := parseVerifier(verifier)
	if err != nil {
		c.log.Error("pgwire: a stored password verifier does not parse", "user", user, "err", err)
		creds, _ = parseVerifier(decoy)
		known = false
	}
	failed := func() bool {
		c.log.Info("pgwire: password authentication failed", "user", user, "remote", c.nc.RemoteAddr().String())
		c.fatal(pgError{Code: codeInvalidPassword, Message: fmt.Sprintf("password authentication failed for user \"%s\"", user)})
		return false
	}
	server, err := scram.SHA256.NewServer(func(string) (scram.StoredCredentials, error) { return creds, nil })
	if err != nil {
		return failed()
	}
	conv := server.NewConversation()
	if c.be == nil {
		c.be = pgproto3.NewBackend(c.nc, io.Discard)
		c.be.SetMaxBodyLen(c.srv.cfg.MaxMessageSize)
	}
	c.w.send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if err := c.w.flush(); err != nil {
		return false
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return false
	}
	msg, err := c.be.Receive()
	if err != nil {
		return false
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || first.AuthMechanism != "SCRAM-SHA-256" {
		c.fatal(pgError{Code: codeProtocolViolation, Message: "expected a SASL initial response for SCRAM-SHA-256"})
		return false
	}
	out, err := conv.Step(string(first.Data))
	if err != nil {
		return failed()
	}
	c.w.send(&pgproto3.AuthenticationSASLContinue{Data: []byte(out)})
	if err := c.w.flush(); err != nil {
		return false
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return false
	}
	if msg, err = c.be.Receive(); err != nil {
		return false
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		c.fatal(pgError{Code: codeProtocolViolation, Message: "expected a SASL response"})
		return false
	}
	out, err = conv.Step(string(final.Data))
	if err != nil || !conv.Valid() || !known {
		return failed()
	}
	c.w.send(&pgproto3.AuthenticationSASLFinal{Data: []byte(out)})
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
