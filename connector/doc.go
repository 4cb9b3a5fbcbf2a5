// Package connector holds the sources and sinks that talk to the outside
// world, one sub-package per connector (connector/datagen and
// connector/nexmark today). A connector depends only on sql/types: the
// stream executors in executor/stream drive it, split by split.
package connector
