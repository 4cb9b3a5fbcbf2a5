-- section: similar to
SELECT 'abc' SIMILAR TO 'a%', 'abc' SIMILAR TO '(a|b)c', 'abc' SIMILAR TO '%(b|d)%', 'ab' SIMILAR TO 'a_', 'a.c' SIMILAR TO 'a.c';
SELECT 'abc' NOT SIMILAR TO 'a[bc]+', 'aXb' SIMILAR TO 'a#Xb' ESCAPE '#', 'xyz' SIMILAR TO '[a-z]{3}', NULL SIMILAR TO 'a';
SELECT name FROM emp WHERE name SIMILAR TO '(a|b|c)%' ORDER BY name;

-- section: jsonb
CREATE TABLE docs (id int PRIMARY KEY, body jsonb);
INSERT INTO docs VALUES
  (1, '{"name": "ann", "tags": ["a", "b"], "addr": {"city": "Berlin", "zip": "10115"}, "age": 30}'),
  (2, '{"name": "bob", "tags": [], "addr": {"city": "Paris"}, "age": null}'),
  (3, '[1, 2, {"x": true}]');
SELECT id, body -> 'name', body ->> 'name', body -> 'tags' -> 0, body #> '{addr,city}', body #>> '{addr,zip}' FROM docs ORDER BY id;
SELECT body -> 2 -> 'x', body ->> 0, body #> '{2,x}' FROM docs WHERE id = 3;
SELECT id FROM docs WHERE body @> '{"addr": {"city": "Berlin"}}';
SELECT id FROM docs WHERE '{"name": "bob"}' <@ body;
SELECT id, body ? 'age', body ?| ARRAY['zip', 'tags'], body ?& ARRAY['name', 'age'] FROM docs ORDER BY id;
SELECT '{"a":1}'::jsonb || '{"b":2}', '{"a":1,"b":2}'::jsonb - 'a', '[1,2,3]'::jsonb - 0, '{"a":{"b":1}}'::jsonb #- '{a,b}';
SELECT jsonb_build_object('id', 1, 'name', 'x', 'ok', true, 'n', NULL), jsonb_build_array(1, 'two', NULL, 2.5);
SELECT json_build_object('b', 1, 'a', 2), json_build_array(1, 'x'), to_jsonb('text'::text), to_jsonb(ARRAY[1, 2]);
SELECT jsonb_typeof(body), jsonb_typeof(body -> 'age'), jsonb_array_length(body -> 'tags') FROM docs WHERE id < 3 ORDER BY id;
SELECT jsonb_set('{"a":1}', '{b}', '"x"'), jsonb_strip_nulls('{"a":null,"b":1}'), jsonb_pretty('{"a":[1]}');
SELECT jsonb_agg(body -> 'name' ORDER BY id) FROM docs WHERE id < 3;
SELECT jsonb_build_object('n', count(*), 'names', jsonb_agg(body ->> 'name' ORDER BY id)) FROM docs;
SELECT e.key, e.value FROM docs, jsonb_each(body -> 'addr') AS e WHERE id = 1 ORDER BY e.key;
SELECT jsonb_array_elements_text(body -> 'tags') AS t FROM docs WHERE id = 1 ORDER BY t;
SELECT (body ->> 'age')::int + 1 FROM docs WHERE id = 1;
SELECT '{"a": 1}'::jsonb = '{ "a":1 }'::jsonb, '{"b":1,"a":2}'::jsonb::text;
SELECT body -> 'name' = '"ann"' FROM docs ORDER BY id;

-- section: to_char numbers
SELECT to_char(1234.5, 'FM9,999.00'), to_char(-12.345, '999.99'), to_char(7, '000'), to_char(0.5, 'FM0.999');
SELECT to_char(1234567.891, '9G999G999D99'), to_char(-5, 'S999'), to_char(5, 'S999'), to_char(-5, '999MI'), to_char(-5, '999PR');
SELECT to_char(123456, '999'), to_char(12345.678, '9.99EEEE'), to_char(42, '"n="99'), to_char(1.5::float8, '9.9');
SELECT to_char(salary, 'FM99,999.00') FROM emp WHERE salary IS NOT NULL ORDER BY id;

-- section: at time zone
SELECT timestamp '2024-06-01 12:00' AT TIME ZONE 'UTC', timestamptz '2024-06-01 12:00+00' AT TIME ZONE 'Europe/Berlin';
SELECT timestamp '2024-01-15 08:30' AT TIME ZONE 'America/New_York', timestamptz '2024-01-15 08:30+00' AT TIME ZONE 'Asia/Tokyo';
SELECT timestamptz '2024-03-31 00:30+00' AT TIME ZONE 'Europe/Berlin', timestamptz '2024-03-31 01:30+00' AT TIME ZONE 'Europe/Berlin';
SELECT timestamp '2024-06-01 12:00' AT TIME ZONE '+02:00', timestamptz '2024-06-01 12:00+00' AT TIME ZONE INTERVAL '-03:00';
SELECT timestamp '2024-06-01 12:00' AT TIME ZONE 'Mars/Olympus';

-- section: operators and catalog
SELECT 5 # 3, 12 # 10 # 1, 255::smallint # 1::smallint, 5::bigint # 3;
SELECT '{"a": {"b": [1, 2]}}'::jsonb #> '{a,b,1}', '{"a": {"b": "c"}}'::jsonb #>> '{a,b}';
SELECT 'emp'::regclass, 'public.dept'::regclass, 'emp'::regclass::text;
SELECT 'nosuch'::regclass;
SELECT relname FROM pg_class WHERE oid = 'sales'::regclass;
SELECT count(*) FROM pg_attribute WHERE attrelid = 'dept'::regclass AND attnum > 0 AND NOT attisdropped;
SELECT t.typname, a.typname, a.typelem = t.oid FROM pg_type t JOIN pg_type a ON a.oid = t.typarray WHERE t.typname IN ('int4', 'text', 'bool', 'uuid', 'jsonb', 'numeric', 'date') ORDER BY t.typname;
SELECT typname FROM pg_type WHERE typname IN ('int8', 'float8', 'timestamptz') AND typarray <> 0 ORDER BY 1;
SELECT 'integer'::regtype, 'int4[]'::regtype, 'varchar'::regtype;
SELECT format_type(23, -1), format_type(1043, 24), format_type(1700, 655366), format_type(1007, NULL), format_type(NULL, -1), format_type('timestamptz'::regtype, -1);
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'emp'::regclass AND attnum > 0 ORDER BY attnum;
SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 'dept' ORDER BY ordinal_position;
SELECT current_database(), current_schema(), current_user = session_user;
SELECT version() LIKE 'PostgreSQL 15%';
SELECT current_setting('server_version_num')::int / 10000;
SHOW standard_conforming_strings;
SET TIME ZONE 'America/New_York';
SELECT timestamptz '2024-01-01 12:00:00+00' AS in_new_york;
SHOW TimeZone;
RESET TIME ZONE;
SELECT timestamptz '2024-01-01 12:00:00+00';
SET search_path = nosuch_schema;
SHOW search_path;
SELECT count(*) FROM emp;
RESET search_path;
SELECT count(*) FROM emp;
