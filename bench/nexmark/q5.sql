-- q5, hot items: per 10 s window sliding by 2 s, the auctions with the most
-- bids (ties kept).

-- Nexmark tables (Feldera's SQL names), each filled by the nexmark transport
-- (docs/nexmark.md). The three connectors must share one config: together
-- they hold the first `events` events of one stream.
CREATE TABLE person (
    id BIGINT NOT NULL,
    name VARCHAR,
    emailAddress VARCHAR,
    creditCard VARCHAR,
    city VARCHAR,
    state VARCHAR,
    date_time TIMESTAMP NOT NULL,
    extra VARCHAR
) WITH ('connectors' = '[{"transport": {"name": "nexmark", "config": {"events": 10000000}}}]');
CREATE TABLE auction (
    id BIGINT NOT NULL,
    itemName VARCHAR,
    description VARCHAR,
    initialBid BIGINT,
    reserve BIGINT,
    date_time TIMESTAMP NOT NULL,
    expires TIMESTAMP NOT NULL,
    seller BIGINT NOT NULL,
    category BIGINT NOT NULL,
    extra VARCHAR
) WITH ('connectors' = '[{"transport": {"name": "nexmark", "config": {"events": 10000000}}}]');
CREATE TABLE bid (
    auction BIGINT NOT NULL,
    bidder BIGINT NOT NULL,
    price BIGINT NOT NULL,
    channel VARCHAR,
    url VARCHAR,
    date_time TIMESTAMP NOT NULL,
    extra VARCHAR
) WITH ('connectors' = '[{"transport": {"name": "nexmark", "config": {"events": 10000000}}}]');

CREATE VIEW q5 AS
SELECT AuctionBids.auction, AuctionBids.num
FROM (
    SELECT B1.auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
    FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) AS B1
    GROUP BY B1.auction, window_start, window_end
) AS AuctionBids
JOIN (
    SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
    FROM (
        SELECT COUNT(*) AS num, window_start AS starttime, window_end AS endtime
        FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) AS B2
        GROUP BY B2.auction, window_start, window_end
    ) AS CountBids
    GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn;
