package persist

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/tributary/tributary/catalog"
)

// Secrets at rest. With a key set (SetSecretKey), Save stores every
// secret of a relation — a connector option whose name says it is one
// (catalog.IsSecretOption), a URL's password, and the same values in the
// CREATE statement's text — as a token "tributary-secret:v1:<base64>"
// (AES-256-GCM), and Load opens the tokens again, so a copy of the data
// directory without the key does not give the passwords away. Values
// stored in clear (before a key, or by an older version) load as they are;
// LoadReport names their relations so that the engine seals them at start.

const tokenPrefix = "tributary-secret:v1:"

var tokenRE = regexp.MustCompile(regexp.QuoteMeta(tokenPrefix) + `[A-Za-z0-9_-]+`)

var sealer struct {
	sync.RWMutex
	aead cipher.AEAD // nil: secrets are stored in clear
}

// ErrNoSecretKey is Load's error for a catalog holding sealed secrets when
// no key (or another key) is set.
var ErrNoSecretKey = errors.New("the catalog holds encrypted connector secrets that the secret key does not open")

// SetSecretKey sets the 32-byte AES-256 key that seals secrets (nil: none).
func SetSecretKey(key []byte) error {
	sealer.Lock()
	defer sealer.Unlock()
	if key == nil {
		sealer.aead = nil
		return nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return fmt.Errorf("secret key: %w", err)
	}
	if len(key) != 32 {
		return fmt.Errorf("secret key: %d bytes, want 32", len(key))
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return fmt.Errorf("secret key: %w", err)
	}
	sealer.aead = aead
	return nil
}

// LoadOrCreateKey reads the key file at path (64 hex digits), creating it
// with a fresh random key, mode 0600, when it does not exist.
func LoadOrCreateKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("make a secret key: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("create secret key file: %w", err)
		}
		if _, err := f.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("write secret key file: %w", err)
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("sync secret key file: %w", err)
		}
		return key, f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("read secret key file: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("secret key file %s: want 64 hex digits (a 32-byte key)", path)
	}
	return key, nil
}

// seal returns plain's token (plain itself without a key, or when it is
// already one).
func seal(aead cipher.AEAD, plain string) (string, error) {
	if aead == nil || plain == "" || strings.HasPrefix(plain, tokenPrefix) {
		return plain, nil
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal a secret: %w", err)
	}
	out := aead.Seal(nonce, nonce, []byte(plain), []byte(tokenPrefix))
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// open replaces every token in s by its secret.
func open(aead cipher.AEAD, s string) (string, error) {
	if !strings.Contains(s, tokenPrefix) {
		return s, nil
	}
	var err error
	out := tokenRE.ReplaceAllStringFunc(s, func(tok string) string {
		if aead == nil {
			err = ErrNoSecretKey
			return tok
		}
		b, e := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, tokenPrefix))
		if e != nil || len(b) < aead.NonceSize() {
			err = fmt.Errorf("a sealed secret is damaged: %w", ErrNoSecretKey)
			return tok
		}
		plain, e := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte(tokenPrefix))
		if e != nil {
			err = ErrNoSecretKey
			return tok
		}
		return string(plain)
	})
	return out, err
}

// sealSpans seals the byte ranges spans of s (overlapping ones once).
func sealSpans(aead cipher.AEAD, s string, spans [][2]int) (string, error) {
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		if sp[0] < at || sp[1] <= sp[0] {
			continue
		}
		tok, err := seal(aead, s[sp[0]:sp[1]])
		if err != nil {
			return "", err
		}
		b.WriteString(s[at:sp[0]])
		b.WriteString(tok)
		at = sp[1]
	}
	b.WriteString(s[at:])
	return b.String(), nil
}

// sealProps returns props with the secret values sealed.
func sealProps(aead cipher.AEAD, props map[string]string) (map[string]string, error) {
	out := maps.Clone(props)
	for k, v := range props {
		var err error
		if catalog.IsSecretOption(k) {
			out[k], err = seal(aead, v)
		} else {
			out[k], err = sealSpans(aead, v, catalog.URLPasswordSpans(v))
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sealed returns r as stored: a copy with its secrets sealed (r itself
// without a key).
func sealed(r *catalog.Relation) (*catalog.Relation, error) {
	sealer.RLock()
	aead := sealer.aead
	sealer.RUnlock()
	if aead == nil {
		return r, nil
	}
	c := *r
	var err error
	if c.Definition, err = sealSpans(aead, r.Definition, catalog.SecretSpans(r.Definition)); err != nil {
		return nil, err
	}
	if r.Connector != nil {
		conn := *r.Connector
		if conn.Props, err = sealProps(aead, r.Connector.Props); err != nil {
			return nil, err
		}
		c.Connector = &conn
	}
	if r.Sink != nil {
		sink := *r.Sink
		if sink.Props, err = sealProps(aead, r.Sink.Props); err != nil {
			return nil, err
		}
		c.Sink = &sink
	}
	return &c, nil
}

// opened opens the sealed secrets of a loaded relation in place.
func opened(r *catalog.Relation) error {
	sealer.RLock()
	aead := sealer.aead
	sealer.RUnlock()
	var errs []error
	var err error
	r.Definition, err = open(aead, r.Definition)
	errs = append(errs, err)
	for _, props := range []map[string]string{connectorProps(r), sinkProps(r)} {
		for k, v := range props {
			props[k], err = open(aead, v)
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("relation %s: %w", r.Name, err)
	}
	return nil
}

func connectorProps(r *catalog.Relation) map[string]string {
	if r.Connector == nil {
		return nil
	}
	return r.Connector.Props
}

func sinkProps(r *catalog.Relation) map[string]string {
	if r.Sink == nil {
		return nil
	}
	return r.Sink.Props
}

// Sealing reports whether a key is set (Save seals secrets).
func Sealing() bool {
	sealer.RLock()
	defer sealer.RUnlock()
	return sealer.aead != nil
}

// inClear reports whether a stored (not yet opened) relation holds a
// secret in clear.
func inClear(r *catalog.Relation) bool {
	clear := func(s string, spans [][2]int) bool {
		for _, sp := range spans {
			if v := s[sp[0]:sp[1]]; v != "" && !strings.HasPrefix(v, tokenPrefix) {
				return true
			}
		}
		return false
	}
	if clear(r.Definition, catalog.SecretSpans(r.Definition)) {
		return true
	}
	for _, props := range []map[string]string{connectorProps(r), sinkProps(r)} {
		for k, v := range props {
			if catalog.IsSecretOption(k) && v != "" && !strings.HasPrefix(v, tokenPrefix) || clear(v, catalog.URLPasswordSpans(v)) {
				return true
			}
		}
	}
	return false
}
