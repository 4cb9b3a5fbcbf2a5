-- section: arrays
CREATE TABLE posts (id int PRIMARY KEY, title text, tags text[], scores int[]);
INSERT INTO posts VALUES
  (1, 'intro', '{go,sql}', '{5,3}'),
  (2, 'deep dive', ARRAY['sql', 'storage', 'go'], ARRAY[9, 8, 7]),
  (3, 'empty', '{}', ARRAY[]::int[]),
  (4, 'nulls', NULL, '{1,NULL,3}'),
  (5, 'quotes', '{"a b","c,d","e\"f",NULL}', '{10}');
SELECT id, tags, scores FROM posts ORDER BY id;
SELECT ARRAY[1, 2, 3], ARRAY['x', NULL], '{1,2}'::int[], ARRAY[1.5, 2], '{}'::text[];
SELECT id FROM posts WHERE 'go' = ANY(tags) ORDER BY id;
SELECT id FROM posts WHERE 5 > ALL(scores) ORDER BY id;
SELECT id FROM posts WHERE tags @> ARRAY['sql', 'go'] ORDER BY id;
SELECT id FROM posts WHERE ARRAY['storage'] <@ tags;
SELECT id FROM posts WHERE tags && '{go,x}' ORDER BY id;
SELECT tags[1], tags[2], tags[10], scores[2:3], scores[:1] FROM posts WHERE id = 2;
SELECT ARRAY[1, 2] || ARRAY[3], ARRAY[1] || 2, 0 || ARRAY[1], ARRAY['a'] || '{b,c}'::text[];
SELECT array_length(scores, 1), cardinality(scores), array_upper(scores, 1), array_dims(scores) FROM posts ORDER BY id;
SELECT array_append(ARRAY[1], 2), array_prepend(0, ARRAY[1]), array_cat(ARRAY[1], ARRAY[2, 3]), array_remove(ARRAY[1, 2, 1], 1), array_position(ARRAY['a', 'b'], 'b');
SELECT string_to_array('a,b,,c', ','), string_to_array('a b', NULL), string_to_array('x-y-z', '-', 'y'), array_to_string(ARRAY[1, NULL, 3], '/', '*');
SELECT unnest(ARRAY[3, 1, 2]) AS v ORDER BY v;
SELECT p.id, t FROM posts p, unnest(p.tags) AS t ORDER BY p.id, t;
SELECT t, count(*) FROM posts, unnest(tags) AS t GROUP BY t ORDER BY count(*) DESC, t;
SELECT * FROM unnest(ARRAY['a', 'b', 'c']) WITH ORDINALITY AS u(v, n);
SELECT id, unnest(scores) FROM posts WHERE id IN (1, 2) ORDER BY 1, 2;
SELECT array_agg(id ORDER BY id DESC) FROM posts;
SELECT array_agg(DISTINCT t ORDER BY t) FROM posts, unnest(tags) AS t;
SELECT array_agg(title ORDER BY id) FILTER (WHERE id > 2) FROM posts;
SELECT ARRAY(SELECT id FROM posts WHERE id < 4 ORDER BY id DESC);
SELECT ARRAY[1, 2] = ARRAY[1, 2], ARRAY[1, 2] < ARRAY[1, 3], ARRAY[1] < ARRAY[1, 0], '{1,2}'::int[] = '{2,1}';
SELECT '{1,2'::int[];
SELECT '{a,b}'::int[];
SELECT ARRAY[1, 'x'];
UPDATE posts SET tags = array_append(tags, 'new') WHERE id = 1 RETURNING tags;
SELECT id FROM posts WHERE tags IS NULL OR cardinality(tags) = 0 ORDER BY id;
SELECT 3 = ANY('{1,2,3}'::int[]), NULL::int = ANY('{1}'), 4 = ANY('{1,NULL}'::int[]), 1 <> ALL('{2,3}'::int[]);
SELECT id, title FROM posts WHERE id = ANY(ARRAY[1, 3, 5]) ORDER BY id;
SELECT pg_typeof(ARRAY[1]), pg_typeof('{a}'::text[]), pg_typeof(array_agg(1.5));

-- section: uuid and serial
CREATE TABLE tickets (id serial PRIMARY KEY, code uuid DEFAULT gen_random_uuid(), note text);
INSERT INTO tickets (note) VALUES ('a'), ('b');
INSERT INTO tickets (note) VALUES ('c') RETURNING id, note;
SELECT id, note, length(code::text), code::text ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' FROM tickets ORDER BY id;
SELECT count(DISTINCT code) FROM tickets;
SELECT 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid, '{a0eebc99-9c0b4ef8-bb6d6bb9bd380a11}'::uuid;
SELECT 'not-a-uuid'::uuid;
SELECT '00000000-0000-0000-0000-000000000001'::uuid < '10000000-0000-0000-0000-000000000000'::uuid;
INSERT INTO tickets (id, note) VALUES (10, 'explicit');
INSERT INTO tickets (note) VALUES ('d') RETURNING id;
SELECT pg_typeof(gen_random_uuid()), pg_typeof(id) FROM tickets LIMIT 1;
CREATE TABLE big_ids (id bigserial, v text);
INSERT INTO big_ids (v) VALUES ('x'), ('y');
SELECT id, v FROM big_ids ORDER BY id;
CREATE TABLE ident (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
INSERT INTO ident (v) VALUES ('p'), ('q');
INSERT INTO ident (id, v) VALUES (100, 'r');
INSERT INTO ident (id, v) OVERRIDING SYSTEM VALUE VALUES (100, 'r');
SELECT id, v FROM ident ORDER BY id;
