package session

import (
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// varDef is a session variable: its default and how a SET value is checked
// and normalised.
type varDef struct {
	def         string
	description string
	check       func(v string) (string, error)
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
	"application_name":                    {"", "Sets the application name to be reported.", anyValue},
	"client_encoding":                     {"UTF8", "Sets the client's character set encoding.", oneOf("UTF8")},
	"datestyle":                           {"ISO, MDY", "Sets the display format for date and time values.", anyValue},
	"intervalstyle":                       {"postgres", "Sets the display format for interval values.", oneOf("postgres")},
	"timezone":                            {"UTC", "Sets the time zone for displaying and interpreting time stamps.", timezoneValue},
	"search_path":                         {"\"$user\", public", "Sets the schema search order for names that are not schema-qualified.", anyValue},
	"extra_float_digits":                  {"1", "Sets the number of digits displayed for floating-point values.", anyValue},
	"statement_timeout":                   {"0", "Sets the maximum allowed duration of any statement.", anyValue},
	"lock_timeout":                        {"0", "Sets the maximum allowed duration of any wait for a lock.", anyValue},
	"idle_in_transaction_session_timeout": {"0", "Sets the maximum allowed idle time between queries, when in a transaction.", anyValue},
	"standard_conforming_strings":         {"on", "Causes '...' strings to treat backslashes literally.", oneOf("on")},
	"transaction_isolation":               {"read committed", "Sets the current transaction's isolation level.", anyValue},
	"default_transaction_isolation":       {"read committed", "Sets the transaction isolation level of each new transaction.", anyValue},
	"transaction_read_only":               {"off", "Sets the current transaction's read-only status.", anyValue},
	"server_version":                      {"15.0", "Shows the server version.", nil},
	"server_version_num":                  {"150000", "Shows the server version as an integer.", nil},
	"server_encoding":                     {"UTF8", "Shows the server (database) character set encoding.", nil},
	"integer_datetimes":                   {"on", "Shows whether datetimes are integer based.", nil},
	"max_identifier_length":               {"63", "Shows the maximum identifier length.", nil},
	"is_superuser":                        {"on", "Shows whether the current user is a superuser.", nil},
	"row_security":                        {"on", "Enable row security.", anyValue},
	"client_min_messages":                 {"notice", "Sets the message levels that are sent to the client.", anyValue},
	"synchronous_commit":                  {"on", "Sets the current transaction's synchronization level.", anyValue},
	"streaming_parallelism":               {strconv.Itoa(runtime.NumCPU()), "Parallelism of new streaming jobs (0 = number of cores).", intValue(0)},
	"backfill_rate_limit":                 {"default", "Rows per second a new job's backfill may read (0 pauses; default = unlimited; 'adaptive').", rateLimitValue},
	"source_rate_limit":                   {"default", "Rows per second a new connector table's source may produce over all splits (0 pauses; default = the connector's own rate).", sourceRateValue},
	"sink_rate_limit":                     {"default", "Rows per second a new sink may write (default = unlimited).", rateLimitValue},
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
	}},
	"background_ddl":                     {"false", "Return from CREATE MATERIALIZED VIEW/SINK before backfill completes.", boolValue},
	"streaming_use_snapshot_backfill":    {"true", "Backfill new jobs from one fixed snapshot plus the change log of storage versions, outside the upstream's barrier path; false = arrangement backfill.", boolValue},
	"backfill_target_barrier_latency_ms": {"2000", "Barrier latency target of adaptive backfill rate limiting.", intValue(1)},
	"rw_implicit_flush":                  {"false", "Kept for RisingWave compatibility: DML always waits for its commit.", boolValue},
	"query_mode":                         {"local", "Kept for RisingWave compatibility.", anyValue},
}

// vars holds one session's variable values.
type vars struct {
	values map[string]string
}

func newVars() *vars { return &vars{values: map[string]string{}} }

func (v *vars) get(name string) (string, error) {
	name = strings.ToLower(name)
	d, ok := varDefs[name]
	if !ok {
		return "", types.Errorf(types.ErrUndefinedObject, "unrecognized configuration parameter \"%s\"", name)
	}
	if val, ok := v.values[name]; ok {
		return val, nil
	}
	return d.def, nil
}

func (v *vars) set(name string, value string, reset bool) error {
	name = strings.ToLower(name)
	d, ok := varDefs[name]
	if !ok {
		return types.Errorf(types.ErrUndefinedObject, "unrecognized configuration parameter \"%s\"", name)
	}
	if d.check == nil {
		return types.Errorf(types.ErrCantChangeParam, "parameter \"%s\" cannot be changed", name)
	}
	if reset {
		delete(v.values, name)
		return nil
	}
	norm, err := d.check(value)
	if err != nil {
		return err
	}
	v.values[name] = norm
	return nil
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
