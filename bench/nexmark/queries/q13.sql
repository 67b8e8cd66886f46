-- q13, bounded side input join: each bid with the value of the side input
-- row keyed by auction mod 10000. The side input (10000 rows from datagen)
-- never changes, so Flink's processing-time lookup join is this join.
CREATE TABLE side_input (
    key BIGINT NOT NULL,
    value VARCHAR
) WITH ('connectors' = '[{"transport": {"name": "datagen", "config": {"seed": 13,
    "plan": [{"limit": 10000, "fields": {"value": {"strategy": "word"}}}]}}}]');
CREATE VIEW q13 AS
SELECT B.auction, B.bidder, B.price, B.date_time, S.value
FROM bid B JOIN side_input S ON MOD(B.auction, 10000) = S.key;
