-- section: window functions
CREATE TABLE sales (id int PRIMARY KEY, region text, month int, amount int);
INSERT INTO sales VALUES
  (1, 'north', 1, 100), (2, 'north', 2, 150), (3, 'north', 3, 120), (4, 'north', 4, 150),
  (5, 'south', 1, 80), (6, 'south', 2, 80), (7, 'south', 3, NULL), (8, 'south', 4, 200),
  (9, 'west', 1, 50);
SELECT id, row_number() OVER (ORDER BY id), rank() OVER (ORDER BY amount DESC NULLS LAST), dense_rank() OVER (ORDER BY amount DESC NULLS LAST) FROM sales ORDER BY id;
SELECT id, sum(amount) OVER (PARTITION BY region ORDER BY month) AS running FROM sales ORDER BY id;
SELECT id, sum(amount) OVER (PARTITION BY region) AS total, amount * 100 / sum(amount) OVER (PARTITION BY region) AS pct FROM sales ORDER BY id;
SELECT id, lag(amount) OVER w, lead(amount, 2, -1) OVER w, first_value(amount) OVER w, last_value(amount) OVER w FROM sales WINDOW w AS (PARTITION BY region ORDER BY month) ORDER BY id;
SELECT id, nth_value(amount, 2) OVER (PARTITION BY region ORDER BY month ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM sales ORDER BY id;
SELECT id, avg(amount) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM sales ORDER BY id;
SELECT id, sum(amount) OVER (ORDER BY amount RANGE BETWEEN 30 PRECEDING AND CURRENT ROW) FROM sales WHERE amount IS NOT NULL ORDER BY id;
SELECT id, count(*) OVER (ORDER BY month GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM sales ORDER BY id;
SELECT id, sum(amount) OVER (PARTITION BY region ORDER BY month ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) FROM sales ORDER BY id;
SELECT id, ntile(3) OVER (ORDER BY id), percent_rank() OVER (ORDER BY month), cume_dist() OVER (ORDER BY month) FROM sales ORDER BY id;
SELECT region, month, amount FROM (SELECT *, row_number() OVER (PARTITION BY region ORDER BY amount DESC NULLS LAST, month) AS rn FROM sales) t WHERE rn = 1 ORDER BY region;
SELECT id, max(amount) OVER (PARTITION BY region ORDER BY month ROWS 1 PRECEDING) FROM sales ORDER BY id;
SELECT region, sum(amount), rank() OVER (ORDER BY sum(amount) DESC) FROM sales GROUP BY region ORDER BY region;
SELECT id, lag(amount, -1) OVER (ORDER BY id) FROM sales ORDER BY id;
SELECT id, ntile(0) OVER (ORDER BY id) FROM sales;
SELECT row_number() OVER (ORDER BY id) FROM sales WHERE row_number() OVER (ORDER BY id) > 1;

-- section: ordered and grouped aggregates
SELECT region, string_agg(amount::text, ';' ORDER BY month DESC) FROM sales GROUP BY region ORDER BY region;
SELECT string_agg(DISTINCT region, ', ' ORDER BY region) FROM sales;
SELECT region, array_agg(amount ORDER BY amount NULLS FIRST) FROM sales GROUP BY region ORDER BY region;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount), percentile_disc(0.5) WITHIN GROUP (ORDER BY amount), mode() WITHIN GROUP (ORDER BY amount) FROM sales;
SELECT region, percentile_cont(0.25) WITHIN GROUP (ORDER BY amount DESC) FROM sales GROUP BY region ORDER BY region;
SELECT percentile_cont(1.5) WITHIN GROUP (ORDER BY amount) FROM sales;
SELECT region, month, sum(amount) FROM sales WHERE month <= 2 GROUP BY ROLLUP (region, month) ORDER BY region NULLS LAST, month NULLS LAST;
SELECT region, month, count(*) FROM sales WHERE region <> 'west' AND month <= 2 GROUP BY CUBE (region, month) ORDER BY region NULLS LAST, month NULLS LAST;
SELECT region, month, sum(amount), grouping(region, month) FROM sales GROUP BY GROUPING SETS ((region), (month), ()) ORDER BY 4, 1, 2;
SELECT region, sum(amount) FROM sales GROUP BY ROLLUP (region) HAVING sum(amount) > 200 ORDER BY 1 NULLS FIRST;
SELECT json_agg(amount ORDER BY id) FROM sales WHERE region = 'south';
SELECT jsonb_agg(region ORDER BY id) FILTER (WHERE month = 1) FROM sales;
SELECT jsonb_object_agg(region, total) FROM (SELECT region, sum(amount) AS total FROM sales GROUP BY region) t;
SELECT count(*) FILTER (WHERE amount IS NULL), sum(amount) FILTER (WHERE region = 'north') FROM sales;
