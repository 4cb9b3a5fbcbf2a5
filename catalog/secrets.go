package catalog

import "regexp"

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
