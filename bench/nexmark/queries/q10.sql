-- q10, log to file system: every bid with its day ('yyyy-MM-dd') and
-- minute ('HH:mm'). Flink's DATE_FORMAT is written with CASTs and SUBSTRING
-- (a TIMESTAMP's text is 'yyyy-MM-dd HH:mm:ss[.fff]').
CREATE VIEW q10 AS
SELECT auction, bidder, price, date_time, extra,
       CAST(CAST(date_time AS DATE) AS VARCHAR) AS dt,
       SUBSTRING(CAST(date_time AS VARCHAR) FROM 12 FOR 5) AS hm
FROM bid;
