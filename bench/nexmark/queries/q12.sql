-- q12, windows per bidder: bid counts per bidder and 10 s tumbling window,
-- on event time as Feldera does (processing time would not be
-- deterministic).
CREATE VIEW q12 AS
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
