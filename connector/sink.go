package connector

import (
	"context"
	"sort"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Sink delivers a streaming job's changes to an external system, epoch by
// epoch. One Sink serves one actor; it is not used concurrently.
type Sink interface {
	// Write takes one chunk of the open epoch's changes (its visible rows, with
	// their ops).
	Write(ctx context.Context, c *types.Chunk) error
	// Commit ends the epoch: what was written since the last Commit is
	// delivered when it returns.
	Commit(ctx context.Context, epoch uint64) error
	// Close releases the sink's resources.
	Close() error
}

// MultiEpochCommitter is implemented by sinks whose Commit may cover the
// changes of several epochs at once (committed as the last of them): a
// decoupled sink's reader then catches up in fewer, larger commits. Sinks
// whose output is named by epoch (files) do not, so that a replayed epoch
// rewrites the same output.
type MultiEpochCommitter interface {
	CommitsEpochsTogether() bool
}

// Column is one column of the rows a sink receives.
type Column struct {
	Name string
	Type types.T
	// Hidden columns (a generated row id) are part of the rows but not of
	// what the sink shows.
	Hidden bool
}

// SinkTarget is what a sink connector instance is opened for: the sink's
// columns, its key, and the writer number of the actor that owns it (stable
// across restarts, distinct among the sink's actors).
type SinkTarget struct {
	Sink    string // the sink's qualified name
	Columns []Column
	// Key names the columns that identify a row of the sink's stream (nil
	// when they are not all visible: an upsert then needs primary_key).
	Key    []string
	Writer int
}

// SinkConnector is a sink connector as registered by name.
type SinkConnector struct {
	Name string
	// Decoupled: a sink of this connector writes through a log store unless
	// sink_decouple says otherwise.
	Decoupled bool
	// Formats: the connector takes a FORMAT ... ENCODE clause.
	Formats bool
	// Parse checks the WITH options (keys lower-cased) and the FORMAT clause
	// ("" when absent) and returns what opens the sink's instances; its
	// errors name the bad option.
	Parse func(props map[string]string, format, encode string) (SinkOpener, error)
	// Endpoints lists the host:port addresses the options make the
	// connector connect to (network.go); nil for connectors that reach no
	// other host.
	Endpoints func(props map[string]string) []string
}

// SinkOpener opens the instances of a parsed sink.
type SinkOpener interface {
	// Open opens the instance of one sink actor.
	Open(ctx context.Context, t SinkTarget) (Sink, error)
	// Check verifies at CREATE that the target answers and exists (a table,
	// a topic), so that a wrong one is refused before the sink starts.
	Check(ctx context.Context, t SinkTarget) error
}

// OpenCheck is a Check for connectors whose Open reaches the target: open
// one instance and close it.
func OpenCheck(ctx context.Context, o SinkOpener, t SinkTarget) error {
	s, err := o.Open(ctx, t)
	if err != nil {
		return err
	}
	return s.Close()
}

// RegisterSink registers a sink connector under its name (lower case);
// connectors register themselves in init.
func RegisterSink(c SinkConnector) {
	registry.Lock()
	defer registry.Unlock()
	registry.sinks[strings.ToLower(c.Name)] = c
}

// LookupSink returns the sink connector named by props["connector"]
// (matched case-insensitively), or an error naming the known ones.
func LookupSink(props map[string]string) (SinkConnector, error) {
	name := props["connector"]
	registry.RLock()
	defer registry.RUnlock()
	if c, ok := registry.sinks[strings.ToLower(name)]; ok {
		return c, nil
	}
	var known []string
	for n := range registry.sinks {
		known = append(known, n)
	}
	sort.Strings(known)
	if name == "" {
		return SinkConnector{}, types.Errorf(types.ErrInvalidParameter, "a sink needs a connector option (connector = %s)", quoteList(known))
	}
	return SinkConnector{}, types.Errorf(types.ErrUnsupported, "unsupported sink type %s: sink connector %q is not supported (supported: %s)", name, name, strings.Join(known, ", "))
}

// ParseSink looks the sink connector of props up and parses its options.
func ParseSink(props map[string]string, format, encode string) (SinkConnector, SinkOpener, error) {
	c, err := LookupSink(props)
	if err != nil {
		return c, nil, err
	}
	if (format != "" || encode != "") && !c.Formats {
		var with []string
		registry.RLock()
		for n, s := range registry.sinks {
			if s.Formats {
				with = append(with, n)
			}
		}
		registry.RUnlock()
		sort.Strings(with)
		return c, nil, types.Errorf(types.ErrUnsupported, "FORMAT ... ENCODE is not supported by the %s sink connector (only by %s)", c.Name, strings.Join(with, ", "))
	}
	o, err := c.Parse(props, format, encode)
	return c, o, err
}
