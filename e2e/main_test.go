package e2e

import (
	"os"
	"testing"

	"github.com/tributary/tributary/e2e/e2etest"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m)) }
