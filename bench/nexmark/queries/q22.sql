-- q22, get URL directories: each bid with the URL's parts 3, 4 and 5
-- (0-based, split on '/'), Flink's form.
CREATE VIEW q22 AS
SELECT auction, bidder, price, channel,
       SPLIT_INDEX(url, '/', 3) AS dir1,
       SPLIT_INDEX(url, '/', 4) AS dir2,
       SPLIT_INDEX(url, '/', 5) AS dir3
FROM bid;
