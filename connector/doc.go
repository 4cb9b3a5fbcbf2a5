// Package connector holds the contracts between the engine and the outside
// world, and a registry of the connectors by name; one sub-package per
// connector registers itself in init (connector/all imports them all):
// kafka (source and sink), datagen and nexmark (generated sources),
// postgres-cdc (tables mirroring PostgreSQL tables, alone or created FROM a
// CDC source that holds no rows itself: SourceConnector.Tables), blackhole,
// file and postgres (sinks). A SourceConnector parses its typed
// options into a Source, whose SplitEnumerator lists splits and whose
// SplitReader reads them from opaque offsets; a SinkConnector parses its
// options into a SinkOpener of Sinks. A connector depends only on
// sql/types: executor/stream drives it, split by split for sources and
// actor by actor for sinks. Connectors that reach other hosts name them
// (Endpoints) and dial through Dial, which enforces the operator's
// allow-list (SetAllowedHosts); PeerError marks a remote host's text in an
// error so that Redact can hide it from non-superusers.
package connector
