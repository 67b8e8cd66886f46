#!/usr/bin/env node
// bench/peers/duckdb_bank.mjs - the DuckDB peer of the bank benchmark.
//
//   node bench/peers/duckdb_bank.mjs N THREADS [--exact]
//
// Builds an in-memory DuckDB table transactions(from_account INT,
// to_account INT, amount INT, ts TIMESTAMP) of N rows generated in SQL, the
// views credits, debits and balance of examples/bank.sql, then times:
//   recompute                 SELECT * FROM balance, median of 3 runs
//   append                    INSERT of N/100 new rows (rows N .. N+N/100-1,
//                             pre-generated into a staging table, untimed)
//   recompute_after_append    SELECT * FROM balance once
//   delete                    DELETE of the N/100 oldest rows (ts < N/100 s)
//   recompute_after_delete    SELECT * FROM balance once
// and prints one JSON line (see README.md). Diagnostics go to stderr.
//
// Data. By default each row i is generated from DuckDB's hash() of 3i+c
// (c = column); the amount uses the exact Zipf(1) alias table over 1..999.
// With --exact the rows are bit-identical to Sluice's datagen for
// examples/bank.sql (seed 0) and to bench/probe: each random column c has a
// stream key K_c and row i draws wyrand(K_c + i * 0xA0761D6478BD642F mod 2^64),
// computed in SQL with UHUGEINT arithmetic; accounts are 1 + high64(draw * 9),
// amount a Walker alias table over weights 1/k (k = 1..999) joined on the
// bucket high64(draw * 999). So "balance" in the output equals the probe's
// and Sluice's for the same N (generation is ~5-10x slower than hash()).
import { DuckDBInstance } from '@duckdb/node-api';

const MASK64 = (1n << 64n) - 1n;
const WY_INC = 0xa0761d6478bd642fn;
const WY_XOR = 0xe7037ed1a0b428dbn;
const GAMMA2 = 0xd1b54a32d192ed03n;
const ZN = 999;

function usage() {
  process.stderr.write('usage: node duckdb_bank.mjs N THREADS [--exact]\n');
  process.exit(2);
}

const args = process.argv.slice(2);
const exact = args.includes('--exact');
const pos = args.filter((a) => !a.startsWith('--'));
if (pos.length !== 2 || args.some((a) => a.startsWith('--') && a !== '--exact')) usage();
const N = Number(pos[0]);
const T = Number(pos[1]);
if (!Number.isSafeInteger(N) || N < 0 || !Number.isSafeInteger(T) || T < 1) usage();
const NA = Math.floor(N / 100); // rows appended and rows deleted

const log = (s) => process.stderr.write(`duckdb_bank: ${s}\n`);

// ---------------------------------------------------------------- the draws
function mix64(z) {
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return z ^ (z >> 31n);
}

function streamKey(seed, p, c, s) {
  let k = mix64(seed ^ 0x5eed5eed5eed5eedn);
  k ^= mix64((BigInt(p) << 32n) ^ (BigInt(c) << 4n) ^ BigInt(s) ^ GAMMA2);
  return mix64(k);
}

// Walker/Vose alias table over weights 1/k, built exactly as Sluice's
// datagen (and the probe) do, in doubles.
function zipfAlias() {
  const p = new Float64Array(ZN);
  let sum = 0;
  for (let k = 0; k < ZN; k++) {
    p[k] = Math.exp(-1.0 * Math.log(k + 1));
    sum += p[k];
  }
  const small = [];
  const large = [];
  for (let k = 0; k < ZN; k++) {
    p[k] = (p[k] * ZN) / sum;
    if (p[k] < 1) small.push(k);
    else large.push(k);
  }
  const thr = new Array(ZN);
  const alias = new Array(ZN);
  while (small.length > 0 && large.length > 0) {
    const s = small.pop();
    const l = large[large.length - 1];
    thr[s] = BigInt(Math.floor(p[s] * 2 ** 64)); // ldexp(p, 64), exact
    alias[s] = l;
    p[l] = p[l] + p[s] - 1;
    if (p[l] < 1) {
      large.pop();
      small.push(l);
    }
  }
  while (large.length > 0) {
    const l = large.pop();
    thr[l] = MASK64;
    alias[l] = l;
  }
  while (small.length > 0) {
    const s = small.pop();
    thr[s] = MASK64;
    alias[s] = s;
  }
  return { thr, alias };
}

// SQL for rows [lo, hi) of the table, columns in table order.
function rowsSql(lo, hi) {
  if (!exact) {
    // DuckDB's hash() (a 64-bit bijective mixer of an integer) of 3*row + c:
    // account 1 + h % 9, amount by the alias table with bucket h % 999 and
    // the remaining bits h // 999 against the threshold scaled to 2^64/999
    // (modulo biases ~1e-17, negligible).
    return `
      SELECT (1 + hash(3 * g.i) % 9)::INT AS from_account,
             (1 + hash(3 * g.i + 1) % 9)::INT AS to_account,
             (1 + CASE WHEN g.h // ${ZN} < z.thr_div THEN z.k ELSE z.alias END)::INT AS amount,
             make_timestamp(g.i * 1000000) AS ts
      FROM (SELECT range AS i, hash(3 * range + 2) AS h FROM range(${lo}, ${hi})) g
      JOIN zipf_alias z ON z.k = (g.h % ${ZN})::INT`;
  }
  const kf = streamKey(0n, 0, 0, 0);
  const kt = streamKey(0n, 0, 1, 0);
  const ka = streamKey(0n, 0, 2, 0);
  // Weyl counter of key K for row i: (K + i*INC) mod 2^64
  const ctr = (k) =>
    `((${k}::UHUGEINT + range::UHUGEINT * ${WY_INC}::UHUGEINT) & ${MASK64}::UHUGEINT)::UBIGINT`;
  // s*(s^X) as 128 bits
  const prod = (s) => `(${s}::UHUGEINT * xor(${s}, ${WY_XOR}::UBIGINT)::UHUGEINT)`;
  // wyrand output: high64 ^ low64
  const draw = (t) => `xor((${t} >> 64)::UBIGINT, (${t} & ${MASK64}::UHUGEINT)::UBIGINT)`;
  return `
    SELECT (1 + ((${draw('c.tf')}::UHUGEINT * 9) >> 64))::INT AS from_account,
           (1 + ((${draw('c.tt')}::UHUGEINT * 9) >> 64))::INT AS to_account,
           (1 + CASE WHEN ((c.m & ${MASK64}::UHUGEINT)::UBIGINT) < z.thr
                     THEN z.k ELSE z.alias END)::INT AS amount,
           make_timestamp(c.i * 1000000) AS ts
    FROM (SELECT i, tf, tt, ${draw('ta')}::UHUGEINT * ${ZN} AS m FROM (
            SELECT range AS i, ${prod('sf')} AS tf, ${prod('st')} AS tt, ${prod('sa')} AS ta
            FROM (SELECT range, ${ctr(kf)} AS sf, ${ctr(kt)} AS st, ${ctr(ka)} AS sa
                  FROM range(${lo}, ${hi})))) c
    JOIN zipf_alias z ON z.k = (c.m >> 64)::INT`;
}

const now = () => performance.now() / 1000;

async function timed(fn) {
  const t0 = now();
  const r = await fn();
  return [now() - t0, r];
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const inst = await DuckDBInstance.create(':memory:', { threads: String(T) });
const con = await inst.connect();
await con.run(`SET threads = ${T}`);

// the alias table: 999 rows (k, thr, alias)
const { thr, alias } = zipfAlias();
await con.run(
  'CREATE TABLE zipf_alias (k INT PRIMARY KEY, thr UBIGINT, thr_div UBIGINT, alias INT)',
);
{
  // thr_div: the threshold for a draw uniform in [0, floor(2^64 / 999))
  const div = (1n << 64n) / BigInt(ZN);
  const vals = thr
    .map((t, k) => `(${k}, ${t}, ${t === MASK64 ? MASK64 : (t * div) >> 64n}, ${alias[k]})`)
    .join(',');
  await con.run(`INSERT INTO zipf_alias VALUES ${vals}`);
}

await con.run(`CREATE TABLE transactions (
  from_account INT NOT NULL, to_account INT NOT NULL,
  amount INT NOT NULL, ts TIMESTAMP NOT NULL)`);
await con.run(`CREATE VIEW credits AS
  SELECT to_account AS account, sum(amount) AS credits FROM transactions GROUP BY to_account`);
await con.run(`CREATE VIEW debits AS
  SELECT from_account AS account, sum(amount) AS debits FROM transactions GROUP BY from_account`);
await con.run(`CREATE VIEW balance AS
  SELECT credits.account AS account, credits - debits AS balance
  FROM credits, debits WHERE credits.account = debits.account`);

const [genS] = await timed(() => con.run(`INSERT INTO transactions ${rowsSql(0, N)}`));
log(`generated ${N} rows in ${genS.toFixed(3)} s`);
{
  // staging rows for the append: not timed
  const [s] = await timed(() => con.run(`CREATE TABLE staging AS ${rowsSql(N, N + NA)}`));
  log(`staged ${NA} rows in ${s.toFixed(3)} s`);
}

const recompute = async () => {
  const [s, reader] = await timed(() => con.runAndReadAll('SELECT * FROM balance ORDER BY account'));
  const rows = reader.getRows();
  const bal = {};
  for (const [a, b] of rows) bal[String(a)] = Number(b);
  return [s, bal];
};

const runs = [];
let balance;
for (let r = 0; r < 3; r++) {
  const [s, bal] = await recompute();
  runs.push(s);
  balance = bal;
}
log(`recompute runs ${runs.map((x) => x.toFixed(4)).join(' ')}`);

const [appendS] = await timed(() => con.run('INSERT INTO transactions SELECT * FROM staging'));
const [recAppS, balanceAfterAppend] = await recompute();

const [deleteS] = await timed(() =>
  con.run(`DELETE FROM transactions WHERE ts < make_timestamp(${NA}::BIGINT * 1000000)`),
);
const [recDelS, balanceAfterDelete] = await recompute();

const count = Number((await con.runAndReadAll('SELECT count(*) FROM transactions')).getRows()[0][0]);
if (count !== N + NA - NA) log(`warning: ${count} rows at the end, expected ${N}`);

const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
const round = (x) => Math.round(x * 1e6) / 1e6;
const out = {
  engine: 'duckdb',
  rows: N,
  threads: T,
  generate_s: round(genS),
  recompute_s: round(median(runs)),
  recompute_runs_s: runs.map(round),
  append_rows: NA,
  append_s: round(appendS),
  recompute_after_append_s: round(recAppS),
  delete_rows: NA,
  delete_s: round(deleteS),
  recompute_after_delete_s: round(recDelS),
  peak_rss_mb: Math.round((process.resourceUsage().maxRSS / 1024) * 10) / 10,
  data: exact ? 'sluice-datagen-seed0' : 'duckdb-hash',
  balance,
  balance_sum: sum(balance),
  balance_after_append: balanceAfterAppend,
  balance_after_delete: balanceAfterDelete,
  duckdb_version: (await con.runAndReadAll('SELECT version()')).getRows()[0][0],
};
process.stdout.write(JSON.stringify(out) + '\n');
con.closeSync?.();
inst.closeSync?.();
