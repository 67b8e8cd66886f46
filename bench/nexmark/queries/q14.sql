-- q14, calculation: bids between 1M and 50M euros with the time of day they
-- came in and the number of 'c's in extra (Flink's count_char UDF written
-- with CHAR_LENGTH and REPLACE).
CREATE VIEW q14 AS
SELECT auction, bidder, 0.908 * price AS price,
       CASE WHEN EXTRACT(HOUR FROM date_time) >= 8 AND EXTRACT(HOUR FROM date_time) <= 18
                THEN 'dayTime'
            WHEN EXTRACT(HOUR FROM date_time) <= 6 OR EXTRACT(HOUR FROM date_time) >= 20
                THEN 'nightTime'
            ELSE 'otherTime' END AS bidTimeType,
       date_time, extra,
       CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')) AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
