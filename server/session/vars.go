package session

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// varDef is a session variable: its default and how a SET value is checked
// and normalised.
type varDef struct {
	def         string
	description string
	check       func(v string) (string, error)
	// ignored, for a setting accepted for clients' sake, says why a checked
	// value is not honoured ("" when it is): SET then sends it as a NOTICE,
	// so nothing is silently ignored.
	ignored func(v string) string
}

// durationValue parses a PostgreSQL time setting: an integer in
// milliseconds, or a number with one of us, ms, s, min, h, d; it is shown
// in the largest unit that keeps it whole, as PostgreSQL shows it.
func durationValue(v string) (string, error) {
	ms, err := parseMillis(v)
	if err != nil {
		return "", err
	}
	if ms == 0 {
		return "0", nil
	}
	for _, u := range []struct {
		name string
		ms   int64
	}{{"d", 86400000}, {"h", 3600000}, {"min", 60000}, {"s", 1000}} {
		if ms%u.ms == 0 {
			return strconv.FormatInt(ms/u.ms, 10) + u.name, nil
		}
	}
	return strconv.FormatInt(ms, 10) + "ms", nil
}

// parseMillis reads a value durationValue accepted (or its output).
func parseMillis(v string) (int64, error) {
	s := strings.TrimSpace(strings.ToLower(v))
	num := strings.TrimRightFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' })
	unit := strings.TrimSpace(s[len(num):])
	mult := map[string]float64{"": 1, "us": 0.001, "ms": 1, "s": 1000, "min": 60000, "h": 3600000, "d": 86400000}[unit]
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if mult == 0 || err != nil || f < 0 || f*mult > math.MaxInt32 {
		return 0, types.Errorf(types.ErrInvalidParameter, "invalid value %q: expected a duration in milliseconds or with a unit (us, ms, s, min, h, d), 0 to 2147483647 ms", v)
	}
	ms := int64(math.Round(f * mult))
	if ms == 0 && f > 0 {
		ms = 1 // PostgreSQL rounds a positive value below 1 ms up
	}
	return ms, nil
}

// millisSetting returns a duration variable's value (0 when unset or off).
func (v *vars) millisSetting(name string) time.Duration {
	val, err := v.get(name)
	if err != nil {
		return 0
	}
	ms, err := parseMillis(val)
	if err != nil {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

func notHonouredUnless(ok func(v string) bool, why string) func(string) string {
	return func(v string) string {
		if ok(v) {
			return ""
		}
		return why
	}
}

func anyValue(v string) (string, error) { return v, nil }

func boolValue(v string) (string, error) {
	switch strings.ToLower(v) {
	case "true", "on", "yes", "1", "t":
		return "true", nil
	case "false", "off", "no", "0", "f":
		return "false", nil
	}
	return "", types.Errorf(types.ErrInvalidParameter, "invalid value %q: expected a boolean", v)
}

func intValue(min int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			return "", types.Errorf(types.ErrInvalidParameter, "invalid value %q: expected an integer >= %d", v, min)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

func intRange(lo, hi int64) func(string) (string, error) {
	return func(v string) (string, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < lo || n > hi {
			return "", types.Errorf(types.ErrInvalidParameter, "invalid value %q: expected an integer from %d to %d", v, lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

func onOff(v string) (string, error) {
	b, err := boolValue(v)
	if b == "true" {
		return "on", err
	}
	if b == "false" {
		return "off", err
	}
	return "", err
}

func isolationValue(v string) (string, error) {
	return oneOf("serializable", "repeatable read", "read committed", "read uncommitted")(strings.Join(strings.Fields(v), " "))
}

func isolationIgnored(v string) string {
	if v == "repeatable read" {
		return ""
	}
	return "isolation level " + strings.ToUpper(v) + " is not honoured: transaction blocks run at REPEATABLE READ " +
		"(snapshot isolation: one snapshot per block, the first committer of a row wins, the other gets 40001)"
}

func oneOf(vals ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		for _, x := range vals {
			if strings.EqualFold(v, x) {
				return x, nil
			}
		}
		return "", types.Errorf(types.ErrInvalidParameter, "invalid value %q: expected one of %s", v, strings.Join(vals, ", "))
	}
}

func timezoneValue(v string) (string, error) {
	switch strings.ToLower(v) {
	case "utc", "etc/utc", "gmt", "z", "zulu", "+00", "+00:00", "0":
		return "UTC", nil
	}
	return "", types.Errorf(types.ErrUnsupported, "time zone %q is not supported: Tributary sessions run in UTC", v)
}

func rateLimitValue(v string) (string, error) {
	if strings.EqualFold(v, "default") {
		return "default", nil
	}
	if strings.EqualFold(v, "adaptive") {
		return "adaptive", nil
	}
	return intValue(0)(v)
}

func sourceRateValue(v string) (string, error) {
	if strings.EqualFold(v, "default") {
		return "default", nil
	}
	return intValue(0)(v)
}

var varDefs = map[string]varDef{
	"application_name": {"", "Sets the application name to be reported.", anyValue, nil},
	"client_encoding":  {"UTF8", "Sets the client's character set encoding.", oneOf("UTF8"), nil},
	"datestyle": {"ISO, MDY", "Sets the display format for date and time values.", anyValue, notHonouredUnless(func(v string) bool {
		for _, w := range strings.FieldsFunc(strings.ToLower(v), func(r rune) bool { return r == ',' || r == ' ' }) {
			if w != "iso" && w != "mdy" && w != "us" && w != "noneuropean" {
				return false
			}
		}
		return true
	}, "DateStyle is not honoured: Tributary writes dates in ISO and reads them as ISO, MDY")},
	"intervalstyle": {"postgres", "Sets the display format for interval values.", oneOf("postgres"), nil},
	"timezone":      {"UTC", "Sets the time zone for displaying and interpreting time stamps.", timezoneValue, nil},
	"search_path":   {"\"$user\", public", "Sets the schema search order for names that are not schema-qualified.", anyValue, nil},
	"extra_float_digits": {"1", "Sets the number of digits displayed for floating-point values.", intRange(-15, 3), notHonouredUnless(func(v string) bool { return v != "" && v[0] != '-' && v != "0" },
		"extra_float_digits below 1 is not honoured: Tributary always writes the shortest exact form of a float")},
	"statement_timeout": {"0", "Sets the maximum allowed duration of any statement.", durationValue, nil},
	"lock_timeout": {"0", "Sets the maximum allowed duration of any wait for a lock.", durationValue, notHonouredUnless(func(v string) bool { return v == "0" },
		"lock_timeout is not honoured: Tributary has no lock waits a client can bound (statement_timeout bounds the whole statement)")},
	"idle_in_transaction_session_timeout": {"0", "Sets the maximum allowed idle time between queries, when in a transaction.", durationValue, nil},
	"standard_conforming_strings":         {"on", "Causes '...' strings to treat backslashes literally.", oneOf("on"), nil},
	"transaction_isolation":               {"repeatable read", "Sets the current transaction's isolation level.", isolationValue, isolationIgnored},
	"default_transaction_isolation":       {"repeatable read", "Sets the transaction isolation level of each new transaction.", isolationValue, isolationIgnored},
	"transaction_read_only": {"off", "Sets the current transaction's read-only status.", onOff, notHonouredUnless(func(v string) bool { return v == "off" },
		"transaction_read_only is not honoured: writes are still allowed")},
	"server_version":        {"15.0", "Shows the server version.", nil, nil},
	"server_version_num":    {"150000", "Shows the server version as an integer.", nil, nil},
	"server_encoding":       {"UTF8", "Shows the server (database) character set encoding.", nil, nil},
	"integer_datetimes":     {"on", "Shows whether datetimes are integer based.", nil, nil},
	"max_identifier_length": {"63", "Shows the maximum identifier length.", nil, nil},
	"is_superuser":          {"on", "Shows whether the current user is a superuser.", nil, nil},
	"row_security":          {"on", "Enable row security.", anyValue, nil},
	"password_encryption":   {"scram-sha-256", "Chooses the algorithm for encrypting passwords.", oneOf("scram-sha-256", "md5"), nil},
	"client_min_messages": {"notice", "Sets the message levels that are sent to the client.", oneOf("debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"),
		notHonouredUnless(func(v string) bool { return v == "notice" }, "client_min_messages is not honoured: Tributary sends every NOTICE and WARNING")},
	"synchronous_commit": {"on", "Sets the current transaction's synchronization level.", oneOf("on", "off", "local", "remote_write", "remote_apply"),
		notHonouredUnless(func(v string) bool { return v != "off" }, "synchronous_commit = off is not honoured: every write waits for its commit")},
	"streaming_parallelism": {strconv.Itoa(runtime.NumCPU()), "Parallelism of new streaming jobs (0 = number of cores).", intValue(0), nil},
	"backfill_rate_limit":   {"default", "Rows per second a new job's backfill may read (0 pauses; default = unlimited; 'adaptive').", rateLimitValue, nil},
	"source_rate_limit":     {"default", "Rows per second a new connector table's source may produce over all splits (0 pauses; default = the connector's own rate).", sourceRateValue, nil},
	"sink_rate_limit":       {"default", "Rows per second a new sink may write (default = unlimited).", rateLimitValue, nil},
	"sink_decouple": {"default", "Put a persisted log store between a new sink and its upstream: default (decoupled for external connectors, coupled for blackhole), true or false.", func(v string) (string, error) {
		switch strings.ToLower(v) {
		case "default":
			return "default", nil
		case "true", "on", "enable":
			return "true", nil
		case "false", "off", "disable":
			return "false", nil
		}
		return "", types.Errorf(types.ErrInvalidParameter, "invalid value %q for sink_decouple: expected default, true or false", v)
	}, nil},
	"background_ddl":                              {"false", "Return from CREATE MATERIALIZED VIEW/SINK before backfill completes.", boolValue, nil},
	"streaming_use_snapshot_backfill":             {"true", "Backfill new jobs from one fixed snapshot plus the change log of storage versions, outside the upstream's barrier path; false = arrangement backfill.", boolValue, nil},
	"streaming_use_arrangement_backfill":          {"true", "Accepted for RisingWave compatibility (its choice between arrangement and no-shuffle backfill); Tributary's backfills are always arrangement-style, and streaming_use_snapshot_backfill picks snapshot backfill.", boolValue, nil},
	"backfill_target_barrier_latency_ms":          {"2000", "Barrier latency target of adaptive backfill rate limiting.", intValue(1), nil},
	"rw_implicit_flush":                           {"false", "true: DML also waits until the sinks into tables downstream of its writes delivered them (as FLUSH); it always waits for its commit.", boolValue, nil},
	"streaming_parallelism_for_materialized_view": {"default", "Parallelism of new materialized views (default: streaming_parallelism).", parallelismValue, nil},
	"streaming_parallelism_for_sink":              {"default", "Parallelism of new sinks (default: streaming_parallelism).", parallelismValue, nil},
	"streaming_parallelism_for_table":             {"default", "Accepted for RisingWave compatibility: a table's writes are applied by each statement, not by actors.", parallelismValue, rwIgnored},
	"streaming_parallelism_for_source":            {"default", "Accepted for RisingWave compatibility: ALTER SOURCE ... SET PARALLELISM sets a shared source's readers.", parallelismValue, rwIgnored},
	"streaming_parallelism_for_index":             {"default", "Accepted for RisingWave compatibility (no indexes yet).", parallelismValue, rwIgnored},
	"streaming_parallelism_for_backfill":          {"default", "Accepted for RisingWave compatibility: a backfill runs in its job's actors.", parallelismValue, rwIgnored},
	"streaming_max_parallelism":                   {"256", "The most actors a fragment may have (the vnode count).", oneOf("256"), nil},
	// RisingWave's planner and executor knobs, accepted so its scripts run;
	// Tributary plans these cases its own way (a NOTICE says so when set).
	"rw_streaming_enable_delta_join":                    {"false", "Accepted for RisingWave compatibility: joins are hash joins.", boolValue, rwIgnored},
	"rw_streaming_over_window_cache_policy":             {"full", "Accepted for RisingWave compatibility.", anyValue, rwIgnored},
	"rw_streaming_allow_jsonb_in_stream_key":            {"false", "Accepted for RisingWave compatibility.", boolValue, rwIgnored},
	"enable_locality_backfill":                          {"false", "Accepted for RisingWave compatibility.", boolValue, rwIgnored},
	"enable_two_phase_agg":                              {"true", "Accepted for RisingWave compatibility: aggregation runs in two phases when it can.", boolValue, rwIgnored},
	"enable_index_selection":                            {"true", "Accepted for RisingWave compatibility (no indexes yet).", boolValue, rwIgnored},
	"streaming_enable_unaligned_join":                   {"false", "Accepted for RisingWave compatibility.", boolValue, rwIgnored},
	"streaming_unsafe_allow_unmaterialized_impure_expr": {"false", "Accepted for RisingWave compatibility.", boolValue, rwIgnored},
	"streaming_join_encoding":                           {"memory_optimized", "Accepted for RisingWave compatibility.", anyValue, rwIgnored},
	"streaming_asof_join_use_cache":                     {"true", "Accepted for RisingWave compatibility.", boolValue, rwIgnored},
	"query_mode":                                        {"local", "Kept for RisingWave compatibility.", oneOf("auto", "local", "distributed"), notHonouredUnless(func(v string) bool { return v != "distributed" }, "query_mode = distributed is not honoured: queries run on this node")},
}

// vars holds one session's variable values.
type vars struct {
	values map[string]string
}

func newVars() *vars { return &vars{values: map[string]string{}} }

// varAliases are RisingWave's other names of variables.
var varAliases = map[string]string{"implicit_flush": "rw_implicit_flush"}

// rwIgnored is the NOTICE of a RisingWave knob set to anything.
func rwIgnored(string) string {
	return "this RisingWave setting is accepted for compatibility and has no effect in Tributary"
}

// parallelismValue is an integer between 1 and 256, or default (0 too).
func parallelismValue(v string) (string, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "default" || v == "0" || v == "adaptive" {
		return "default", nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxParallelism {
		return "", types.Errorf(types.ErrInvalidParameter, "parallelism must be an integer between 1 and %d, or DEFAULT", maxParallelism)
	}
	return strconv.Itoa(n), nil
}

func (v *vars) get(name string) (string, error) {
	name = strings.ToLower(name)
	if a, ok := varAliases[name]; ok {
		name = a
	}
	d, ok := varDefs[name]
	if !ok {
		return "", types.Errorf(types.ErrUndefinedObject, "unrecognized configuration parameter \"%s\"", name)
	}
	if val, ok := v.values[name]; ok {
		return val, nil
	}
	return d.def, nil
}

// set changes (or with reset, resets) a variable. A non-empty notice says
// the value is accepted but not honoured; the caller sends it to the client.
func (v *vars) set(name string, value string, reset bool) (notice string, err error) {
	name = strings.ToLower(name)
	if a, ok := varAliases[name]; ok {
		name = a
	}
	d, ok := varDefs[name]
	if !ok {
		return "", types.Errorf(types.ErrUndefinedObject, "unrecognized configuration parameter \"%s\"", name)
	}
	if d.check == nil {
		return "", types.Errorf(types.ErrCantChangeParam, "parameter \"%s\" cannot be changed", name)
	}
	if reset {
		delete(v.values, name)
		return "", nil
	}
	norm, err := d.check(value)
	if err != nil {
		return "", err
	}
	v.values[name] = norm
	if d.ignored != nil {
		notice = d.ignored(norm)
	}
	return notice, nil
}

func (v *vars) all() [][3]string {
	names := make([]string, 0, len(varDefs))
	for n := range varDefs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([][3]string, 0, len(names))
	for _, n := range names {
		val, _ := v.get(n)
		out = append(out, [3]string{n, val, varDefs[n].description})
	}
	return out
}

// implicitFlush runs FLUSH's wait after a DML statement when
// rw_implicit_flush is on: what sinks into tables make of its writes is in
// their tables when it returns, as in RisingWave.
func (s *Session) implicitFlush(ctx context.Context) error {
	if v, _ := s.vars.get("rw_implicit_flush"); v != "true" {
		return nil
	}
	if err := s.eng.coord().Flush(ctx); err != nil {
		return fmt.Errorf("implicit flush: %w", err)
	}
	return nil
}
