-- q5, hot items: per 10 s window sliding by 2 s, the auctions with the most
-- bids (ties kept).
CREATE VIEW q5 AS
SELECT AuctionBids.auction, AuctionBids.num
FROM (
    SELECT B1.auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
    FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) AS B1
    GROUP BY B1.auction, window_start, window_end
) AS AuctionBids
JOIN (
    SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
    FROM (
        SELECT COUNT(*) AS num, window_start AS starttime, window_end AS endtime
        FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) AS B2
        GROUP BY B2.auction, window_start, window_end
    ) AS CountBids
    GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn;
