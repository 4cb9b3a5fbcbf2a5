// Package queries holds the Nexmark query texts (RisingWave dialect, from
// docs/nexmark reference §1.3) and the DDL of the three nexmark tables, shared
// by the e2e golden test and cmd/bench. Adaptations of the reference text are
// noted on each query.
package queries

import (
	"fmt"
	"strings"
)

// Query is one Nexmark query.
type Query struct {
	Name string
	SQL  string
	// Note records an adaptation of the reference text, if any.
	Note string
}

// Column is a column of a nexmark table: its name and SQL type (bigint,
// varchar or timestamp).
type Column struct{ Name, Type string }

// Tables are the three nexmark tables (name, nexmark.table.type, columns),
// with RisingWave's column names and types.
var Tables = []struct {
	Name, Type string
	Columns    []Column
}{
	{"person", "Person", []Column{{"id", "bigint"}, {"name", "varchar"}, {"email_address", "varchar"}, {"credit_card", "varchar"},
		{"city", "varchar"}, {"state", "varchar"}, {"date_time", "timestamp"}, {"extra", "varchar"}}},
	{"auction", "Auction", []Column{{"id", "bigint"}, {"item_name", "varchar"}, {"description", "varchar"}, {"initial_bid", "bigint"},
		{"reserve", "bigint"}, {"date_time", "timestamp"}, {"expires", "timestamp"}, {"seller", "bigint"}, {"category", "bigint"},
		{"extra", "varchar"}}},
	{"bid", "Bid", []Column{{"auction", "bigint"}, {"bidder", "bigint"}, {"price", "bigint"}, {"channel", "varchar"},
		{"url", "varchar"}, {"date_time", "timestamp"}, {"extra", "varchar"}}},
}

// DDL returns the CREATE TABLE statements for person, auction and bid as
// nexmark tables over events 0..events-1 with the given event gap (no
// primary keys: append-only tables with a hidden row id, like RisingWave's
// views over its combined source).
func DDL(events, gapNs int64) []string { return ddl("TABLE", events, gapNs) }

// SourceDDL is DDL with CREATE SOURCE: nothing stored, each query reads the
// generator itself (as the published Nexmark runs do).
func SourceDDL(events, gapNs int64) []string { return ddl("SOURCE", events, gapNs) }

func ddl(kind string, events, gapNs int64) []string {
	var out []string
	for _, t := range Tables {
		cols := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			cols[i] = c.Name + " " + c.Type
		}
		out = append(out, fmt.Sprintf("CREATE %s %s (%s) WITH (connector = 'nexmark', nexmark.table.type = '%s', nexmark.event.num = '%d', nexmark.min.event.gap.in.ns = '%d')",
			kind, t.Name, strings.Join(cols, ", "), t.Type, events, gapNs))
	}
	return out
}

const aggs15 = `count(*) AS total_bids,
  count(*) FILTER (WHERE price < 10000) AS rank1_bids,
  count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  count(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
  count(DISTINCT bidder) AS total_bidders,
  count(DISTINCT bidder) FILTER (WHERE price < 10000) AS rank1_bidders,
  count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bidders,
  count(DISTINCT bidder) FILTER (WHERE price >= 1000000) AS rank3_bidders,
  count(DISTINCT auction) AS total_auctions,
  count(DISTINCT auction) FILTER (WHERE price < 10000) AS rank1_auctions,
  count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_auctions,
  count(DISTINCT auction) FILTER (WHERE price >= 1000000) AS rank3_auctions`

// All is every query of the acceptance list, in order.
var All = []Query{
	{Name: "q0", SQL: `SELECT auction, bidder, price, date_time FROM bid`},
	{Name: "q1", SQL: `SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid`},
	{Name: "q2", SQL: `SELECT auction, price FROM bid WHERE auction = 1007 OR auction = 1020 OR auction = 2001 OR auction = 2019 OR auction = 2087`},
	{Name: "q3", SQL: `SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'or' OR P.state = 'id' OR P.state = 'ca')`},
	{Name: "q4", SQL: `SELECT Q.category, AVG(Q.final) AS avg FROM (SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires GROUP BY A.id, A.category) Q
GROUP BY Q.category`},
	{Name: "q5", Note: "bid.auction written auction: RisingWave lets an unaliased HOP(bid, ...) be qualified as bid, Tributary names it hop (the PostgreSQL rule for a function in FROM)", SQL: `SELECT AuctionBids.auction, AuctionBids.num FROM (
  SELECT auction, count(*) AS num, window_start AS starttime
  FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY window_start, auction) AS AuctionBids
JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime_c FROM (
  SELECT count(*) AS num, window_start AS starttime_c
  FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start) AS CountBids
  GROUP BY CountBids.starttime_c) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn`},
	{Name: "q7", SQL: `SELECT B.auction, B.price, B.bidder, B.date_time FROM bid B JOIN (SELECT MAX(price) AS maxprice,
  window_end AS date_time FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_end) B1
ON B.price = B1.maxprice WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time`},
	{Name: "q8", SQL: `SELECT P.id, P.name, P.starttime FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TUMBLE(person, date_time, INTERVAL '10' SECOND) GROUP BY id, name, window_start, window_end) P
JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TUMBLE(auction, date_time, INTERVAL '10' SECOND) GROUP BY seller, window_start, window_end) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime`},
	{Name: "q9", SQL: `SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller, category,
  auction, bidder, price, bid_date_time FROM (SELECT A.*, B.auction, B.bidder, B.price,
  B.date_time AS bid_date_time, ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC)
  AS rownum FROM auction A, bid B WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires) tmp
WHERE rownum <= 1`},
	{Name: "q10", SQL: `SELECT auction, bidder, price, date_time, TO_CHAR(date_time, 'YYYY-MM-DD') AS date,
  TO_CHAR(date_time, 'HH:MI') AS time FROM bid`},
	{Name: "q14", Note: "count_char(extra, 'c') is a UDF; dropped as in the RisingWave benchmark", SQL: `SELECT auction, bidder, 0.908 * price AS price, CASE WHEN extract(hour FROM date_time) >= 8 AND
  extract(hour FROM date_time) <= 18 THEN 'dayTime' WHEN extract(hour FROM date_time) <= 6 OR
  extract(hour FROM date_time) >= 20 THEN 'nightTime' ELSE 'otherTime' END AS bidTimeType, date_time
FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000`},
	{Name: "q15", SQL: `SELECT to_char(date_time, 'YYYY-MM-DD') AS "day", ` + aggs15 + `
FROM bid GROUP BY to_char(date_time, 'YYYY-MM-DD')`},
	{Name: "q16", SQL: `SELECT channel, to_char(date_time, 'YYYY-MM-DD') AS "day", max(to_char(date_time, 'HH:mm')) AS "minute", ` + aggs15 + `
FROM bid GROUP BY to_char(date_time, 'YYYY-MM-DD'), channel`},
	{Name: "q17", SQL: `SELECT auction, to_char(date_time, 'YYYY-MM-DD') AS day, count(*) AS total_bids,
  count(*) FILTER (WHERE price < 10000) AS rank1_bids,
  count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  count(*) FILTER (WHERE price >= 1000000) AS rank3_bids, min(price) AS min_price, max(price) AS max_price,
  avg(price) AS avg_price, sum(price) AS sum_price FROM bid GROUP BY to_char(date_time, 'YYYY-MM-DD'), auction`},
	{Name: "q18", SQL: `SELECT auction, bidder, price, channel, url, date_time, extra FROM (SELECT *, ROW_NUMBER() OVER
  (PARTITION BY bidder, auction ORDER BY date_time DESC, extra) AS rank_number FROM bid) WHERE rank_number <= 1`},
	{Name: "q19", SQL: `SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
  FROM bid) WHERE rank_number <= 10`},
	{Name: "q20", SQL: `SELECT auction, bidder, price, channel, url, B.date_time AS bid_date_time, B.extra AS bid_extra, item_name,
  description, initial_bid, reserve, A.date_time AS auction_date_time, expires, seller, category,
  A.extra AS auction_extra FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id WHERE A.category = 10`},
	{Name: "q21", SQL: `SELECT auction, bidder, price, channel, CASE WHEN LOWER(channel) = 'apple' THEN '0'
  WHEN LOWER(channel) = 'google' THEN '1' WHEN LOWER(channel) = 'facebook' THEN '2'
  WHEN LOWER(channel) = 'baidu' THEN '3' ELSE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] END AS channel_id
FROM bid WHERE (regexp_match(url, '(&|^)channel_id=([^&]*)'))[2] IS NOT NULL
  OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu')`},
	{Name: "q22", SQL: `SELECT auction, bidder, price, channel, split_part(url, '/', 4) AS dir1, split_part(url, '/', 5) AS dir2,
  split_part(url, '/', 6) AS dir3 FROM bid`},
}

// Lookup returns the query named name.
func Lookup(name string) (Query, bool) {
	for _, q := range All {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// EmitOnWindowClose is the clause that turns an EOWC query into its emit on
// window close form.
const EmitOnWindowClose = "\nEMIT ON WINDOW CLOSE"

// EOWC are q5 and q7 as RisingWave's emit on window close variants run
// them: the reference text over a bid source with a watermark on date_time
// (BidWatermarkSourceDDL), followed by EmitOnWindowClose. Without the
// clause and over a source without a watermark, each is the plain query.
var EOWC = []Query{
	{Name: "q5", Note: "bid.auction written auction (as q5); AuctionBids.starttime added to the output, so that each hot item names its window",
		SQL: `SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.starttime FROM (
  SELECT auction, count(*) AS num, window_start AS starttime
  FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY window_start, auction) AS AuctionBids
JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime_c FROM (
  SELECT count(*) AS num, window_start AS starttime_c
  FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start) AS CountBids
  GROUP BY CountBids.starttime_c) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime_c AND AuctionBids.num >= MaxBids.maxn`},
	{Name: "q7", SQL: `SELECT B.auction, B.price, B.bidder, B.date_time FROM bid B JOIN (SELECT MAX(price) AS maxprice,
  window_end AS date_time FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND) GROUP BY window_end) B1
ON B.price = B1.maxprice WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time`},
}

// LookupEOWC returns the EOWC query named name.
func LookupEOWC(name string) (Query, bool) {
	for _, q := range EOWC {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// BidWatermarkSourceDDL is CREATE SOURCE name for the bid events among
// events 0..events-1, paced by gapNs (0: as fast as possible) with event time
// advancing at eventRate events per second (nexmark.next.event.rate), and,
// when delay is not empty (an interval such as '4' SECOND), Flink's and
// RisingWave's WATERMARK FOR date_time AS date_time - INTERVAL delay.
func BidWatermarkSourceDDL(name string, events, gapNs, eventRate int64, delay string) string {
	var cols []string
	for _, t := range Tables {
		if t.Name != "bid" {
			continue
		}
		for _, c := range t.Columns {
			cols = append(cols, c.Name+" "+c.Type)
		}
	}
	if delay != "" {
		cols = append(cols, "WATERMARK FOR date_time AS date_time - INTERVAL "+delay)
	}
	return fmt.Sprintf("CREATE SOURCE %s (%s) WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '%d', nexmark.min.event.gap.in.ns = '%d', nexmark.next.event.rate = '%d')",
		name, strings.Join(cols, ", "), events, gapNs, eventRate)
}
