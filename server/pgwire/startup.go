package pgwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Startup packet codes (the first 4 bytes after the length).
const (
	cancelRequestCode  = 80877102
	sslRequestCode     = 80877103
	gssEncRequestCode  = 80877104
	minStartupLen      = 8
	maxStartupLen      = 10000 // MAX_STARTUP_PACKET_LENGTH in PostgreSQL
	maxNegotiateRounds = 3     // SSLRequest and GSSENCRequest, then the startup message
)

// readStartupPacket reads one length-prefixed startup packet and returns its body
// (code first). It reads exactly the packet, so no bytes are buffered past it.
func readStartupPacket(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < minStartupLen || n > maxStartupLen {
		return nil, wireErrorf(codeProtocolViolation, "invalid length of startup packet")
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("read startup packet: %w", err)
	}
	return body, nil
}

// parseStartupParams decodes the key\0value\0...\0 list of a StartupMessage.
func parseStartupParams(b []byte) (params map[string]string, pqOptions []string, err error) {
	bad := wireErrorf(codeProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
	params = make(map[string]string)
	for {
		if len(b) == 0 {
			return nil, nil, bad
		}
		if len(b) == 1 {
			if b[0] != 0 {
				return nil, nil, bad
			}
			return params, pqOptions, nil
		}
		k := bytes.IndexByte(b, 0)
		if k <= 0 {
			return nil, nil, bad
		}
		key := string(b[:k])
		b = b[k+1:]
		v := bytes.IndexByte(b, 0)
		if v < 0 {
			return nil, nil, bad
		}
		val := string(b[:v])
		b = b[v+1:]
		if strings.HasPrefix(key, "_pq_.") {
			pqOptions = append(pqOptions, key)
			continue
		}
		params[key] = val
	}
}

// startup runs the startup phase: SSL/GSS refusal, cancel requests, the startup
// message, trust authentication, session creation and the initial ParameterStatus
// burst. It returns false when the connection must close.
func (c *conn) startup() bool {
	for round := 0; ; round++ {
		body, err := readStartupPacket(c.rw)
		if err != nil {
			var we *wireError
			if errors.As(err, &we) {
				c.fatal(toPgError(err))
			} else {
				c.log.Debug("pgwire: startup read failed", "err", err)
			}
			return false
		}
		code := binary.BigEndian.Uint32(body)
		switch code {
		case sslRequestCode, gssEncRequestCode:
			if len(body) != 4 || round >= maxNegotiateRounds-1 {
				c.fatal(pgError{Code: codeProtocolViolation, Message: "invalid startup packet"})
				return false
			}
			if code == sslRequestCode && c.srv.cfg.TLS != nil && c.tlsState == nil {
				if !c.startTLS() {
					return false
				}
				continue
			}
			if _, err := c.rw.Write([]byte{'N'}); err != nil {
				return false
			}
			continue
		case cancelRequestCode:
			if len(body) == 12 {
				c.srv.cancelRequest(binary.BigEndian.Uint32(body[4:]), binary.BigEndian.Uint32(body[8:]))
			}
			return false // PostgreSQL closes the cancel connection without a reply
		}
		major, minor := code>>16, code&0xffff
		if major != 3 {
			c.fatal(pgError{Code: codeFeatureNotSupported,
				Message: fmt.Sprintf("unsupported frontend protocol %d.%d: server supports 3.0 to 3.0", major, minor)})
			return false
		}
		if c.refused {
			c.log.Info("pgwire: connection refused: too many clients", "max_connections", c.srv.cfg.MaxConnections)
			c.fatal(pgError{Code: codeTooManyConnections, Message: "sorry, too many clients already"})
			return false
		}
		params, pqOptions, err := parseStartupParams(body[4:])
		if err != nil {
			c.fatal(toPgError(err))
			return false
		}
		return c.acceptStartup(minor, params, pqOptions)
	}
}

func (c *conn) acceptStartup(minor uint32, params map[string]string, pqOptions []string) bool {
	user := params["user"]
	if user == "" {
		c.fatal(pgError{Code: codeInvalidAuthSpec, Message: "no PostgreSQL user name specified in startup packet"})
		return false
	}
	if params["database"] == "" {
		params["database"] = user
	}
	if minor > 0 || len(pqOptions) > 0 {
		c.w.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: pqOptions})
	}
	if !c.authenticate(user, params["database"]) {
		return false
	}
	c.w.send(&pgproto3.AuthenticationOk{})
	params[ParamBackendPID] = strconv.FormatUint(uint64(c.pid), 10)
	sess, err := c.srv.factory(params, notifier{c.w})
	if err != nil {
		c.log.Info("pgwire: session refused", "user", user, "database", params["database"], "err", err)
		c.fatal(toPgError(err))
		return false
	}
	c.sess = sess
	c.act.Lock()
	c.act.user, c.act.database, c.act.app = user, params["database"], params["application_name"]
	c.act.backendStart = time.Now()
	c.act.Unlock()
	c.setIdle()
	c.stateChanged()
	if enc := params["client_encoding"]; enc != "" && !isUTF8Name(enc) {
		c.log.Warn("pgwire: client asked for an encoding other than UTF8; sending UTF8", "client_encoding", enc)
	}
	super := "on"
	if su, ok := sess.(Superuser); ok && !su.IsSuperuser() {
		super = "off"
	}
	status := [][2]string{
		{"application_name", params["application_name"]},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"default_transaction_read_only", "off"},
		{"in_hot_standby", "off"},
		{"integer_datetimes", "on"},
		{"IntervalStyle", "postgres"},
		{"is_superuser", super},
		{"server_encoding", "UTF8"},
		{"server_version", c.srv.cfg.ServerVersion},
		{"session_authorization", user},
		{"standard_conforming_strings", "on"},
		{"TimeZone", "UTC"},
	}
	for _, kv := range status {
		c.w.send(&pgproto3.ParameterStatus{Name: kv[0], Value: kv[1]})
	}
	var key [4]byte
	binary.BigEndian.PutUint32(key[:], c.secret)
	c.w.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: key[:]})
	return c.w.sendReady(sess.TxStatus()) == nil
}

func isUTF8Name(enc string) bool {
	switch strings.ToUpper(strings.ReplaceAll(strings.Trim(enc, "'\""), "-", "")) {
	case "UTF8", "UNICODE", "AUTO":
		return true
	}
	return false
}

// notifier forwards a session's notices to its connection.
type notifier struct{ w *wire }

func (n notifier) Notice(severity, code, msg string) { n.w.notice(severity, code, msg) }
