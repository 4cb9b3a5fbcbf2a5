package expr

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// Expected values were produced by PostgreSQL 15 (session time zone UTC) with
// "SELECT <expr>". Set TRIBUTARY_PG_CHECK to a script that runs one query
// given as $1 (psql -XAt -P null=NULL -c "SET TIME ZONE 'UTC'" -c "$1") to
// re-verify them against a live server.
var funcCases = []struct{ expr, want string }{
	// arithmetic and result types
	{"1 + 2", "3"},
	{"7 / 2", "3"},
	{"-7 / 2", "-3"},
	{"-7 % 3", "-1"},
	{"5.0 % 3", "2.0"},
	{"5 / 2.0", "2.5000000000000000"},
	{"1 / 3.0", "0.33333333333333333333"},
	{"10::numeric / 4", "2.5000000000000000"},
	{"2::int2 + 3::int2", "5"},
	{"1.5 * 2.25", "3.375"},
	{"0.1::float8 + 0.2::float8", "0.30000000000000004"},
	{"1.5::float4 * 3::float4", "4.5"},
	{"2 ^ 3", "8"},
	{"-(5)", "-5"},
	{"9223372036854775807::int8 - 1", "9223372036854775806"},
	{"100000.123456789::numeric(10,2)", "100000.12"},
	// casts
	{"2.5::float8::int4", "2"},
	{"3.5::float8::int4", "4"},
	{"2.5::int4", "3"},
	{"-2.5::numeric::int4", "-3"},
	{"'12'::int4 + 1", "13"},
	{"' 42 '::int8", "42"},
	{"true::int4", "1"},
	{"0::bool", "f"},
	{"(1/3::float8)::numeric", "0.333333333333333"},
	{"0.1::float4::float8", "0.10000000149011612"},
	{"12.5::text", "12.5"},
	{"'abcdef'::varchar(3)", "abc"},
	{"'2024-01-31'::date::timestamp", "2024-01-31 00:00:00"},
	{"'2024-01-31 10:11:12'::timestamp::date", "2024-01-31"},
	{"'2024-01-31 10:11:12'::timestamp::time", "10:11:12"},
	{"'2024-01-31 10:11:12+02'::timestamptz", "2024-01-31 08:11:12+00"},
	{"'12:00'::time::interval", "12:00:00"},
	{"'25 hours'::interval::time", "01:00:00"},
	{"'{\"b\": 1, \"a\": [1, 2]}'::jsonb::text", "{\"a\": [1, 2], \"b\": 1}"},
	{"'12'::jsonb::int4", "12"},
	{"'1.5'::jsonb::numeric", "1.5"},
	// comparisons and logic
	{"1 < 2", "t"},
	{"1 = 1.0", "t"},
	{"'a' < 'b'", "t"},
	{"1 = NULL", "NULL"},
	{"NULL <=> NULL", "t"},
	{"1 <=> NULL", "f"},
	{"true and NULL", "NULL"},
	{"false and NULL", "f"},
	{"true or NULL", "t"},
	{"not NULL::bool", "NULL"},
	{"'2024-01-01'::date < '2024-01-01 00:00:01'::timestamp", "t"},
	{"1 in (1, 2)", "t"},
	{"3 in (1, NULL)", "NULL"},
	{"NULL::int4 in (1, 2)", "NULL"},
	{"2 between 1 and 3", "t"},
	{"coalesce(NULL, 2, 3)", "2"},
	{"coalesce(NULL::int4, 1.5)", "1.5"},
	{"nullif(1, 1)", "NULL"},
	{"nullif(1, 2)", "1"},
	{"greatest(1, 3.5, 2)", "3.5"},
	{"least('b', 'a', NULL)", "a"},
	// strings
	{"'ab' || 'cd'", "abcd"},
	{"'a' || 1", "a1"},
	{"1 || 'a'", "1a"},
	{"'a' || NULL", "NULL"},
	{"length('héllo')", "5"},
	{"octet_length('héllo')", "6"},
	{"upper('héllo')", "HÉLLO"},
	{"lower('ABC')", "abc"},
	{"substr('hello', 2)", "ello"},
	{"substr('hello', 2, 3)", "ell"},
	{"substr('hello', 0, 3)", "he"},
	{"substr('hello', -1, 3)", "h"},
	{"substring('hello', 10)", ""},
	{"strpos('hello', 'l')", "3"},
	{"replace('abcabc', 'b', 'XY')", "aXYcaXYc"},
	{"trim('  x  ')", "x"},
	{"btrim('xxaxx', 'x')", "a"},
	{"ltrim('  x ')", "x "},
	{"rtrim('xyy', 'y')", "x"},
	{"lpad('hi', 5)", "   hi"},
	{"lpad('hi', 5, 'ab')", "abahi"},
	{"rpad('hello', 3)", "hel"},
	{"concat('a', NULL, 1, true)", "a1t"},
	{"concat_ws(',', 'a', NULL, 'b')", "a,b"},
	{"split_part('a,b,c', ',', 2)", "b"},
	{"pg__regexp_match_group('a=1&channel_id=42&x', '(&|^)channel_id=([^&]*)', 2)", "42"},
	{"pg__regexp_match_group('abc', 'b', 1)", "b"},
	{"split_part('a,b,c', ',', -1)", "c"},
	{"split_part('a,b,c', ',', 5)", ""},
	{"left('hello', 2)", "he"},
	{"left('hello', -2)", "hel"},
	{"right('hello', 2)", "lo"},
	{"right('hello', -2)", "llo"},
	{"reverse('abc')", "cba"},
	{"repeat('ab', 3)", "ababab"},
	{"starts_with('hello', 'he')", "t"},
	{"md5('abc')", "900150983cd24fb0d6963f7d28e17f72"},
	{"initcap('hello wORLD foo_bar')", "Hello World Foo_Bar"},
	{"ascii('A')", "65"},
	{"chr(65)", "A"},
	{"to_hex(255)", "ff"},
	{"to_hex(-1)", "ffffffff"},
	{"to_hex(-1::int8)", "ffffffffffffffff"},
	{"format('%s-%s', 'a', 1)", "a-1"},
	{"'abc' like 'a%'", "t"},
	{"'abc' like 'a_c'", "t"},
	{"'abc' like 'b%'", "f"},
	{"'a%c' like 'a\\%c'", "t"},
	{"'abc' ilike 'A%C'", "t"},
	{"'abc' ~ '^a.c$'", "t"},
	{"'ABC' ~* 'b'", "t"},
	{"regexp_replace('foobar', 'o+', 'X')", "fXbar"},
	{"translate('12345', '143', 'ax')", "a2x5"},
	// math
	{"abs(-5)", "5"},
	{"abs(-5.5)", "5.5"},
	{"ceil(1.2)", "2"},
	{"ceil(1.2::float8)", "2"},
	{"floor(-1.2)", "-2"},
	{"round(2.5)", "3"},
	{"round(2.5::float8)", "2"},
	{"round(1234.5678, 2)", "1234.57"},
	{"round(1234.5678, -2)", "1200"},
	{"trunc(1234.5678, 1)", "1234.5"},
	{"sqrt(2)", "1.4142135623730951"},
	{"sqrt(2::numeric)", "1.414213562373095"},
	{"sqrt(16::numeric)", "4.000000000000000"},
	{"power(2, 10)", "1024"},
	{"power(2::numeric, 0.5)", "1.4142135623730950"},
	{"exp(1::numeric)", "2.7182818284590452"},
	{"ln(2::numeric)", "0.6931471805599453"},
	{"log(100::numeric)", "2.0000000000000000"},
	{"log(100)", "2"},
	{"mod(7, 3)", "1"},
	{"mod(7.5, 2)", "1.5"},
	{"sign(-3.5)", "-1"},
	// date and time
	{"'2024-01-31'::date + 1", "2024-02-01"},
	{"'2024-03-01'::date - '2024-01-01'::date", "60"},
	{"'2024-01-31'::date + '1 month'::interval", "2024-02-29 00:00:00"},
	{"'2024-01-01 10:00'::timestamp - '2023-12-30 09:00'::timestamp", "2 days 01:00:00"},
	{"'2024-01-01 10:00'::timestamp + '1 day 2 hours'::interval", "2024-01-02 12:00:00"},
	{"'2024-01-01 10:00+00'::timestamptz - '1 year'::interval", "2023-01-01 10:00:00+00"},
	{"'10:00'::time + '3 hours'::interval", "13:00:00"},
	{"'10:00'::time - '09:30'::time", "00:30:00"},
	{"'1 day'::interval * 1.5::float8", "1 day 12:00:00"},
	{"'1 month'::interval / 2::float8", "15 days"},
	{"'1 day'::interval + '1 hour'::interval", "1 day 01:00:00"},
	{"-'1 day'::interval", "-1 days"},
	{"'2024-01-01'::date + '10:30'::time", "2024-01-01 10:30:00"},
	{"date_trunc('month', '2024-05-17 10:11:12'::timestamp)", "2024-05-01 00:00:00"},
	{"date_trunc('week', '2024-05-17 10:11:12'::timestamp)", "2024-05-13 00:00:00"},
	{"date_trunc('hour', '2024-05-17 10:11:12+00'::timestamptz)", "2024-05-17 10:00:00+00"},
	{"date_trunc('quarter', '2024-05-17'::timestamp)", "2024-04-01 00:00:00"},
	{"date_trunc('hour', '1 day 10:11:12'::interval)", "1 day 10:00:00"},
	{"date_part('second', '2024-01-01 10:00:05.5'::timestamp)", "5.5"},
	{"date_part('dow', '2024-05-17'::timestamp)", "5"},
	{"to_char('2024-05-07 14:05:09.123'::timestamp, 'YYYY-MM-DD HH24:MI:SS.MS')", "2024-05-07 14:05:09.123"},
	{"to_char('2024-05-07 14:05:09'::timestamp, 'Mon DD YYYY HH12 AM Day')", "May 07 2024 02 PM Tuesday  "},
	{"to_timestamp(1700000000.5::float8)", "2023-11-14 22:13:20.5+00"},
	{"to_timestamp('2024-05-07 14:05', 'YYYY-MM-DD HH24:MI')", "2024-05-07 14:05:00+00"},
	{"make_date(2024, 2, 29)", "2024-02-29"},
	{"age('2024-05-17'::timestamp, '2023-03-20'::timestamp)", "1 year 1 mon 28 days"},
	// jsonb
	{"'{\"a\": {\"b\": 2}}'::jsonb -> 'a'", "{\"b\": 2}"},
	{"'{\"a\": \"x\"}'::jsonb ->> 'a'", "x"},
	{"'[1, \"two\", 3]'::jsonb ->> 1", "two"},
	{"'[1, 2, 3]'::jsonb -> -1", "3"},
	{"'{\"a\": 1}'::jsonb -> 'z'", "NULL"},
	{"jsonb_typeof('[1]'::jsonb)", "array"},
	{"jsonb_array_length('[1, 2, 3]'::jsonb)", "3"},
	{"'{\"a\": 1}'::jsonb || '{\"b\": 2}'::jsonb", "{\"a\": 1, \"b\": 2}"},
	// misc
	{"pg_typeof(1)", "integer"},
	{"pg_typeof(1.5)", "numeric"},
	{"pg_typeof(1 + 1.5::float8)", "double precision"},
	{"pg_typeof(ceil(5))", "double precision"},
	{"pg_typeof(2::int2 + 3)", "integer"},
	{"pg_typeof(now() - now())", "interval"},
	{"pg_typeof('2024-01-01'::date - 1)", "date"},
}

// extractCases use extract(field, x), which PostgreSQL spells extract(field FROM x).
var extractCases = []struct{ field, arg, want string }{
	{"second", "'2024-01-01 10:00:05.5'::timestamp", "5.500000"},
	{"epoch", "'2024-01-01'::timestamp", "1704067200.000000"},
	{"day", "'2024-03-05'::date", "5"},
	{"epoch", "'2024-03-05'::date", "1709596800"},
	{"epoch", "'1 day 2 hours'::interval", "93600.000000"},
	{"year", "'2024-03-05 01:02:03'::timestamptz", "2024"},
	{"quarter", "'2024-05-05'::date", "2"},
	{"doy", "'2024-03-05'::date", "65"},
	{"week", "'2024-01-01'::date", "1"},
	{"milliseconds", "'10:00:05.5'::time", "5500.000"},
	{"hour", "'1 day 26 hours'::interval", "26"},
	{"month", "'14 months'::interval", "2"},
	{"epoch", "'1 year 1 mon'::interval", "34149600.000000"},
	{"century", "'2000-12-31'::date", "20"},
}

func TestFunctions(t *testing.T) {
	ctx := &Ctx{Now: 1700000000000000}
	for _, c := range funcCases {
		got, err := evalText(c.expr, ctx)
		if err != nil {
			t.Errorf("%s: error %v", c.expr, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
	for _, c := range extractCases {
		got, err := evalText("extract('"+c.field+"', "+c.arg+")", ctx)
		if err != nil {
			t.Errorf("extract(%s from %s): error %v", c.field, c.arg, err)
		} else if got != c.want {
			t.Errorf("extract(%s from %s) = %q, want %q", c.field, c.arg, got, c.want)
		}
	}
}

// TestAgainstPostgres re-verifies the expectations on a live PostgreSQL.
func TestAgainstPostgres(t *testing.T) {
	script := os.Getenv("TRIBUTARY_PG_CHECK")
	if script == "" {
		t.Skip("TRIBUTARY_PG_CHECK not set")
	}
	run := func(q, want string) {
		q = strings.ReplaceAll(q, "<=>", "IS NOT DISTINCT FROM")
		out, err := exec.Command(script, "SELECT "+q).CombinedOutput()
		got := strings.TrimRight(string(out), "\n")
		if err != nil {
			got = "ERROR " + got
		}
		got = strings.TrimPrefix(strings.TrimPrefix(got, "SET"), "\n")
		if got != want {
			t.Errorf("postgres: SELECT %s = %q, want %q", q, got, want)
		}
	}
	for _, c := range funcCases {
		run(c.expr, c.want)
	}
	for _, c := range extractCases {
		run("extract("+c.field+" from "+c.arg+")", c.want)
	}
}

func TestErrorKinds(t *testing.T) {
	cases := []struct {
		expr string
		kind error
	}{
		{"2147483647 + 1", types.ErrNumericOutOfRange},
		{"(-2147483648)::int4 * -1", types.ErrNumericOutOfRange},
		{"9223372036854775807::int8 + 1", types.ErrNumericOutOfRange},
		{"32767::int2 + 1::int2", types.ErrNumericOutOfRange},
		{"-((-9223372036854775808)::int8)", types.ErrNumericOutOfRange},
		{"-((-32768)::int2)", types.ErrNumericOutOfRange},
		{"abs((-2147483648)::int4)", types.ErrNumericOutOfRange},
		{"gcd((-9223372036854775808)::int8, 0::int8)", types.ErrNumericOutOfRange},
		{"gcd((-2147483648)::int4, (-2147483648)::int4)", types.ErrNumericOutOfRange},
		{"lcm(9223372036854775807::int8, 2::int8)", types.ErrNumericOutOfRange},
		{"lcm((-32768)::int2, 1::int2)", types.ErrNumericOutOfRange},
		{"lcm(4::int2, 6::int2)", nil},
		{"(-9223372036854775808)::int8 / -1::int8", types.ErrNumericOutOfRange},
		{"(-9223372036854775808)::int8 % -1::int8", nil},
		{"1 / 0", types.ErrDivisionByZero},
		{"1 % 0", types.ErrDivisionByZero},
		{"1.5 / 0", types.ErrDivisionByZero},
		{"1::float8 / 0::float8", types.ErrDivisionByZero},
		{"'1e308'::float8 * 10::float8", types.ErrNumericOutOfRange},
		{"3000000000::int8::int4", types.ErrNumericOutOfRange},
		{"'1e10'::float8::int4", types.ErrNumericOutOfRange},
		{"'abc'::int4", types.ErrInvalidText},
		{"'2024-13-01'::date", types.ErrDatetimeOverflow},
		{"1 + 'a'::text", types.ErrUndefinedFunction},
		{"foo(1)", types.ErrUndefinedFunction},
		{"upper(1)", types.ErrUndefinedFunction},
		{"true::int8", types.ErrCannotCoerce},
		{"1::int8::bool", types.ErrCannotCoerce},
		{"'2024-01-01'::date::int4", types.ErrCannotCoerce},
		{"sqrt(-1::float8)", types.ErrInvalidParameter},
		{"ln(0::numeric)", types.ErrInvalidParameter},
		{"'a' ~ '('", types.ErrInvalidRegex},
		{"split_part('a', ',', 0)", types.ErrInvalidParameter},
		{"chr(0)", types.ErrInvalidParameter},
		{"date_trunc('fortnight', '2024-01-01'::timestamp)", types.ErrInvalidParameter},
		{"extract('hour', '2024-01-01'::date)", types.ErrUnsupported},
		{"'[1]'::jsonb::int4", types.ErrInvalidParameter},
		{"'abcd'::varchar(2)::varchar(1)", nil},
		{"1.5::numeric(2,1) * 100::numeric(3,0)", nil},
		{"12345.6::numeric(4,1)", types.ErrNumericOutOfRange},
		{"make_date(2023, 2, 29)", types.ErrDatetimeOverflow},
	}
	for _, c := range cases {
		_, err := evalText(c.expr, nil)
		if c.kind == nil {
			if err != nil {
				t.Errorf("%s: unexpected error %v", c.expr, err)
			}
			continue
		}
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: error %v, want kind %v", c.expr, err, c.kind)
		}
		var te *types.Error
		if err != nil && !errors.As(err, &te) {
			t.Errorf("%s: error %T is not a *types.Error", c.expr, err)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	for expr, want := range map[string]string{
		"1 + 'a'::text":  "operator does not exist: integer + character varying",
		"foo(1, 'x')":    "function foo(integer, unknown) does not exist",
		"2147483647 + 1": "integer out of range",
		"1::int8 * 9223372036854775807::int8 * 2": "bigint out of range",
		"1 / 0": "division by zero",
	} {
		_, err := evalText(expr, nil)
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", expr, err, want)
		}
	}
}
