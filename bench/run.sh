#!/bin/sh
# bench/run.sh - build the benchmark programs and run bench/bench.py, then
# the HTTP ingest benchmark bench/http_bench.py, the fault-tolerance
# benchmark bench/ft_bench.py, the Nexmark benchmark bench/nexmark.py
# (1M events; 100K with --quick), the join-heavy benchmark beside DuckDB
# bench/join_peer.py (10M orders; 1M with --quick) and the scale-out benchmark
# bench/scaleout_bench.py (--quick is passed on).
set -e
cd "$(dirname "$0")/.."
make --no-print-directory build/sluice build/bench/bank_bench build/bench/probe
/usr/bin/python3 bench/bench.py "$@"
quick=""
for a in "$@"; do [ "$a" = "--quick" ] && quick="--quick"; done
/usr/bin/python3 bench/http_bench.py $quick
/usr/bin/python3 bench/ft_bench.py $quick
/usr/bin/python3 bench/nexmark.py --events "$([ -n "$quick" ] && echo 1e5 || echo 1e6)"
/usr/bin/python3 bench/join_peer.py --n "$([ -n "$quick" ] && echo 1000000 || echo 10000000)"
exec /usr/bin/python3 bench/scaleout_bench.py $quick
