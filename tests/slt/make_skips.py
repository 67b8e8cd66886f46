#!/usr/bin/python3
"""Regenerate tests/slt/skips.tsv: run the sqllogictest corpus without a
skip list, and list every failing record with the reason it fails, by the
runner's message. A record listed here is skipped by `make test`; the file
is the honest inventory of what Sluice does not pass yet (see README.md
beside it). Reasons that say "not supported yet" are bugs to fix.

usage: tests/slt/make_skips.py [RUNNER] [CORPUS_DIR]
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUNNER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "sluice-slt")
CORPUS = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "..", "shared", "testdata", "slt")

# (message pattern, reason written to the skip list)
REASONS = [
    (r"correlated subqueries are not supported yet",
     "not supported yet: correlated subquery (decorrelation to be built, issue 3)"),
    (r"parenthesised join is not supported yet", "not supported yet: parenthesised join"),
    (r"OUTER JOIN is not supported yet", "not supported yet: outer join"),
    (r"must appear in GROUP BY",
     "non-standard SQL: a column outside GROUP BY and aggregates (SQLite picks an arbitrary row)"),
    (r"CREATE TRIGGER", "not applicable: triggers (views are maintained incrementally instead)"),
    (r"expected an expression, found \"\)\"", "non-standard SQL: empty IN list"),
    (r"'303132'", "non-standard SQL: blob literal X'...'"),
    (r"invalid BIGINT value", "SQLite typing: text compared with an INTEGER column"),
    (r"value too long for VARCHAR", "SQLite typing: VARCHAR(n) length not enforced by SQLite"),
    (r"wrong result",
     "SQLite typing: dynamic types (an INTEGER branch of COALESCE/NULLIF/CASE keeps integer "
     "division where standard SQL types the expression DOUBLE)"),
]


def main():
    files = []
    for d, _, names in os.walk(CORPUS):
        files += [os.path.join(d, n) for n in names if n.endswith(".test")]
    files.sort()
    out = subprocess.run([RUNNER, "--verbose"] + files, capture_output=True, text=True).stdout
    rows = []
    unknown = []
    for line in out.splitlines():
        m = re.match(r"FAIL (\S+):(\d+): (.*)", line)
        if not m:
            continue
        path, lineno, msg = m.groups()
        rel = os.path.relpath(path, CORPUS)
        for pat, reason in REASONS:
            if re.search(pat, msg):
                rows.append("%s:%s\t%s" % (rel, lineno, reason))
                break
        else:
            if msg.startswith("statement"):
                rows.append("%s:%s\t%s" % (rel, lineno, "depends on an unsupported statement: " + msg))
            else:
                unknown.append(line)
    # the records skipped by their own skipif/onlyif conditions, per file
    lst = os.path.join(HERE, ".skipped.tmp")
    subprocess.run([RUNNER, "--list-skipped", lst] + files, capture_output=True)
    per = {}
    with open(lst) as f:
        for line in f:
            where, reason = line.rstrip("\n").split("\t", 1)
            key = (where.rsplit(":", 1)[0], reason)
            per[key] = per.get(key, 0) + 1
    os.unlink(lst)
    with open(os.path.join(HERE, "skipped_by_condition.tsv"), "w") as f:
        f.write("# file<TAB>records<TAB>condition - records the corpus itself keeps from this\n"
                "# engine (skipif/onlyif); sluice-slt --list-skipped FILE lists each one\n")
        for (path, reason), n in sorted(per.items()):
            f.write("%s\t%d\t%s\n" % (path, n, reason))
    with open(os.path.join(HERE, "skips.tsv"), "w") as f:
        f.write("# file:line<TAB>reason - records sluice-slt skips (tests/slt/make_skips.py)\n")
        for r in rows:
            f.write(r + "\n")
    counts = {}
    for r in rows:
        reason = r.split("\t", 1)[1]
        counts[reason] = counts.get(reason, 0) + 1
    for reason, n in sorted(counts.items(), key=lambda x: -x[1]):
        print("%6d  %s" % (n, reason))
    if unknown:
        print("unclassified failures (fix them or add a reason):")
        print("\n".join(unknown[:50]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
