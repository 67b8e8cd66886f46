-- q21, add channel id: bids of the 4 named channels (id '0'..'3') or whose
-- URL has a channel_id parameter (its value). Flink's REGEXP_EXTRACT(url,
-- '(&|^)channel_id=([^&]*)', 2) is written with POSITION and SUBSTRING (for
-- '&channel_id=', the only form the generator produces).

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

CREATE VIEW q21 AS
SELECT auction, bidder, price, channel,
       CASE WHEN LOWER(channel) = 'apple' THEN '0'
            WHEN LOWER(channel) = 'google' THEN '1'
            WHEN LOWER(channel) = 'facebook' THEN '2'
            WHEN LOWER(channel) = 'baidu' THEN '3'
            ELSE SUBSTRING(rest FROM 1 FOR POSITION('&' IN rest || '&') - 1) END AS channel_id
FROM (
    SELECT auction, bidder, price, channel,
           CASE WHEN POSITION('&channel_id=' IN url) > 0
                THEN SUBSTRING(url FROM POSITION('&channel_id=' IN url) + 12) END AS rest
    FROM bid
) B
WHERE rest IS NOT NULL OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu');
