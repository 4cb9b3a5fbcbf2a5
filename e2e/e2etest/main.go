package e2etest

import (
	"fmt"
	"os"
	"testing"

	"github.com/tributary/tributary/e2e/testserver"
)

// Main runs a test package's tests (call it from TestMain and pass its result to os.Exit) with
// the server built once for all of them: it sets $TRIBUTARY_BIN, which testserver.Build then
// returns, so that no test links the server again (about 2 s of both cores each time, a third of
// the package's time when every test did). The binary is removed afterwards. A $TRIBUTARY_BIN
// already set is used as it is.
func Main(m *testing.M) int {
	if os.Getenv(testserver.BinEnv) != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "tributary-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "build server: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin, err := testserver.BuildInto(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "build server: %v\n", err)
		return 1
	}
	if err := os.Setenv(testserver.BinEnv, bin); err != nil {
		fmt.Fprintf(os.Stderr, "build server: %v\n", err)
		return 1
	}
	return m.Run()
}
