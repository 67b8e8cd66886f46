-- q11, user sessions: per bidder, the bids of each session (a new session
-- starts 10 s or more after the bidder's previous bid). Sluice has no
-- SESSION windows; the sessions are numbered with LAG and a running SUM.
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
