-- Skewed join benchmark: as bench/join.sql, but half of the orders (the
-- even ids) belong to one customer (id 0), so one join key holds half of
-- one side's rows.
CREATE TABLE customers (
    id INT NOT NULL,
    region INT NOT NULL
) WITH ('connectors' = '[{"transport": {"name": "datagen", "config": {"seed": 1, "plan": [{
    "limit": 100000,
    "fields": {"region": {"strategy": "uniform", "range": [0, 10]}}}]}}}]');

CREATE TABLE orders (
    id BIGINT NOT NULL,
    customer INT NOT NULL,
    amount INT NOT NULL
) WITH ('connectors' = '[{"transport": {"name": "datagen", "config": {"seed": 2, "plan": [{
    "limit": 10000000,
    "fields": {"customer": {"strategy": "uniform", "range": [0, 100000]},
               "amount": {"strategy": "uniform", "range": [1, 100]}}}]}}}]');

CREATE VIEW skewed_orders AS
SELECT id, CASE WHEN id % 2 = 0 THEN 0 ELSE customer END AS customer, amount
FROM orders;

CREATE MATERIALIZED VIEW sales_by_region AS
SELECT c.region, SUM(o.amount) AS total, COUNT(*) AS orders
FROM skewed_orders o JOIN customers c ON o.customer = c.id
GROUP BY c.region;
