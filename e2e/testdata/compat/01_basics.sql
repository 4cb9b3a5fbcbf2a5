-- The differential suite of issue 17 (e2e/compat_diff_test.go): every
-- statement runs on PostgreSQL 15 and on Tributary, in file order, on one
-- session each, and their outcomes are compared. A statement ends with a
-- line ending in ";". Written for this suite; keep answers deterministic
-- (no now(), no random(), an ORDER BY wherever a LIMIT picks rows).

-- section: tables and rows
CREATE TABLE dept (id int PRIMARY KEY, name text NOT NULL, city varchar(20));
CREATE TABLE emp (id int PRIMARY KEY, name text, dept_id int, salary numeric(10,2), hired date, boss int);
INSERT INTO dept VALUES (1, 'eng', 'Berlin'), (2, 'sales', 'Paris'), (3, 'ops', NULL), (4, 'legal', 'Rome');
INSERT INTO emp VALUES
  (1, 'ann', 1, 5200.50, '2019-03-01', NULL),
  (2, 'bob', 1, 4100.00, '2020-07-15', 1),
  (3, 'cid', 2, 3900.25, '2021-01-10', 1),
  (4, 'dee', 2, NULL, '2018-11-30', 3),
  (5, 'eve', NULL, 2500.00, '2022-05-05', 2),
  (6, 'fay', 3, 6100.75, '2017-02-28', NULL);
INSERT INTO emp (id, name) VALUES (7, 'gus');
INSERT INTO emp VALUES (1, 'dup', 1, 1, '2020-01-01', NULL);
INSERT INTO dept (id, name) VALUES (5, NULL);
INSERT INTO dept (id) VALUES (6);
INSERT INTO emp VALUES (8, 'hal', 1, 'abc', '2020-01-01', NULL);
INSERT INTO emp (id, name, hired) VALUES (8, 'hal', '2020-02-30');
INSERT INTO emp (id, name, salary) VALUES (8, 'hal', 123456789012.5);
INSERT INTO nosuch VALUES (1);
INSERT INTO emp (id, nosuch) VALUES (9, 1);
INSERT INTO emp VALUES (9, 'ivy', 4, 3000, '2023-09-09', 6) RETURNING id, name, salary * 2 AS double_pay;
UPDATE emp SET salary = salary + 100 WHERE dept_id = 1;
UPDATE emp SET salary = salary * 1.1 WHERE id = 3 RETURNING id, salary;
UPDATE emp SET boss = NULL WHERE id = 1000;
DELETE FROM emp WHERE id = 9 RETURNING name;
DELETE FROM emp WHERE id = 9;
SELECT * FROM emp ORDER BY id;
SELECT id, name FROM dept WHERE city IS NULL ORDER BY id;

-- section: joins
SELECT e.name, d.name FROM emp e JOIN dept d ON e.dept_id = d.id ORDER BY e.name;
SELECT e.name, d.name FROM emp e LEFT JOIN dept d ON e.dept_id = d.id ORDER BY e.id;
SELECT e.name, d.name FROM emp e RIGHT JOIN dept d ON e.dept_id = d.id ORDER BY d.id, e.name;
SELECT e.name, d.name FROM emp e FULL JOIN dept d ON e.dept_id = d.id;
SELECT count(*) FROM emp CROSS JOIN dept;
SELECT a.name, b.name AS boss FROM emp a JOIN emp b ON a.boss = b.id ORDER BY a.id;
SELECT d.name, e.name FROM dept d JOIN emp e ON e.dept_id = d.id AND e.salary > 4000;
SELECT x.id, y.v FROM (VALUES (1), (2), (3)) AS x(id) JOIN (VALUES (2, 'b'), (3, 'c'), (3, 'cc')) AS y(id, v) USING (id);
SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS p(id, s) NATURAL JOIN (VALUES (2, 'b'), (2, 'c')) AS q(id, s);
SELECT e.name FROM emp e, dept d WHERE e.dept_id = d.id AND d.city = 'Paris';
SELECT e.name FROM emp e JOIN dept d ON e.dept_id = d.id JOIN emp b ON b.id = e.boss WHERE b.name = 'ann';
SELECT e.nosuch FROM emp e;
SELECT id FROM emp e JOIN dept d ON e.dept_id = d.id;

-- section: grouping
SELECT dept_id, count(*), count(salary), sum(salary), min(hired), max(name) FROM emp GROUP BY dept_id ORDER BY dept_id NULLS FIRST;
SELECT dept_id, avg(salary) FROM emp GROUP BY dept_id HAVING count(*) > 1 ORDER BY 1;
SELECT count(DISTINCT dept_id), count(*) FILTER (WHERE salary > 4000) FROM emp;
SELECT bool_and(salary > 3000), bool_or(salary > 6000) FROM emp;
SELECT d.name, coalesce(sum(e.salary), 0) AS total FROM dept d LEFT JOIN emp e ON e.dept_id = d.id GROUP BY d.name ORDER BY total DESC, d.name;
SELECT extract(year FROM hired) AS y, count(*) FROM emp GROUP BY 1 ORDER BY 1;
SELECT name, count(*) FROM emp;
SELECT sum(x), avg(x), stddev_samp(x), var_pop(x) FROM generate_series(1, 10) AS g(x);
SELECT count(*) FROM emp WHERE false;
SELECT max(salary) FROM emp WHERE false;
SELECT dept_id FROM emp GROUP BY dept_id HAVING max(salary) IS NULL;

-- section: ordering and limits
SELECT name FROM emp ORDER BY salary DESC NULLS LAST, name LIMIT 3;
SELECT name FROM emp ORDER BY salary NULLS FIRST, id LIMIT 2 OFFSET 1;
SELECT name FROM emp ORDER BY hired DESC OFFSET 5;
SELECT name FROM emp ORDER BY id FETCH FIRST 2 ROWS ONLY;
SELECT DISTINCT dept_id FROM emp ORDER BY dept_id;
SELECT DISTINCT ON (dept_id) dept_id, name FROM emp ORDER BY dept_id, salary DESC;
SELECT name FROM emp UNION SELECT name FROM dept ORDER BY 1;
SELECT dept_id FROM emp UNION ALL SELECT id FROM dept;
SELECT id FROM dept INTERSECT SELECT dept_id FROM emp ORDER BY 1;
SELECT id FROM dept EXCEPT SELECT dept_id FROM emp ORDER BY 1;
SELECT name FROM emp ORDER BY 5;
SELECT 1 LIMIT -1;
SELECT 1 OFFSET -1;

-- section: expressions
SELECT name, CASE WHEN salary > 5000 THEN 'high' WHEN salary > 3000 THEN 'mid' ELSE 'low' END FROM emp ORDER BY id;
SELECT CASE dept_id WHEN 1 THEN 'one' WHEN 2 THEN 'two' END AS d FROM emp ORDER BY id;
SELECT coalesce(NULL, NULL, 3), nullif(5, 5), nullif(5, 6), greatest(1, 7, 3), least('b', 'a', 'c');
SELECT 7 / 2, 7 % 3, -7 / 2, 7.0 / 2, 2 ^ 10, 10 / 3::numeric, 2 ^ -1;
SELECT |/ 16.0, ||/ 27.0, @ -5;
SELECT 1 / 0;
SELECT 1.5 / 0;
SELECT 2147483647 + 1;
SELECT 9223372036854775807::bigint * 2;
SELECT 5 & 3, 5 | 3, 1 << 4, 256 >> 2, ~5;
SELECT abs(-3.5), round(2.567, 2), round(2.5), round(-2.5), trunc(2.99), ceil(1.1), floor(-1.1), sign(-2);
SELECT sqrt(2), power(2, 0.5), exp(1), ln(10), log(100), mod(10, 4), div(10, 4);
SELECT 0.1 + 0.2, 0.1::float8 + 0.2::float8, 1e100::float8, 1.0::float4 / 3;
SELECT 3 BETWEEN 1 AND 5, 3 NOT BETWEEN 4 AND 5, NULL IS NULL, 1 IS DISTINCT FROM NULL, NULL IS NOT DISTINCT FROM NULL;
SELECT true AND NULL, false AND NULL, true OR NULL, NOT NULL::boolean;
SELECT 2 IN (1, 2, NULL), 3 IN (1, 2, NULL), 3 NOT IN (1, 2);

-- section: strings
SELECT 'abc' || 'def', 'n=' || 5, concat('a', NULL, 'b', 1), concat_ws('-', 'a', NULL, 'b');
SELECT upper('abc'), lower('ABC'), initcap('hello wORLD'), length('héllo'), octet_length('héllo'), char_length('abc');
SELECT substr('hello', 2, 3), substring('hello' FROM 2 FOR 2), left('hello', 2), right('hello', 3), repeat('ab', 3);
SELECT position('lo' IN 'hello'), strpos('hello', 'l'), replace('banana', 'an', 'AN'), reverse('abc'), translate('hello', 'el', 'ip');
SELECT trim('  x  '), ltrim('xxaxx', 'x'), rtrim('xxaxx', 'x'), btrim('--a--', '-'), lpad('7', 3, '0'), rpad('ab', 5, '*');
SELECT split_part('a,b,c', ',', 2), split_part('a,b,c', ',', 5), md5('abc'), to_hex(255), ascii('A'), chr(66);
SELECT 'abc' LIKE 'a%', 'abc' LIKE '_b_', 'ABC' ILIKE 'a%', 'abc' NOT LIKE '%d', 'a_c' LIKE 'a\_c';
SELECT 'abc123' ~ '[0-9]+', 'ABC' ~* 'b', 'abc' !~ 'z', regexp_replace('a1b22c', '[0-9]+', '#', 'g'), (regexp_match('foo123', '[0-9]+'))[1];
SELECT format('%s is %s years', 'ann', 30), format('%I.%L', 'my tab', 'it''s'), quote_ident('A b'), quote_literal('x''y');
SELECT name FROM emp WHERE name LIKE '%e%' ORDER BY name;
SELECT starts_with('hello', 'he'), 'x' < 'y', 'B' < 'a', 'abc' = 'abc ';

-- section: dates and times
SELECT date '2024-02-28' + 1, date '2024-03-01' - date '2024-02-01', date '2024-01-31' + interval '1 month';
SELECT timestamp '2024-01-01 10:00:00' + interval '90 minutes', timestamp '2024-01-02' - timestamp '2024-01-01 12:00';
SELECT extract(dow FROM date '2024-06-01'), extract(doy FROM date '2024-12-31'), extract(epoch FROM timestamp '1970-01-02');
SELECT date_part('month', date '2024-06-15'), date_trunc('month', timestamp '2024-06-15 13:45:00'), date_trunc('hour', timestamptz '2024-06-15 13:45:00+00');
SELECT to_char(timestamp '2024-03-05 14:07:09', 'YYYY-MM-DD HH24:MI:SS'), to_char(date '2024-03-05', 'DD Mon YYYY');
SELECT make_date(2024, 2, 29), age(timestamp '2024-03-01', timestamp '2023-01-15'), justify_hours(interval '27 hours');
SELECT interval '1 day 2 hours' * 2, interval '1 hour' / 4, interval '2 months' - interval '1 day';
SELECT '2024-13-01'::date;
SELECT '25:00'::time;
SELECT timestamptz '2024-01-01 00:00:00+02', '2024-06-01 12:00'::timestamp::date, date '2024-06-01'::timestamp;
SELECT name, hired FROM emp WHERE hired BETWEEN '2019-01-01' AND '2021-12-31' ORDER BY hired;
SELECT to_timestamp(86400)::timestamp, to_date('05/03/2024', 'DD/MM/YYYY');

-- section: casts
SELECT '42'::int + 1, '3.14'::numeric(4,1), 3.99::int, '-7'::smallint, 'yes'::boolean, 'off'::boolean, 1::boolean;
SELECT CAST('12' AS bigint), CAST(12.5 AS text), CAST('2024-01-02' AS date), 12::text || 'x', '1e3'::float8::int;
SELECT 'abc'::int;
SELECT '99999'::smallint;
SELECT '1.5'::int;
SELECT 'maybe'::boolean;
SELECT '{"a":1}'::jsonb, '[1, 2]'::jsonb, 'null'::jsonb, '{bad'::jsonb;
SELECT 123.456::numeric(5,2), 1.005::numeric(4,2), '0.1'::real, '1e-3'::numeric;
SELECT 12345.6::numeric(5,2);
SELECT '\x0102ff'::bytea, 'abc'::bytea, length('\x0102'::bytea);
SELECT 10::varchar(1), 'toolong'::varchar(3), 'x'::char(3) || '|';
SELECT pg_typeof(1), pg_typeof(1.5), pg_typeof('a'::text), pg_typeof(1::bigint + 1), pg_typeof(now()::date);
