// Package all registers every connector: import it for its side effect.
package all

import (
	_ "github.com/tributary/tributary/connector/blackhole"   // registers blackhole
	_ "github.com/tributary/tributary/connector/datagen"     // registers datagen
	_ "github.com/tributary/tributary/connector/file"        // registers file
	_ "github.com/tributary/tributary/connector/kafka"       // registers kafka
	_ "github.com/tributary/tributary/connector/nexmark"     // registers nexmark
	_ "github.com/tributary/tributary/connector/postgres"    // registers postgres
	_ "github.com/tributary/tributary/connector/postgrescdc" // registers postgres-cdc
)
