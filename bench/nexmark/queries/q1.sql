-- q1, currency conversion: every bid's price in euros (Flink: DECIMAL(23,3)).
CREATE VIEW q1 AS SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid;
