package parser

import (
	"testing"
)

// applyOne runs a single named rule over sql and renders the result.
func applyOne(t *testing.T, name, sql string) string {
	t.Helper()
	r, ok := ruleByName(name)
	if !ok {
		t.Fatalf("no rule %q", name)
	}
	toks, err := lex(sql)
	if err != nil {
		t.Fatalf("lex %q: %v", sql, err)
	}
	seq, err := buildTree(sql, toks)
	if err != nil {
		t.Fatalf("tree %q: %v", sql, err)
	}
	c := &rewriteCtx{src: sql}
	out, err := c.applyRule(r, seq)
	if err != nil {
		return "error: " + errString(sql, err)
	}
	return renderString(out)
}

func TestRules(t *testing.T) {
	cases := []struct{ rule, in, want string }{
		{"regexpMatchSubscript", "SELECT (regexp_match(url, '(&|^)c=([^&]*)'))[2] FROM t", "select pg__regexp_match_group(url, '(&|^)c=([^&]*)', 2) from t"},
		{"regexpMatchSubscript", "SELECT regexp_match(a, 'b')[1]", "select pg__regexp_match_group(a, 'b', 1)"},
		{"regexpMatchSubscript", "SELECT regexp_match(a, 'b', 'i')[1]", "select regexp_match(a, 'b', 'i')[1]"},
		{"arrayConstructors", "SELECT ARRAY[1, a + 2], ARRAY[]", "select pg__array(1, a + 2), pg__array()"},
		{"arrayConstructors", "SELECT ARRAY[[1], [2]]", "error: error 0A000 pos=14: multidimensional arrays are not supported (at \"[1], [2]]\")"},
		{"arrayConstructors", "SELECT ARRAY(SELECT 1), ARRAY((SELECT 2))", "select pg__array_sub((select 1)), pg__array_sub(((select 2)))"},
		{"arrayConstructors", "SELECT ARRAY(1)", "error: error 42601 pos=13: syntax error at or near \"(\" (at \"(1)\")"},
		{"subscripts", "SELECT a[1], t.b[i + 1], f(x)[2], c[2:3], c[:2], c[2:] FROM t", "select (pg__subscript(a, 1)), (pg__subscript(t.b, i + 1)), (pg__subscript(f(x), 2)), (pg__slice(c, 2, 3)), (pg__slice(c, NULL, 2)), (pg__slice(c, 2, NULL)) from t"},
		{"subscripts", "UPDATE t SET b = 1, a[2] = 5 WHERE c[1] = 1", "error: error 0A000 pos=22: assignment to array elements is not supported (at \"[2] = 5 WH\")"},
		{"quantifiedArrays", "SELECT a + 1 = ANY(b), NOT x <> ALL ($1), y = ANY (SELECT 1) FROM t", "select (pg__any(a + 1, '=', b)), not (pg__all(x, '<>', 1)), y = any (select 1) from t"},
		{"rejectUnsupported", "SELECT 1 FROM t FOR UPDATE", "error: error 0A000 pos=17: SELECT ... FOR UPDATE is not supported (at \"FOR UPDATE\")"},
		{"rejectUnsupported", "SELECT a = ANY(SELECT b FROM u)", "select a = any(select b from u)"},
		{"windowArgs", "SELECT lag(x, n + 1) OVER w, lead(x, 2) OVER w, ntile(k * 2) OVER w FROM t", "select MAX(pg__lag(x, n + 1)) over w, lead(x, 2) over w, MAX(pg__ntile(k * 2)) over w from t"},
		{"windowExclude", "SELECT sum(x) OVER (PARTITION BY k ORDER BY t ROWS 1 PRECEDING EXCLUDE TIES), exclude FROM t", "select sum(x) over (partition by k, pg__exclude('ties') order by t rows 1 preceding), exclude from t"},
		{"windowExclude", "SELECT sum(x) OVER (w ROWS 1 PRECEDING EXCLUDE CURRENT ROW) FROM t WINDOW w AS (ORDER BY t)", "select sum(x) over (w PARTITION BY pg__exclude('current row') rows 1 preceding) from t window w as (order by t)"},
		{"windowExclude", "WITH x AS (SELECT exclude FROM t) SELECT sum(x) OVER (ORDER BY t ROWS 1 PRECEDING EXCLUDE NO OTHERS) FROM x", "with x as (select exclude from t) select sum(x) over (order by t rows 1 preceding) from x"},
		{"fullJoin", "SELECT * FROM a FULL OUTER JOIN b ON a.x = b.x WHERE a.y > 1", "select * from a join b on pg__full_join(a.x = b.x) where a.y > 1"},
		{"fullJoin", "SELECT * FROM a FULL JOIN b ON a.x = b.x LEFT JOIN c ON c.z = b.z", "select * from a join b on pg__full_join(a.x = b.x) left join c on c.z = b.z"},
		{"fullJoin", "SELECT * FROM a FULL JOIN b USING (x)", "error: error 0A000 pos=17: FULL JOIN is supported only with an ON condition (at \"FULL JOIN \")"},
		{"systemTime", "SELECT * FROM s LEFT JOIN v FOR SYSTEM_TIME AS OF PROCTIME() ON s.a = v.a", "select * from s left join v AS OF TIMESTAMP pg__proctime() on s.a = v.a"},
		{"systemTime", "SELECT * FROM s JOIN v FOR SYSTEM_TIME AS OF proctime() AS w(x, y) ON true, u FOR SYSTEM_TIME AS OF PROCTIME() z", "select * from s join v as w(x, y) AS OF TIMESTAMP pg__proctime() on true, u z AS OF TIMESTAMP pg__proctime()"},
		{"systemTime", "SELECT * FROM s CROSS JOIN v FOR SYSTEM_TIME AS OF PROCTIME()", "select * from s cross join v AS OF TIMESTAMP pg__proctime()"},
		{"systemTime", "SELECT * FROM v FOR SYSTEM_TIME AS OF now()", "error: error 0A000 pos=17: FOR SYSTEM_TIME AS OF supports only PROCTIME() (a temporal join); time travel is not supported (at \"FOR SYSTEM\")"},
		{"aliasColumns", "SELECT t.a FROM (SELECT 1, 2) AS t(a, b) JOIN u AS v(x) ON true", "select t.a from (select 1, 2) as t join u as v on true"},
		{"pgOperators", "SELECT 'abc' || 1 + 2, j -> 'tags' -> 0, a || b = c", "select pg__concat_op('abc', 1 + 2), jsonb_get(jsonb_get(j, 'tags'), 0), pg__concat_op(a, b) = c"},
		{"concatFunction", "SELECT concat(a, b), a || b, x.concat(1)", "select pg__concat_fn(a, b), a || b, x.concat(1)"},
		{"dollarParams", "SELECT $1 + $02, $1", "select pg__param(1) + pg__param(2), pg__param(1)"},
		{"typedLiterals", "SELECT INTERVAL '1 hour'", "select pg__interval('1 hour')"},
		{"typedLiterals", "SELECT INTERVAL '2' DAY + INTERVAL '3' HOURS", "select pg__interval('2 day') + pg__interval('3 hour')"},
		{"typedLiterals", "SELECT INTERVAL '1:30' HOUR TO MINUTE", "select pg__interval('1:30')"},
		{"typedLiterals", "SELECT DATE '2024-01-01', t.date, date FROM t", "select pg__cast('2024-01-01', 'date'), t.date, date from t"},
		{"typedLiterals", "SELECT double precision '1.5', timestamp without time zone 'x'", "select pg__cast('1.5', 'double precision'), pg__cast('x', 'timestamp')"},
		{"castCalls", "SELECT CAST(a + 1 AS numeric(10, 2))", "select pg__cast(a + 1, 'numeric(10,2)')"},
		{"castCalls", "SELECT CAST(CAST(a AS int) AS text)", "select pg__cast(pg__cast(a, 'integer'), 'text')"},
		{"castCalls", "SELECT CAST(a AS int[]), CAST(b AS text ARRAY), CAST(c AS varchar(3)[4])", "select pg__cast(a, 'integer[]'), pg__cast(b, 'text[]'), pg__cast(c, 'varchar(3)[]')"},
		{"castCalls", "SELECT CAST(c AS int[][])", "error: error 0A000 pos=23: multidimensional arrays are not supported (at \"[])\")"},
		{"operatorKeyword", "SELECT a OPERATOR(pg_catalog.~) 'x'", "select a ~ 'x'"},
		{"castOperators", "SELECT a::int + b::bigint", "select pg__cast(a, 'integer') + pg__cast(b, 'bigint')"},
		{"castOperators", "SELECT -1::int, (a+b)::int, 'x'::text || y", "select -pg__cast(1, 'integer'), pg__cast((a+b), 'integer'), pg__cast('x', 'text') || y"},
		{"castOperators", "SELECT x::pg_catalog.text, c.oid::regclass::text", "select pg__cast(x, 'text'), pg__cast(pg__cast(c.oid, 'regclass'), 'text')"},
		{"castOperators", "SELECT f(a, b)::float8, pg_catalog.f(x)::int2", "select pg__cast(f(a, b), 'double precision'), pg__cast(pg_catalog.f(x), 'smallint')"},
		{"castOperators", "SELECT CASE WHEN a THEN 1 END::text", "select pg__cast(case when a then 1 end, 'text')"},
		{"castOperators", "SELECT ::int", "error: error 42601 pos=8: syntax error at or near \"::\" (at \"::int\")"},
		{"castOperators", "SELECT a::", "error: error 42601 pos=11: syntax error at end of input (at \"\")"},
		{"castOperators", "SELECT a::timestamp(3) with time zone, b::character varying(5)", "select pg__cast(a, 'timestamptz(3)'), pg__cast(b, 'varchar(5)')"},
		{"powerOperator", "SELECT 2 ^ 3 ^ 2, -a ^ 2 * 3", "select pg__pow(pg__pow(2, 3), 2), pg__pow(-a, 2) * 3"},
		{"atTimeZone", "SELECT ts AT TIME ZONE 'UTC', f(x) AT TIME ZONE z FROM t", "select timezone('UTC', ts), timezone(z, f(x)) from t"},
		{"extractField", "SELECT extract(epoch FROM ts), EXTRACT(YEAR FROM a + b)", "select pg__extract('epoch', ts), pg__extract('year', a + b)"},
		{"dropCollate", "SELECT a COLLATE pg_catalog.default, b COLLATE \"C\" FROM t", "select a, b from t"},
		{"regexOperators", "SELECT a ~ 'x', b !~ 'y', ~5", "select a REGEXP 'x', b NOT REGEXP 'y', ~5"},
		{"regexOperators", "SELECT a || b ~* 'x' AND c !~* 'y' || z", "select (pg__regexp_i(a || b, 'x')) and (NOT pg__regexp_i(c, 'y')) || z"},
		{"distinctFrom", "SELECT a IS DISTINCT FROM b", "select (NOT ((a) <=> (b)))"},
		{"distinctFrom", "WHERE x AND a = 1 IS NOT DISTINCT FROM b + 1 OR c", "where x and ((a = 1) <=> (b + 1)) or c"},
		{"distinctFrom", "SELECT CASE WHEN a THEN 1 END IS DISTINCT FROM f(x)", "select (NOT ((case when a then 1 end) <=> (f(x))))"},
		{"distinctFrom", "SELECT IS DISTINCT FROM b", "error: error 42601 pos=8: syntax error at or near \"IS\" (at \"IS DISTINC\")"},
		{"withinGroup", "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a + 1 DESC NULLS FIRST)", "select GROUP_CONCAT(pg__percentile_cont(a + 1, 0.5) order by a + 1 desc nulls first SEPARATOR '')"},
		{"withinGroup", "SELECT mode() WITHIN GROUP (ORDER BY t.a), t.mode(x) WITHIN GROUP (ORDER BY b)", "select GROUP_CONCAT(pg__mode(t.a) order by t.a SEPARATOR ''), t.mode(x) within group (order by b)"},
		{"withinGroup", "SELECT percentile_disc(0.5) WITHIN GROUP (a)", "error: error 42601 pos=43: syntax error at or near \"a\" (at \"a)\")"},
		{"filterClause", "SELECT count(*) FILTER (WHERE a > 1)", "select pg__filter(count(*), a > 1)"},
		{"filterClause", "SELECT mode() WITHIN GROUP (ORDER BY a) FILTER (WHERE b)", "select pg__filter(mode() within group (order by a), b)"},
		{"filterClause", "SELECT count(*) FILTER (a)", "error: error 42601 pos=25: syntax error at or near \"a\" (at \"a)\")"},
		{"stringAgg", "SELECT string_agg(a, ',' ORDER BY b DESC)", "select GROUP_CONCAT(a order by b desc SEPARATOR ',')"},
		{"stringAgg", "SELECT string_agg(a, sep)", "select string_agg(a, sep)"},
		{"stringAgg", "SELECT string_agg(a, b::varchar ORDER BY b)", "select GROUP_CONCAT(pg__string_agg(a, b::varchar) order by b SEPARATOR '')"},
		{"firstLastValue", "SELECT last_value(DISTINCT a ORDER BY a)", "select GROUP_CONCAT(distinct pg__last_value(a) order by a SEPARATOR '')"},
		{"firstLastValue", "SELECT first_value(a + 1 ORDER BY b DESC), last_value(a) OVER w", "select GROUP_CONCAT(pg__first_value(a + 1) order by b desc SEPARATOR ''), last_value(a) over w"},
		{"nullsOrdering", "SELECT a FROM t ORDER BY a + 1 DESC NULLS FIRST, b NULLS LAST", "select a from t order by pg__nulls_first(a + 1) desc, pg__nulls_last(b)"},
		{"limitOffset", "SELECT a FROM t LIMIT ALL", "select a from t"},
		{"limitOffset", "SELECT a FROM t LIMIT ALL OFFSET 2", "select a from t LIMIT 18446744073709551615 OFFSET 2"},
		{"limitOffset", "SELECT a FROM t OFFSET 2 ROWS FETCH FIRST ROW ONLY", "select a from t LIMIT 1 OFFSET 2"},
		{"limitOffset", "SELECT a FROM t LIMIT 5", "select a from t limit 5"},
		{"limitOffset", "SELECT a FROM t FETCH FIRST 2 ROWS WITH TIES", "error: error 42601 pos=36: WITH TIES cannot be specified without ORDER BY clause (at \"WITH TIES\")"},
		{"limitOffset", "SELECT a FROM t ORDER BY a DESC OFFSET 1 ROWS FETCH NEXT 2 ROWS WITH TIES", "select a from t order by a desc, pg__with_ties() LIMIT 2 OFFSET 1"},
		{"distinctOn", "SELECT DISTINCT ON (a, b) a, b, c FROM t", "select pg__distinct_on(a, b), a, b, c from t"},
		{"defaultValues", "INSERT INTO t DEFAULT VALUES", "insert into t () VALUES ()"},
		{"quoteReserved", "SELECT key, t.key, rank, rank() OVER () FROM t WHERE status = 1", `select "key", t."key", "rank", rank() over () from t where status = 1`},
		{"quoteReserved", "INSERT INTO index (key) VALUES (1)", `insert into "index" ("key") values (1)`},
		{"valuesLists", "VALUES (1, 'a'), (2, 'b')", `SELECT 1 AS "column1", 'a' AS "column2" UNION ALL SELECT 2, 'b'`},
		{"valuesLists", "SELECT * FROM (VALUES (1), (2)) v(n)", `select * from (SELECT 1 AS "n" UNION ALL SELECT 2) v`},
		{"valuesLists", "INSERT INTO t VALUES (1), (2)", "insert into t values (1), (2)"},
		{"valuesLists", "VALUES (1), (2, 3)", "error: error 42601 pos=13: VALUES lists must all be the same length (at \"(2, 3)\")"},
		{"fromFunctions", "SELECT * FROM generate_series(1, 3) AS g(x), t", `select * from pg__tablefunc_1 as g, t`},
		{"fromFunctions", "SELECT * FROM t JOIN pg_catalog.unnest(a) ON true", `select * from t join pg__tablefunc_1 AS "unnest" on true`},
		{"fromFunctions", "SELECT extract(year FROM ts), trim(both 'x' FROM f(y)) FROM t", `select extract(year from ts), trim(both 'x' from f(y)) from t`},
	}
	for _, c := range cases {
		if got := applyOne(t, c.rule, c.in); got != c.want {
			t.Errorf("%s(%q):\n got  %s\n want %s", c.rule, c.in, got, c.want)
		}
	}
}

// TestRuleOrder checks every rule is registered once and tested.
func TestRuleOrder(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.name] {
			t.Errorf("rule %s listed twice", r.name)
		}
		seen[r.name] = true
	}
}
