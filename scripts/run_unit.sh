#!/bin/sh
# scripts/run_unit.sh - run each unit-test binary, report totals; exit 1 on
# any failure. cmocka prints per-test lines; we add one summary line.
pass=0; fail=0
for t in "$@"; do
    if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $t"; fi
done
echo "unit test programs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
