package connector

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// Network. Connectors that reach other hosts (postgres, kafka,
// postgres-cdc) name them (SourceConnector.Endpoints,
// SinkConnector.Endpoints) so that CREATE can refuse a host outside the
// operator's allow-list (--connector-allow) before anything connects, and
// dial through Dial, which refuses it again at every connection (a Kafka
// broker may advertise other hosts; a name may resolve elsewhere later).
// An empty list (the default) allows every host.

var allowed struct {
	sync.RWMutex
	rules []allowRule // nil: any host
	spec  string
}

// allowRule is one entry of the allow-list: a host name or address, or a
// CIDR block, with an optional port.
type allowRule struct {
	host string     // lower case; "" for a block
	ip   *net.IPNet // a block (an address is a /32 or /128)
	port string     // "" for any
}

// SetAllowedHosts sets the allow-list from a comma list of host, host:port,
// address, [v6-address]:port or CIDR block entries ("" allows every host).
func SetAllowedHosts(spec string) error {
	var rules []allowRule
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		r, err := parseAllowRule(e)
		if err != nil {
			return err
		}
		rules = append(rules, r)
	}
	allowed.Lock()
	defer allowed.Unlock()
	allowed.rules, allowed.spec = rules, spec
	return nil
}

func parseAllowRule(e string) (allowRule, error) {
	if _, block, err := net.ParseCIDR(e); err == nil {
		return allowRule{ip: block}, nil
	}
	host, port := e, ""
	if h, p, err := net.SplitHostPort(e); err == nil {
		host, port = h, p
	} else if strings.Contains(e, ":") && net.ParseIP(e) == nil || strings.HasPrefix(e, "[") {
		return allowRule{}, fmt.Errorf("connector allow-list entry %q: %w", e, err)
	}
	if host == "" {
		return allowRule{}, fmt.Errorf("connector allow-list entry %q: no host", e)
	}
	if ip := net.ParseIP(host); ip != nil {
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		return allowRule{ip: &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}, port: port}, nil
	}
	return allowRule{host: strings.ToLower(strings.TrimSuffix(host, ".")), port: port}, nil
}

// allows reports whether r lets host (a name or an address) and port in.
func (r allowRule) allows(host, port string) bool {
	if r.port != "" && r.port != port {
		return false
	}
	if r.ip != nil {
		ip := net.ParseIP(host)
		return ip != nil && r.ip.Contains(ip)
	}
	return r.host == strings.ToLower(strings.TrimSuffix(host, "."))
}

// notAllowed is the refusal of an address outside the allow-list.
func notAllowed(what, hostport string) error {
	return types.Errorf(types.ErrInsufficientPrivilege, "%s: host %s is not in the connector allow-list (--connector-allow)", what, hostport)
}

// CheckEndpoint refuses (42501) a host:port the allow-list does not let in
// by name or address (a name the list does not hold is resolved, when the
// list has address blocks, and let in when an address falls in one); what
// names the connector in the error.
func CheckEndpoint(ctx context.Context, what, hostport string) error {
	allowed.RLock()
	rules := allowed.rules
	allowed.RUnlock()
	if rules == nil {
		return nil
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	for _, r := range rules {
		if r.allows(host, port) {
			return nil
		}
	}
	if net.ParseIP(host) == nil && anyBlock(rules) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ips, _ := net.DefaultResolver.LookupHost(ctx, host)
		for _, ip := range ips {
			for _, r := range rules {
				if r.ip != nil && r.allows(ip, port) {
					return nil // Dial checks again: the name may resolve elsewhere then
				}
			}
		}
	}
	return notAllowed(what, hostport)
}

func anyBlock(rules []allowRule) bool {
	for _, r := range rules {
		if r.ip != nil {
			return true
		}
	}
	return false
}

// dialer is Dial's; its timeout bounds a connection attempt.
var dialer = net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// Dial connects to addr (host:port) when the allow-list lets it in: by its
// name, or by the addresses the name resolves to (only those are dialled);
// otherwise it fails with 42501 and connects to nothing.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	allowed.RLock()
	rules := allowed.rules
	allowed.RUnlock()
	if rules == nil {
		return dialer.DialContext(ctx, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	for _, r := range rules {
		if r.allows(host, port) {
			return dialer.DialContext(ctx, network, addr)
		}
	}
	if net.ParseIP(host) != nil || !anyBlock(rules) {
		return nil, notAllowed("connect", addr)
	}
	ips, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	var errs []error
	for _, ip := range ips {
		ok := false
		for _, r := range rules {
			ok = ok || r.allows(ip, port)
		}
		if !ok {
			continue
		}
		c, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip, port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, notAllowed("connect", addr)
	}
	return nil, errors.Join(errs...)
}

// PeerError marks the part of an error that the remote host wrote (a
// PostgreSQL server's message, a broker's reply, the bytes of whatever
// answered on that port): shown to superusers, redacted for others
// (Redact), so a connector cannot be used to read other services' replies.
type PeerError struct {
	// Kind is the error kind (types.Err*) of the error that holds it, if
	// any.
	Kind error
	Err  error
}

func (e *PeerError) Error() string { return e.Err.Error() }

// Unwrap gives the kind and the peer's error to errors.Is and errors.As.
func (e *PeerError) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

// Peer marks err as the remote host's (nil stays nil); wrap it with %w.
func Peer(err error) error {
	if err == nil {
		return nil
	}
	return &PeerError{Err: err}
}

// PeerErrorf is types.Errorf of kind whose message embeds peer's text.
func PeerErrorf(kind, peer error, format string, args ...any) error {
	return &types.Error{Kind: &PeerError{Kind: kind, Err: peer}, Msg: fmt.Sprintf(format, args...)}
}

// redactedText replaces a peer's text in a redacted message.
const redactedText = "(the remote host's reply is not shown; it is in the server log)"

// Redact returns err with the remote host's text replaced (as PeerError
// marks it), keeping its kind; an err without a PeerError is returned as
// it is.
func Redact(err error) error {
	var pe *PeerError
	if !errors.As(err, &pe) {
		return err
	}
	msg, kind := err.Error(), pe.Kind
	var te *types.Error
	if errors.As(err, &te) {
		msg = te.Msg
		if kind == nil {
			kind = te.Kind
		}
	}
	peer := pe.Err.Error()
	if peer != "" && strings.Contains(msg, peer) {
		msg = strings.ReplaceAll(msg, peer, redactedText)
	} else {
		msg = "an external system's check failed " + redactedText
	}
	if kind == nil {
		kind = types.ErrInvalidParameter
	}
	return &types.Error{Kind: kind, Msg: msg}
}
