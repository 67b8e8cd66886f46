#!/usr/bin/env node
// bench/peers/duckdb_join.mjs - the DuckDB peer of the join-heavy benchmark.
//
//   node bench/peers/duckdb_join.mjs N THREADS
//
// Builds in-memory DuckDB tables of the shape of bench/join.sql:
// customers(id 0..99999, region uniform 0..9) and orders(id 0..N-1, customer
// uniform 0..99999, amount uniform 1..99), drawn with DuckDB's hash() (the
// same sizes and distributions as Sluice's datagen, not the same rows), and
// the view sales_by_region written as in join.sql. Then times:
//   recompute               SELECT * FROM sales_by_region, median of 3 runs
//                           (wall; recompute_cpu_s: the process's CPU time,
//                           user + system over DuckDB's threads, median)
//   append                  INSERT of N/100 new orders (pre-generated into a
//                           staging table, untimed)
//   recompute_after_append  one recompute
// and prints one JSON line. The result's SUM(orders) is checked against
// N and N + N/100. Diagnostics go to stderr.
import { DuckDBInstance } from '@duckdb/node-api';

const args = process.argv.slice(2);
if (args.length !== 2) {
  process.stderr.write('usage: node duckdb_join.mjs N THREADS\n');
  process.exit(2);
}
const N = Number(args[0]);
const T = Number(args[1]);
if (!Number.isSafeInteger(N) || N < 100 || !Number.isSafeInteger(T) || T < 1) {
  process.stderr.write('duckdb_join: N must be an integer >= 100 and THREADS >= 1\n');
  process.exit(2);
}
const NA = Math.floor(N / 100);
const log = (s) => process.stderr.write(`duckdb_join: ${s}\n`);
const now = () => performance.now() / 1000;
async function timed(fn) {
  const t0 = now();
  const r = await fn();
  return [now() - t0, r];
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const orders = (lo, hi) => `SELECT i AS id, (hash(3 * i) % 100000)::INT AS customer,
  (1 + hash(3 * i + 1) % 99)::INT AS amount FROM range(${lo}, ${hi}) t(i)`;

const inst = await DuckDBInstance.create(':memory:', { threads: String(T) });
const con = await inst.connect();
await con.run(`SET threads = ${T}`);
await con.run(`CREATE TABLE customers AS SELECT i::INT AS id, (hash(7 * i) % 10)::INT AS region
  FROM range(0, 100000) t(i)`);
await con.run('CREATE TABLE orders (id BIGINT NOT NULL, customer INT NOT NULL, amount INT NOT NULL)');
await con.run(`CREATE VIEW sales_by_region AS
  SELECT c.region, SUM(o.amount) AS total, COUNT(*) AS orders
  FROM orders o JOIN customers c ON o.customer = c.id
  GROUP BY c.region`);
const [genS] = await timed(() => con.run(`INSERT INTO orders ${orders(0, N)}`));
log(`generated ${N} orders in ${genS.toFixed(3)} s`);
await con.run(`CREATE TABLE staging AS ${orders(N, N + NA)}`);

const cpuRuns = []; // CPU seconds (user + system) of the process, DuckDB's threads included
const recompute = async (want) => {
  const c0 = process.cpuUsage();
  const [s, reader] = await timed(() => con.runAndReadAll('SELECT * FROM sales_by_region'));
  const c = process.cpuUsage(c0);
  cpuRuns.push((c.user + c.system) / 1e6);
  let n = 0;
  for (const row of reader.getRows()) n += Number(row[2]);
  if (n !== want) throw new Error(`sales_by_region counts ${n} orders, want ${want}`);
  return s;
};
const runs = [];
for (let r = 0; r < 3; r++) runs.push(await recompute(N));
const recomputeCpu = median(cpuRuns);
const [appendS] = await timed(() => con.run('INSERT INTO orders SELECT * FROM staging'));
const after = await recompute(N + NA);
const rss = Number((await import('node:fs')).readFileSync('/proc/self/status', 'utf8')
  .match(/VmHWM:\s+(\d+)/)[1]) / 1024;
console.log(JSON.stringify({
  engine: 'duckdb', n: N, threads: T, generate_s: genS, recompute_s: median(runs),
  recompute_runs_s: runs, recompute_cpu_s: recomputeCpu, append_rows: NA, append_s: appendS, recompute_after_append_s: after,
  peak_rss_mb: rss,
}));
