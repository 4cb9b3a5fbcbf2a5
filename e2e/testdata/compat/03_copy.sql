-- section: copy
CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(8,2), tags text, added date);
COPY items FROM STDIN;
1	pen	1.50	office	2024-01-01
2	ink	\N	office	2024-01-02
3	tab\there	2.00	\N	\N
\.
COPY items (id, name, price) FROM STDIN WITH (FORMAT csv, HEADER true);
id,name,price
4,"comma, name",3.25
5,,9
6,"say ""hi""",
\.
COPY items (id, name) FROM STDIN WITH (FORMAT csv, DELIMITER ';', NULL 'none');
7;none
8;x
\.
SELECT id, name, price, tags, added FROM items ORDER BY id;
COPY items FROM STDIN;
9	bad	notanumber	x	2024-01-01
\.
COPY items (id, name) FROM STDIN;
1	again
\.
SELECT count(*) FROM items;
COPY items TO STDOUT;
COPY (SELECT id, name FROM items WHERE id > 3 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER);
COPY items (id, price) TO STDOUT WITH (FORMAT csv, NULL 'NA', FORCE_QUOTE *);
COPY (SELECT 1 AS a, NULL AS b, 'x y' AS c) TO STDOUT;
COPY nosuch FROM STDIN;
\.
BEGIN;
COPY items (id, name) FROM STDIN;
20	in txn
\.
SELECT name FROM items WHERE id = 20;
ROLLBACK;
SELECT count(*) FROM items WHERE id = 20;
