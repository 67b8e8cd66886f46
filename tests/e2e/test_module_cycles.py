"""Inside a module the files use each other in one direction: no import
cycles (STYLE.md section 5, "one struct every file reaches into").

The rule. Within one module under src/, file X.c *uses* file Y.c when X.c
names a function or a global variable that Y.c defines (not static) and
whose declaration reaches X.c through a header of the module that X.c
includes, directly or through another of the module's headers (internal
headers such as pipeline_int.h included). The graph of "uses" must be
acyclic: a file can then be read, and tested, knowing only the files below
it. A call through a function pointer (a backend's vtable, a callback
passed as a parameter) is not a use: that is how a lower file calls back up
(pipeline/backend.h, the journal's stop predicate).

Modules listed in OWED still hold cycles (a dispatch file that calls every
family file, which call its helpers back); each must leave the list as
soon as its cycle is broken, and no module may join it. The pipeline
module is held to the rule."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")

# module -> why it is not acyclic yet (to be emptied, never extended)
OWED = {
    "circuit": "op.c dispatches to every op_*.c, which call op.c's helpers",
    "expr": "expr.c dispatches to the function families, which call its helpers",
    "io": "connector.c opens the transports, which call its helpers",
    "server": "http.c routes to the handlers, which call its helpers",
    "sql": "plan.c and the plan_*.c files call each other",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)"', re.M)
TOKEN = re.compile(r"[A-Za-z_]\w*|[{}();=]")
IDENT = re.compile(r"[A-Za-z_]\w*")


def strip(text):
    """Source without comments, string and character literals, directives."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    return re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)


def definitions(text):
    """Names of the functions and globals a .c file defines, not static."""
    out, depth, paren, decl, name, outer = set(), 0, 0, [], None, []
    toks = TOKEN.findall(strip(text))
    for i, t in enumerate(toks):
        if t == "{":
            if depth == 0:
                if paren == 0 and name and "static" not in decl:
                    out.add(name)  # a function body
                # after a function body a new declaration starts; after the
                # braces of a struct or an initializer the same one goes on
                outer = [] if name else decl + ["{}"]
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                decl, name = outer, None
        elif depth > 0:
            continue
        elif t == "(":
            if paren == 0 and name is None and i > 0 and IDENT.fullmatch(toks[i - 1]):
                name = toks[i - 1]
            paren += 1
        elif t == ")":
            paren -= 1
        elif t in (";", "="):
            if (paren == 0 and name is None and decl and "static" not in decl
                    and "extern" not in decl and "typedef" not in decl
                    and IDENT.fullmatch(decl[-1])):
                out.add(decl[-1])  # a global variable
            if t == ";":
                decl, name = [], None
        else:
            decl.append(t)
    return out


def module_graph(mod):
    """{file.c: set of files.c it uses} for module mod."""
    d = os.path.join(SRC, mod)
    names = sorted(os.listdir(d))
    text = {f: open(os.path.join(d, f), encoding="utf-8").read()
            for f in names if f.endswith((".c", ".h"))}
    idents = {f: set(IDENT.findall(strip(t))) for f, t in text.items()}

    def reached(f, seen=None):
        """The module's headers f includes, directly or through them."""
        seen = set() if seen is None else seen
        for h in INCLUDE.findall(text[f]):
            if h in text and h not in seen:
                seen.add(h)
                reached(h, seen)
        return seen

    owner = {}
    for f in text:
        if f.endswith(".c"):
            for s in definitions(text[f]):
                owner.setdefault(s, f)
    graph = {}
    for f in text:
        if not f.endswith(".c"):
            continue
        declared = set().union(*[idents[h] for h in reached(f)]) if reached(f) else set()
        graph[f] = {owner[s] for s in idents[f] & declared
                    if s in owner and owner[s] != f}
    return graph


def cycles(graph):
    """The strongly connected components with more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def modules():
    return sorted(m for m in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, m)))


def describe(mod, graph, comp):
    lines = ["src/%s: %s use each other:" % (mod, ", ".join(comp))]
    for f in comp:
        lines.append("  %s uses %s" % (f, ", ".join(sorted(graph[f] & set(comp)))))
    return "\n".join(lines)


def test_no_module_has_an_import_cycle():
    bad = []
    for mod in modules():
        if mod in OWED:
            continue
        g = module_graph(mod)
        bad += [describe(mod, g, c) for c in cycles(g)]
    assert not bad, "import cycles inside a module:\n" + "\n".join(bad)


def test_modules_owing_acyclicity_still_owe_it():
    """A module whose cycles are gone leaves OWED (so that it stays so)."""
    done = [m for m in OWED if m in modules() and not cycles(module_graph(m))]
    assert not done, "no cycle left in %s: remove it from OWED" % ", ".join(done)


def test_the_pipeline_is_layered():
    """The pipeline's files, from the step loop down to the backends."""
    g = module_graph("pipeline")
    assert not cycles(g)
    # the controller reaches scale-out only through the backend interface
    for f in ("pipeline.c", "step.c", "ckpt.c", "stats.c", "resolve.c", "reject.c",
              "journal.c", "replay.c"):
        assert "dist.c" not in g.get(f, ()), "%s uses dist.c directly" % f
        assert "backend_local.c" not in g.get(f, ()), "%s uses backend_local.c" % f


def test_the_cycle_finder_finds_a_cycle():
    g = {"a.c": {"b.c"}, "b.c": {"c.c"}, "c.c": {"a.c"}, "d.c": {"a.c"}}
    assert cycles(g) == [["a.c", "b.c", "c.c"]]
    assert cycles({"a.c": {"b.c"}, "b.c": set()}) == []


def test_definitions_skip_static_and_prototypes():
    text = """
    static int helper(int x) { return x; }
    int exported(int x) { return helper(x); }
    int declared_only(int x);
    int global_count = 0;
    static int hidden = 1;
    typedef struct T { int a; } T;
    """
    assert definitions(text) == {"exported", "global_count"}
