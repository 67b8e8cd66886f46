#!/bin/sh
# scripts/run_tsan.sh - the checks of `make tsan` (ThreadSanitizer build in
# build/tsan/): run each threaded unit test given; then a small version of
# examples/bank.sql with 3 workers in 40 steps (datagen input, the
# runtime's exchange between workers, aggregates and a join) to its end;
# then the HTTP server's threads against the controller and the checkpoint
# writer (scripts/tsan_http.py). A race report stops the program with exit
# status 66; exits 1 when any check failed.
set -u
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
fail=0
for t in "$@"; do
    if ! "$t" >build/tsan/last.log 2>&1; then
        fail=1
        echo "tsan: FAILED: $t"
        grep -A30 "WARNING: ThreadSanitizer" build/tsan/last.log | head -60
    else
        echo "tsan: ok: $t"
    fi
done
dir=build/tsan/e2e
rm -rf $dir
mkdir -p $dir
sed -e 's/"limit": 100000000,/"limit": 200000,/' examples/bank.sql >$dir/bank.sql
if ! build/tsan/sluice run $dir/bank.sql --workers 3 --until-done --no-progress --step-rows 5000 \
        --dump $dir/out >$dir/run.log 2>&1; then
    fail=1
    echo "tsan: FAILED: sluice run bank.sql --workers 3 (log: $dir/run.log)"
    grep -A30 "WARNING: ThreadSanitizer" $dir/run.log | head -60
elif [ ! -s $dir/out/balance.csv ]; then
    fail=1
    echo "tsan: FAILED: sluice run bank.sql --workers 3 wrote no balance.csv"
else
    echo "tsan: ok: sluice run bank.sql --workers 3 --until-done (200000 rows, 5000 a step)"
fi
if ! python3 scripts/tsan_http.py build/tsan/sluice $dir/http; then
    fail=1
    echo "tsan: FAILED: HTTP pushes, queries and checkpoints (log: $dir/http/http.log)"
    grep -A30 "WARNING: ThreadSanitizer" $dir/http/http.log | head -60
else
    echo "tsan: ok: HTTP pushes, queries and a checkpoint with 3 workers"
fi
[ $fail -eq 0 ]
