-- Distinct-heavy benchmark: distinct (user, page) pairs out of many
-- repeated events, then pages per user.
CREATE TABLE events (
    user_id INT NOT NULL,
    page INT NOT NULL
) WITH ('connectors' = '[{"transport": {"name": "datagen", "config": {"seed": 3, "plan": [{
    "limit": 10000000,
    "fields": {"user_id": {"strategy": "uniform", "range": [0, 100000]},
               "page": {"strategy": "zipf", "range": [0, 50]}}}]}}}]');

CREATE MATERIALIZED VIEW pages_per_user AS
SELECT user_id, COUNT(*) AS pages
FROM (SELECT DISTINCT user_id, page FROM events) AS d
GROUP BY user_id;
