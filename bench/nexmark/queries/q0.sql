-- q0, pass-through: every bid.
CREATE VIEW q0 AS SELECT auction, bidder, price, date_time, extra FROM bid;
