-- q9, winning bids: each auction with its best bid (highest price, then
-- earliest) among the bids within its open time.

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

CREATE VIEW q9 AS
SELECT id, itemName, description, initialBid, reserve, date_time, expires, seller, category,
       extra, auction, bidder, price, bid_dateTime, bid_extra
FROM (
    SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_dateTime, B.extra AS bid_extra,
           ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
) W
WHERE rownum <= 1;
