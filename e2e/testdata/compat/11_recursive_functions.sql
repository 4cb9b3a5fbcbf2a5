-- section: with recursive
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT sum(n), count(*), max(n) FROM r;
WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT (n * 3) % 7 FROM r) SELECT n FROM r ORDER BY n;
CREATE TABLE rc_edges (src int, dst int);
INSERT INTO rc_edges VALUES (1, 2), (2, 3), (3, 1), (3, 4), (7, 8);
WITH RECURSIVE reach(node) AS (SELECT 1 UNION SELECT e.dst FROM rc_edges e JOIN reach r ON e.src = r.node) SELECT node FROM reach ORDER BY node;
WITH RECURSIVE walk(node, depth) AS (SELECT 1, 0 UNION ALL SELECT e.dst, w.depth + 1 FROM rc_edges e, walk w WHERE e.src = w.node AND w.depth < 4) SELECT node, depth FROM walk ORDER BY depth, node;
WITH RECURSIVE a AS (SELECT 5 AS x), b(y) AS (SELECT x FROM a UNION ALL SELECT y - 1 FROM b WHERE y > 3) SELECT y FROM b ORDER BY y;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r LIMIT 4;
WITH RECURSIVE r(s) AS (SELECT 'a'::text UNION ALL SELECT s || 'a' FROM r WHERE length(s) < 3) SELECT s FROM r ORDER BY s;
WITH RECURSIVE r(n) AS (SELECT n FROM r UNION ALL SELECT 1) SELECT * FROM r;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT 2 WHERE EXISTS (SELECT 1 FROM r)) SELECT * FROM r;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT a.n + 1 FROM r a, r b WHERE a.n < 3) SELECT * FROM r;
WITH RECURSIVE r(n) AS (SELECT 1 EXCEPT SELECT n + 1 FROM r) SELECT * FROM r;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n * 1.5 FROM r WHERE n < 3) SELECT * FROM r;

-- section: sql functions
CREATE FUNCTION cf_inc(x integer) RETURNS integer LANGUAGE SQL IMMUTABLE AS $$ SELECT x + 1 $$;
CREATE FUNCTION cf_add(integer, integer) RETURNS bigint LANGUAGE SQL AS 'SELECT $1 + $2';
CREATE FUNCTION cf_label(a text, b integer) RETURNS text STABLE RETURN a || ':' || b;
CREATE FUNCTION cf_nz(x integer) RETURNS integer LANGUAGE SQL STRICT AS $$ SELECT coalesce(x, 0) $$;
SELECT cf_inc(1), cf_add(2, 3), cf_label('k', 7), cf_nz(NULL), cf_nz(4);
SELECT cf_inc(cf_inc(src)), cf_label('e', dst) FROM rc_edges ORDER BY src, dst;
CREATE FUNCTION cf_inc(x text) RETURNS text LANGUAGE SQL AS $$ SELECT x || '+' $$;
SELECT cf_inc('a'::text), cf_inc(41);
CREATE FUNCTION cf_inc(y integer) RETURNS integer LANGUAGE SQL AS $$ SELECT y $$;
CREATE FUNCTION cf_bad(x integer) RETURNS integer LANGUAGE SQL AS $$ SELECT 'no'::text $$;
CREATE FUNCTION cf_bad2(x integer) RETURNS integer LANGUAGE SQL AS $$ SELECT missing_col $$;
SELECT cf_missing(1);
SELECT cf_inc(true);
CREATE VIEW cf_v AS SELECT cf_inc(src) AS s FROM rc_edges;
SELECT s FROM cf_v ORDER BY s;
DROP FUNCTION cf_inc(integer);
DROP FUNCTION cf_inc;
DROP FUNCTION cf_inc(integer) CASCADE;
DROP FUNCTION cf_inc(text);
DROP FUNCTION IF EXISTS cf_inc(integer);
DROP FUNCTION cf_add(integer, integer), cf_label, cf_nz;
DROP TABLE rc_edges;
