package catalog

import (
	"regexp"
	"strings"
)

var (
	// secretOption matches a WITH option whose name says it is a secret
	// (it contains password, passwd, secret, token or private_key), with
	// its quoted value.
	secretOption = regexp.MustCompile(`(?i)((?:^|[\s,(])[a-z0-9_.]*(?:password|passwd|secret|token|private_key|privatekey)[a-z0-9_.]*\s*=\s*)'(?:[^']|'')*'`)
	// urlPassword matches the password of a user:password@host URL.
	urlPassword = regexp.MustCompile(`(://[^:/@'\s]+:)[^@'\s]+@`)
)

// MaskSecrets replaces the values of secret options (password = '...',
// *.secret, tokens) and URL passwords in a statement's text by ***, for
// every place that shows a definition (SHOW CREATE, rw_* tables, SHOW JOBS,
// rw_ddl_progress, event logs).
func MaskSecrets(text string) string {
	text = secretOption.ReplaceAllString(text, "${1}'***'")
	return urlPassword.ReplaceAllString(text, "${1}***@")
}

// secretWords are what an option's name contains when its value is a
// secret.
var secretWords = []string{"password", "passwd", "secret", "token", "private_key", "privatekey"}

// IsSecretOption reports whether a WITH option's value is a secret by its
// name.
func IsSecretOption(key string) bool {
	k := strings.ToLower(key)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// SecretSpans returns the byte ranges [start, end) of the secrets in a
// statement's text, in order: each secret option's quoted value (inside
// the quotes, doubled quotes included) and each URL password; MaskSecrets
// hides the same.
func SecretSpans(text string) [][2]int {
	var spans [][2]int
	for _, m := range secretOption.FindAllStringSubmatchIndex(text, -1) {
		spans = append(spans, [2]int{m[3] + 1, m[1] - 1})
	}
	for _, m := range urlPassword.FindAllStringSubmatchIndex(text, -1) {
		spans = append(spans, [2]int{m[3], m[1] - 1})
	}
	return spans
}

// URLPasswordSpans returns the byte ranges of the URL passwords in s.
func URLPasswordSpans(s string) [][2]int {
	var spans [][2]int
	for _, m := range urlPassword.FindAllStringSubmatchIndex(s, -1) {
		spans = append(spans, [2]int{m[3], m[1] - 1})
	}
	return spans
}
