-- q22, get URL directories: each bid with the URL's parts 3, 4 and 5
-- (0-based, split on '/'). Flink's SPLIT_INDEX is written with POSITION
-- and SUBSTRING: s3 is the URL after its third '/'.

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

CREATE VIEW q22 AS
SELECT auction, bidder, price, channel,
       SUBSTRING(s3 FROM 1 FOR POSITION('/' IN s3 || '/') - 1) AS dir1,
       SUBSTRING(s4 FROM 1 FOR POSITION('/' IN s4 || '/') - 1) AS dir2,
       SUBSTRING(s5 FROM 1 FOR POSITION('/' IN s5 || '/') - 1) AS dir3
FROM (
    SELECT *, SUBSTRING(s4 FROM POSITION('/' IN s4) + 1) AS s5
    FROM (
        SELECT *, SUBSTRING(s3 FROM POSITION('/' IN s3) + 1) AS s4
        FROM (
            SELECT auction, bidder, price, channel,
                   SUBSTRING(s2 FROM POSITION('/' IN s2) + 1) AS s3
            FROM (
                SELECT auction, bidder, price, channel,
                       SUBSTRING(s1 FROM POSITION('/' IN s1) + 1) AS s2
                FROM (SELECT auction, bidder, price, channel,
                             SUBSTRING(url FROM POSITION('/' IN url) + 1) AS s1 FROM bid) U1
            ) U2
        ) U3
    ) U4
) U5;
