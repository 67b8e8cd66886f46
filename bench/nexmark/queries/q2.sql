-- q2, selection: the bids of every 123rd auction.
CREATE VIEW q2 AS SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
