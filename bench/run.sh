#!/bin/sh
# bench/run.sh - build the benchmark programs and run bench/bench.py.
set -e
cd "$(dirname "$0")/.."
make --no-print-directory build/sluice build/bench/bank_bench build/bench/probe
exec /usr/bin/python3 bench/bench.py "$@"
