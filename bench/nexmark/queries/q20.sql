-- q20, expand bid with auction: bids on category-10 auctions with the
-- auction's columns.
CREATE VIEW q20 AS
SELECT auction, bidder, price, channel, url, B.date_time AS date_time, B.extra AS extra,
       itemName, description, initialBid, reserve, A.date_time AS auction_date_time, expires,
       seller, category, A.extra AS auction_extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10;
