-- q11, user sessions: per bidder, the bids of each session (a new session
-- starts 10 s or more after the bidder's previous bid). Sluice has no
-- SESSION windows; the sessions are numbered with LAG and a running SUM.

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

CREATE VIEW q11 AS
SELECT bidder, COUNT(*) AS bid_count, MIN(date_time) AS starttime,
       MAX(date_time) + INTERVAL '10' SECOND AS endtime
FROM (
    SELECT bidder, date_time, SUM(new_session) OVER (PARTITION BY bidder ORDER BY date_time) AS session
    FROM (
        SELECT bidder, date_time,
               CASE WHEN LAG(date_time) OVER (PARTITION BY bidder ORDER BY date_time) IS NULL
                      OR date_time - LAG(date_time) OVER (PARTITION BY bidder ORDER BY date_time)
                         >= INTERVAL '10' SECOND
                    THEN 1 ELSE 0 END AS new_session
        FROM bid
    ) S
) T
GROUP BY bidder, session;
