package e2e

import (
	"flag"
	"os"
	"testing"
)

// goTestDefaultTimeout is go test's -timeout when none is given; packageTimeout replaces it here.
// This package takes about 10 minutes on two busy cores (583-616 s in CI, which runs it with
// -timeout 18m), so under the README's plain `go test ./...` the default alarm fired about half
// the time. go test itself kills a test binary a minute after its -timeout (11 minutes for the
// default), so the package's own alarm goes off first and prints where every test stood.
const (
	goTestDefaultTimeout = "10m0s"
	packageTimeout       = "10m50s"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.timeout"); f != nil && f.Value.String() == goTestDefaultTimeout {
		if err := f.Value.Set(packageTimeout); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
