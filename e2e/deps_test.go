package e2e

// The e2e tests run a server binary they build with `go build`, which Go's
// test cache does not see: these imports make the test binary, and so the
// cached results, depend on the server's code, so that `go test ./...` reruns
// the e2e tests whenever the engine changes.
import (
	_ "github.com/tributary/tributary/server/dashboard"
	_ "github.com/tributary/tributary/server/metrics"
	_ "github.com/tributary/tributary/server/pgwire"
	_ "github.com/tributary/tributary/server/session"
	_ "github.com/tributary/tributary/storage/badger"
)
