CREATE TABLE transactions (
    from_account INT NOT NULL,
    to_account INT NOT NULL,
    amount INT NOT NULL,
    ts TIMESTAMP NOT NULL
) WITH ('connectors' = '[{
    "transport": {
      "name": "datagen", "config": {
        "seed": 0,
        "plan": [{
            "limit": 100000000,
            "fields": {
                "from_account": { "strategy": "uniform", "range": [1,10] },
                "to_account": { "strategy": "uniform", "range": [1,10] },
                "amount": { "strategy": "zipf", "range": [1,1000] },
                "ts": { "scale": 1000 }
            }
        }]
        }
    }
}]');

CREATE VIEW credits AS
SELECT
    to_account AS account,
    sum(amount) AS credits
FROM
    transactions
GROUP BY
    to_account;

CREATE VIEW debits AS
SELECT
    from_account AS account,
    sum(amount) AS debits
FROM
    transactions
GROUP BY
    from_account;

CREATE MATERIALIZED VIEW balance AS
SELECT
    credits.account AS account,
    credits - debits AS balance
FROM
    credits,
    debits
WHERE
    credits.account = debits.account;
