-- q21, add channel id: bids of the 4 named channels (id '0'..'3') or whose
-- URL has a channel_id parameter (its value). Flink's REGEXP_EXTRACT(url,
-- '(&|^)channel_id=([^&]*)', 2) is written with POSITION and SUBSTRING (for
-- '&channel_id=', the only form the generator produces).
CREATE VIEW q21 AS
SELECT auction, bidder, price, channel,
       CASE WHEN LOWER(channel) = 'apple' THEN '0'
            WHEN LOWER(channel) = 'google' THEN '1'
            WHEN LOWER(channel) = 'facebook' THEN '2'
            WHEN LOWER(channel) = 'baidu' THEN '3'
            ELSE SUBSTRING(rest FROM 1 FOR POSITION('&' IN rest || '&') - 1) END AS channel_id
FROM (
    SELECT auction, bidder, price, channel,
           CASE WHEN POSITION('&channel_id=' IN url) > 0
                THEN SUBSTRING(url FROM POSITION('&channel_id=' IN url) + 12) END AS rest
    FROM bid
) B
WHERE rest IS NOT NULL OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu');
