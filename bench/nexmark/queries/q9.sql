-- q9, winning bids: each auction with its best bid (highest price, then
-- earliest) among the bids within its open time.
CREATE VIEW q9 AS
SELECT id, itemName, description, initialBid, reserve, date_time, expires, seller, category,
       extra, auction, bidder, price, bid_dateTime, bid_extra
FROM (
    SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_dateTime, B.extra AS bid_extra,
           ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
) W
WHERE rownum <= 1;
