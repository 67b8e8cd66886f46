"""The source tree keeps its dependency direction (STYLE.md section 3):
base <- expr <- zset <- circuit <- runtime <- io <- pipeline <- cli, with sql
using base, expr and the circuit builder. A module includes only headers of
the modules below it; runtime/exchange.h is a leaf (base only) that the
stateful operators in circuit/ use; its implementation also uses cluster/
(the transport between hosts, base only)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")

ALLOWED = {
    "base": set(),
    "expr": {"base"},
    "zset": {"base", "expr"},
    "storage": {"base", "expr", "zset"},
    "sql": {"base", "expr", "circuit"},
    "circuit": {"base", "expr", "zset", "runtime/exchange.h"},
    "cluster": {"base"},
    "runtime": {"base", "expr", "zset", "circuit", "cluster"},
    "io": {"base", "expr", "zset", "circuit", "runtime"},
    "pipeline": {"base", "expr", "zset", "circuit", "runtime", "io", "sql", "storage", "cluster"},
    "server": {"base", "expr", "zset", "circuit", "runtime", "io", "pipeline", "sql"},
    "cli": {"base", "expr", "zset", "circuit", "runtime", "io", "pipeline", "sql", "server", "cluster"},
    "slt": {"base", "expr", "zset", "circuit", "runtime", "io", "pipeline", "sql", "cluster"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"\.\./([a-z]+)/([^"]+)"', re.M)


def test_every_module_includes_only_modules_below_it():
    bad = []
    for mod in sorted(os.listdir(SRC)):
        d = os.path.join(SRC, mod)
        if not os.path.isdir(d):
            continue
        assert mod in ALLOWED, "new module src/%s: add it to ALLOWED with its place" % mod
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            text = open(os.path.join(d, f), encoding="utf-8").read()
            for dep, header in INCLUDE.findall(text):
                if dep == mod:
                    continue
                if dep in ALLOWED[mod] or "%s/%s" % (dep, header) in ALLOWED[mod]:
                    continue
                bad.append("src/%s/%s includes ../%s/%s" % (mod, f, dep, header))
    assert not bad, "dependency direction broken:\n" + "\n".join(bad)


def test_exchange_is_a_leaf():
    for f in ("exchange.h", "exchange.c"):
        text = open(os.path.join(SRC, "runtime", f), encoding="utf-8").read()
        deps = {d for d, _ in INCLUDE.findall(text)}
        allowed = {"base"} if f.endswith(".h") else {"base", "cluster"}
        assert deps <= allowed, "runtime/%s must depend on %s only: %s" % (f, allowed, deps)
