-- q17, auction statistics report: per auction and day, bid counts in all
-- and per price rank, and min, max, average and sum of the prices.
CREATE VIEW q17 AS
SELECT auction, CAST(CAST(date_time AS DATE) AS VARCHAR) AS day,
       COUNT(*) AS total_bids,
       COUNT(*) FILTER (WHERE price < 10000) AS rank1_bids,
       COUNT(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
       COUNT(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
       MIN(price) AS min_price, MAX(price) AS max_price, AVG(price) AS avg_price,
       SUM(price) AS sum_price
FROM bid
GROUP BY auction, CAST(CAST(date_time AS DATE) AS VARCHAR);
