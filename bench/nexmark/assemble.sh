#!/bin/sh
# Writes bench/nexmark/qN.sql = the comment heading queries/qN.sql, then
# tables.sql, then the rest of queries/qN.sql (the query's views, and q13's
# side input table). Run after editing either; tests/e2e/test_nexmark.py
# checks that the files are up to date.
cd "$(dirname "$0")" || exit 1
for q in queries/q*.sql; do
    n=$(basename "$q")
    { awk '!/^--/{exit} {print}' "$q"; echo; cat tables.sql; echo
      awk 'body || !/^--/{body=1; print}' "$q"; } > "$n.tmp"
    mv "$n.tmp" "$n"
done
