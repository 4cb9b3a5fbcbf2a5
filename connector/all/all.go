// Package all registers every connector: import it for its side effect.
package all

import (
	_ "github.com/tributary/tributary/connector/datagen" // registers datagen
	_ "github.com/tributary/tributary/connector/kafka"   // registers kafka
	_ "github.com/tributary/tributary/connector/nexmark" // registers nexmark
)
