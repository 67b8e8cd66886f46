-- q6, average selling price by seller: per seller, the average final price
-- of its current and 10 previous auctions (ordered by closing time). Flink
-- SQL cannot express it; this is the intended form (final price = the
-- highest bid within the auction's open time).
CREATE VIEW q6 AS
SELECT seller, id, AVG(final) OVER (PARTITION BY seller ORDER BY expires, id
                                    ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_final
FROM (
    SELECT MAX(B.price) AS final, A.id, A.seller, A.expires
    FROM auction A, bid B
    WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
    GROUP BY A.id, A.seller, A.expires
) Q;
