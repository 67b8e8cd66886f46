-- q19, auction top-10 price: each auction's 10 highest bids with their rank.
CREATE VIEW q19 AS
SELECT *
FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
    FROM bid
) B
WHERE rank_number <= 10;
