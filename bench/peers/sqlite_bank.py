#!/usr/bin/python3
"""bench/peers/sqlite_bank.py - the SQLite peer of the bank benchmark.

    /usr/bin/python3 bench/peers/sqlite_bank.py N [--exact] [--file PATH]

Builds a table transactions(from_account INT, to_account INT, amount INT,
ts TIMESTAMP) of N rows (in memory, or in the database file PATH, created
afresh), the views credits, debits and balance of examples/bank.sql, then
times:
  recompute                 SELECT * FROM balance, median of 3 runs
  append                    INSERT of N/100 new rows (rows N .. N+N/100-1,
                            pre-generated into a staging table, untimed)
  recompute_after_append    SELECT * FROM balance once
  delete                    DELETE of the N/100 oldest rows (ts < N/100)
  recompute_after_delete    SELECT * FROM balance once
and prints one JSON line (see README.md). Progress goes to stderr. SQLite is
single-threaded ("threads": 1).

Data. ts is stored as INTEGER seconds since 1970-01-01 (row index i).
Default: generated inside SQLite by a recursive CTE over the row index that
carries the state of L'Ecuyer's combined LCG (1988; moduli 2147483563 and
2147483399, all products below 2^63), four draws z uniform in [0, M) per row
(M = 2147483562): from and to = 1 + z * 9 / M, amount = a Walker alias table
over weights 1/k (k=1..999) joined on bucket z * 999 / M, kept when a fourth
draw < threshold * M, else the bucket's alias. Deterministic (fixed seeds), same distributions as
Sluice's datagen, different rows.
--exact: rows generated in Python bit-identical to Sluice's datagen for
examples/bank.sql (seed 0) and to bench/probe (wyrand over a Weyl counter per
column), inserted with executemany; several times slower, but the "balance"
printed equals the probe's and Sluice's for the same N.
"""
import json
import math
import resource
import sqlite3
import statistics
import sys
import time

MASK64 = (1 << 64) - 1
WY_INC = 0xA0761D6478BD642F
WY_XOR = 0xE7037ED1A0B428DB
GAMMA2 = 0xD1B54A32D192ED03
ZN = 999

# L'Ecuyer (1988) combined multiplicative LCG
M1, A1 = 2147483563, 40014
M2, A2 = 2147483399, 40692
DRAWS = 4  # draws per row


def log(msg):
    sys.stderr.write("sqlite_bank: %s\n" % msg)
    sys.stderr.flush()


def usage():
    sys.stderr.write("usage: sqlite_bank.py N [--exact] [--file PATH]\n")
    sys.exit(2)


# ------------------------------------------------------------------ draws
def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def stream_key(seed, p, c, s):
    k = mix64(seed ^ 0x5EED5EED5EED5EED)
    k ^= mix64((p << 32) ^ (c << 4) ^ s ^ GAMMA2)
    return mix64(k)


def zipf_alias():
    """Walker/Vose alias table over weights 1/k, k=1..999, built exactly as
    Sluice's datagen (and the probe) do; thresholds are 64-bit integers."""
    p = [math.exp(-1.0 * math.log(k + 1)) for k in range(ZN)]
    s = 0.0
    for x in p:
        s += x
    p = [x * ZN / s for x in p]
    small = [k for k in range(ZN) if p[k] < 1]
    large = [k for k in range(ZN) if p[k] >= 1]
    thr = [0] * ZN
    alias = [0] * ZN
    while small and large:
        sm = small.pop()
        lg = large[-1]
        thr[sm] = int(math.ldexp(p[sm], 64))
        alias[sm] = lg
        p[lg] = (p[lg] + p[sm]) - 1
        if p[lg] < 1:
            large.pop()
            small.append(lg)
    while large:
        lg = large.pop()
        thr[lg] = MASK64
        alias[lg] = lg
    while small:
        sm = small.pop()
        thr[sm] = MASK64
        alias[sm] = sm
    return thr, alias


def exact_rows(lo, hi, thr, alias):
    """Rows [lo, hi) as Sluice's datagen generates them for bank.sql."""
    kf, kt, ka = (stream_key(0, 0, c, 0) for c in range(3))
    sf = (kf + lo * WY_INC) & MASK64
    st = (kt + lo * WY_INC) & MASK64
    sa = (ka + lo * WY_INC) & MASK64
    M, X, INC = MASK64, WY_XOR, WY_INC
    for i in range(lo, hi):
        t = sf * (sf ^ X)
        f = 1 + ((((t >> 64) ^ (t & M)) * 9) >> 64)
        t = st * (st ^ X)
        g = 1 + ((((t >> 64) ^ (t & M)) * 9) >> 64)
        t = sa * (sa ^ X)
        m = ((t >> 64) ^ (t & M)) * ZN
        k = m >> 64
        a = 1 + (k if (m & M) < thr[k] else alias[k])
        yield (f, g, a, i)
        sf = (sf + INC) & M
        st = (st + INC) & M
        sa = (sa + INC) & M


def lcg_rows_sql(lo, hi, seed):
    """INSERT source for rows [lo, hi): a recursive CTE carrying the two LCG
    states; row i uses draws j=1..4 of its step: s*A^j mod M. Values come
    from a draw's high part (z * 9 / (M1 - 1)): z % 9 of consecutive draws
    showed a slight pair dependence (chi-square ~110 for 80 df at 2M rows)."""
    s1 = 1 + (mix64(seed * 2 + 1) % (M1 - 1))
    s2 = 1 + (mix64(seed * 2 + 2) % (M2 - 1))
    a1 = [pow(A1, j, M1) for j in range(DRAWS + 1)]
    a2 = [pow(A2, j, M2) for j in range(DRAWS + 1)]

    def z(j):  # combined draw j of the row, in [0, M1 - 1)
        return "((s1 * %d %% %d - s2 * %d %% %d + %d) %% %d)" % (
            a1[j], M1, a2[j], M2, M1 - 1, M1 - 1)

    return """
      WITH RECURSIVE r(i, s1, s2) AS (
        SELECT %d, %d, %d
        UNION ALL
        SELECT i + 1, s1 * %d %% %d, s2 * %d %% %d FROM r WHERE i < %d)
      SELECT 1 + %s * 9 / %d, 1 + %s * 9 / %d,
             1 + CASE WHEN %s < z.thr31 THEN z.k ELSE z.alias END,
             r.i
      FROM r JOIN zipf_alias z ON z.k = %s * %d / %d""" % (
        lo, s1, s2, a1[DRAWS], M1, a2[DRAWS], M2, hi - 1,
        z(1), M1 - 1, z(2), M1 - 1, z(4), z(3), ZN, M1 - 1)


def main():
    args = sys.argv[1:]
    exact = "--exact" in args
    path = ":memory:"
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--exact":
            pass
        elif a == "--file":
            if i + 1 >= len(args):
                usage()
            path = args[i + 1]
            i += 1
        elif a.startswith("--"):
            usage()
        else:
            pos.append(a)
        i += 1
    if len(pos) != 1:
        usage()
    try:
        n = int(float(pos[0])) if "e" in pos[0].lower() else int(pos[0])
    except ValueError:
        usage()
    if n < 0:
        usage()
    na = n // 100

    if path != ":memory:":
        import os
        for suffix in ("", "-journal", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    con = sqlite3.connect(path, isolation_level=None)
    # default temp_store and cache_size: GROUP BY sorts through a temp b-tree,
    # and on 1M rows temp_store=MEMORY or a 1 GiB cache made it 1.6-3x slower
    if path != ":memory:":
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")

    thr, alias = zipf_alias()
    # thr31: the 64-bit threshold scaled to a draw uniform in [0, M1 - 1)
    con.execute("CREATE TABLE zipf_alias (k INTEGER PRIMARY KEY, thr31 INTEGER, alias INTEGER)")
    con.executemany("INSERT INTO zipf_alias VALUES (?, ?, ?)",
                    [(k, (thr[k] * (M1 - 1)) >> 64 if thr[k] != MASK64 else M1, alias[k])
                     for k in range(ZN)])
    con.execute("""CREATE TABLE transactions (
        from_account INT NOT NULL, to_account INT NOT NULL,
        amount INT NOT NULL, ts TIMESTAMP NOT NULL)""")
    con.execute("CREATE TABLE staging AS SELECT * FROM transactions WHERE 0")
    con.execute("""CREATE VIEW credits AS SELECT to_account AS account, sum(amount) AS credits
        FROM transactions GROUP BY to_account""")
    con.execute("""CREATE VIEW debits AS SELECT from_account AS account, sum(amount) AS debits
        FROM transactions GROUP BY from_account""")
    con.execute("""CREATE VIEW balance AS SELECT credits.account AS account,
        credits - debits AS balance FROM credits, debits
        WHERE credits.account = debits.account""")

    def fill(table, lo, hi, seed):
        con.execute("BEGIN")
        if exact:
            con.executemany("INSERT INTO %s VALUES (?, ?, ?, ?)" % table,
                            exact_rows(lo, hi, thr, alias))
        elif hi > lo:
            con.execute("INSERT INTO %s %s" % (table, lcg_rows_sql(lo, hi, seed)))
        con.execute("COMMIT")

    t0 = time.perf_counter()
    fill("transactions", 0, n, 0)
    gen_s = time.perf_counter() - t0
    log("generated %d rows in %.3f s" % (n, gen_s))
    t0 = time.perf_counter()
    fill("staging", n, n + na, 1)
    log("staged %d rows in %.3f s" % (na, time.perf_counter() - t0))

    def recompute():
        t = time.perf_counter()
        rows = con.execute("SELECT * FROM balance ORDER BY account").fetchall()
        return time.perf_counter() - t, {str(a): b for a, b in rows}

    runs = []
    bal = None
    for _ in range(3):
        s, bal = recompute()
        runs.append(s)
    log("recompute runs %s" % " ".join("%.4f" % x for x in runs))

    t0 = time.perf_counter()
    con.execute("INSERT INTO transactions SELECT * FROM staging")
    append_s = time.perf_counter() - t0
    rec_app_s, bal_app = recompute()

    t0 = time.perf_counter()
    con.execute("DELETE FROM transactions WHERE ts < ?", (na,))
    delete_s = time.perf_counter() - t0
    rec_del_s, bal_del = recompute()

    count = con.execute("SELECT count(*) FROM transactions").fetchone()[0]
    if count != n:
        log("warning: %d rows at the end, expected %d" % (count, n))

    def r6(x):
        return round(x, 6)

    out = {
        "engine": "sqlite",
        "rows": n,
        "threads": 1,
        "generate_s": r6(gen_s),
        "recompute_s": r6(statistics.median(runs)),
        "recompute_runs_s": [r6(x) for x in runs],
        "append_rows": na,
        "append_s": r6(append_s),
        "recompute_after_append_s": r6(rec_app_s),
        "delete_rows": na,
        "delete_s": r6(delete_s),
        "recompute_after_delete_s": r6(rec_del_s),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "data": "sluice-datagen-seed0" if exact else "sqlite-lcg",
        "storage": "memory" if path == ":memory:" else "file",
        "balance": bal,
        "balance_sum": sum(bal.values()),
        "balance_after_append": bal_app,
        "balance_after_delete": bal_del,
        "sqlite_version": sqlite3.sqlite_version,
    }
    sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
    con.close()


if __name__ == "__main__":
    main()
