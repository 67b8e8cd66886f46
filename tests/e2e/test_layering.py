"""The source tree keeps its dependency direction (STYLE.md section 3), and
each module defines what its headers declare.

    base <- expr <- zset <- circuit <- runtime <- io <- pipeline <- server <- pgwire <- cli
    base <- expr <- zset <- storage <- pipeline
    base <- cluster <- runtime (exchange.c), pipeline, cli, slt
    base, expr, circuit <- sql <- pipeline, server, cli, slt

A module includes only headers of the modules below it, with no exception:
the stateful operators in circuit/ meet the other workers through their
Shard (circuit/shard.h), whose records the runtime moves through
runtime/exchange.h, a leaf (base only) whose implementation also uses
cluster/ (the transport between hosts, base only).

Every function and variable a header of src/<mod>/ declares (anything not
static: static inline helpers are the header's own) is defined by an object
of the same module: a declaration lives with its definition, so the include
that finds it is the dependency the first test checks. Definitions are read
with nm from the release objects (build/obj/<mod>/*.o beside
$SLUICE_RELEASE, or ROOT/build/obj), which make test builds first."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")

ALLOWED = {
    "base": set(),
    "console": set(),
    "expr": {"base"},
    "zset": {"base", "expr"},
    "objstore": {"base"},
    "storage": {"base", "expr", "zset", "objstore"},
    "sql": {"base", "expr", "circuit"},
    "circuit": {"base", "expr", "zset"},
    "cluster": {"base"},
    "runtime": {"base", "expr", "zset", "circuit", "cluster"},
    "io": {"base", "expr", "zset", "circuit", "runtime", "objstore"},
    "pipeline": {"base", "expr", "zset", "circuit", "runtime", "io", "sql", "storage", "cluster"},
    "server": {"base", "expr", "zset", "circuit", "runtime", "io", "pipeline", "sql", "console"},
    "pgwire": {"base", "expr", "zset", "circuit", "runtime", "io", "pipeline", "sql", "server"},
    "manager": {"base", "expr", "zset", "circuit", "sql", "server", "pipeline", "console"},
    "cli": {"base", "expr", "zset", "circuit", "runtime", "io", "pipeline", "sql", "server", "cluster",
            "pgwire", "manager"},
    "slt": {"base", "expr", "zset", "circuit", "runtime", "io", "pipeline", "sql", "cluster"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"\.\./([a-z]+)/([^"]+)"', re.M)
IDENT = re.compile(r"[A-Za-z_]\w*")


def modules():
    return sorted(m for m in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, m)))


def test_every_module_includes_only_modules_below_it():
    bad = []
    for mod in modules():
        d = os.path.join(SRC, mod)
        assert mod in ALLOWED, "new module src/%s: add it to ALLOWED with its place" % mod
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            text = open(os.path.join(d, f), encoding="utf-8").read()
            for dep, header in INCLUDE.findall(text):
                if dep != mod and dep not in ALLOWED[mod]:
                    bad.append("src/%s/%s includes ../%s/%s" % (mod, f, dep, header))
    assert not bad, "dependency direction broken:\n" + "\n".join(bad)


def test_exchange_is_a_leaf():
    for f in ("exchange.h", "exchange.c"):
        text = open(os.path.join(SRC, "runtime", f), encoding="utf-8").read()
        deps = {d for d, _ in INCLUDE.findall(text)}
        allowed = {"base"} if f.endswith(".h") else {"base", "cluster"}
        assert deps <= allowed, "runtime/%s must depend on %s only: %s" % (f, allowed, deps)


# ---- which module defines what a header declares ----------------------------

def strip_c(text):
    """Comments, preprocessor lines and string contents out."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"\\\n", " ", text)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def drop_attributes(s):
    while "__attribute__" in s:
        i = s.index("__attribute__")
        j = s.index("(", i)
        depth = 0
        for k in range(j, len(s)):
            depth += {"(": 1, ")": -1}.get(s[k], 0)
            if depth == 0:
                break
        s = s[:i] + " " + s[k + 1:]
    return s


def top_level_statements(text):
    """(kind, text) of each top-level statement: "decl" up to its semicolon
    with brace bodies (struct, enum, initializer) reduced to {}, or "body"
    for a function definition (its head)."""
    out, cur, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "{":
            head = "".join(cur).strip()
            depth = 0
            while i < n:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                if depth == 0:
                    break
                i += 1
            if (re.search(r"\)\s*$", drop_attributes(head)) and "=" not in head
                    and not head.startswith(("typedef", "struct", "union", "enum"))):
                out.append(("body", head))
                cur = []
            else:
                cur.append("{}")
        elif c == ";":
            out.append(("decl", "".join(cur).strip()))
            cur = []
        else:
            cur.append(c)
        i += 1
    return out


def declared_names(text):
    """Functions and variables a header declares with external linkage."""
    names = []
    for kind, st in top_level_statements(strip_c(text)):
        st = " ".join(drop_attributes(st).split())
        if kind == "body" or not st or st.startswith(("typedef", "static")):
            continue
        if re.match(r"(struct|union|enum)\b[^(]*$", st) and not re.search(r"\}\s*\**\s*\w", st) \
                and len(IDENT.findall(st)) <= 2:
            continue  # a type's definition or forward declaration
        paren = st.find("(")
        ptr = re.search(r"\(\s*\*\s*(\w+)\s*\)", st)
        if ptr and ptr.start() == paren:  # a function pointer variable
            names.append(ptr.group(1))
        elif paren >= 0:  # a function
            ids = IDENT.findall(st[:paren])
            if ids:
                names.append(ids[-1])
        else:  # a variable
            ids = IDENT.findall(re.split(r"[\[=]", st)[0])
            if ids:
                names.append(ids[-1])
    return names


def object_dir():
    rel = os.environ.get("SLUICE_RELEASE")
    d = os.path.join(os.path.dirname(rel), "obj") if rel else os.path.join(ROOT, "build", "obj")
    if not os.path.isdir(d):
        pytest.fail("no objects in %s: build with `make` (or set SLUICE_RELEASE)" % d)
    return d


def defined_symbols(objdir):
    """Global symbol -> the modules whose objects define it (objects of
    sources that still exist, none older than its source)."""
    defs = {}
    for mod in modules():
        d = os.path.join(objdir, mod)
        if not os.path.isdir(d):
            continue
        objs = []
        for f in sorted(os.listdir(d)):
            src = os.path.join(SRC, mod, f[:-2] + ".c")
            if f.endswith(".o") and os.path.exists(src):
                o = os.path.join(d, f)
                assert os.path.getmtime(o) >= os.path.getmtime(src), \
                    "%s is older than its source: run make" % o
                objs.append(o)
        if not objs:
            continue
        out = subprocess.run(["nm", "--defined-only", "-g"] + objs, capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3:
                defs.setdefault(parts[2], set()).add(mod)
    return defs


def test_declarations_parse_as_expected():
    text = """
    #define X(a) f(a);
    typedef struct T { int (*cb)(int); } T;
    struct Fwd;
    enum E { E_A, E_B };
    /* int commented(void); */
    static inline int helper(int x) { return x; }
    extern __thread int *counter;
    __attribute__((format(printf, 2, 3))) int say(T *t, const char *fmt, ...);
    int call(void (*fn)(void *arg), void *arg);
    const char *const *names(int n);
    extern void (*hook)(int);
    int table[4];
    """
    assert declared_names(text) == ["counter", "say", "call", "names", "hook", "table"]


def test_each_module_defines_what_its_headers_declare():
    defs = defined_symbols(object_dir())
    assert "sl_malloc" in defs and "rt_step" in defs, "nm found no definitions"
    bad = []
    for mod in modules():
        d = os.path.join(SRC, mod)
        for f in sorted(os.listdir(d)):
            if not f.endswith(".h"):
                continue
            for name in declared_names(open(os.path.join(d, f), encoding="utf-8").read()):
                where = defs.get(name, set())
                if mod in where:
                    continue
                bad.append("src/%s/%s declares %s, defined in %s" % (
                    mod, f, name, ", ".join(sorted(where)) or "no module"))
    assert not bad, "declarations away from their definitions:\n" + "\n".join(bad)
