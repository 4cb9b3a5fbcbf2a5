package recovery

// These imports make the test binary, and so go test's cached results, depend on the server's
// code, as in e2e's deps_test.go: the tests run a binary built with `go build`, which the test
// cache does not see. They cannot move into e2e/e2etest, which may import only e2e packages.
import (
	_ "github.com/tributary/tributary/server/dashboard"
	_ "github.com/tributary/tributary/server/metrics"
	_ "github.com/tributary/tributary/server/pgwire"
	_ "github.com/tributary/tributary/server/session"
	_ "github.com/tributary/tributary/storage/badger"
)
