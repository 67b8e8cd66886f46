-- q20, expand bid with auction: bids on category-10 auctions with the
-- auction's columns.

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

CREATE VIEW q20 AS
SELECT auction, bidder, price, channel, url, B.date_time AS date_time, B.extra AS extra,
       itemName, description, initialBid, reserve, A.date_time AS auction_date_time, expires,
       seller, category, A.extra AS auction_extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10;
