"""The console's program graph with lineage highlighting (issue 22, "click a
view column, see its sources highlighted in the program graph") and its
memory panel (issue 20, "the console shows them"); docs/lineage.md, "In the
console", and docs/manager.md, "The web console".

Without a browser: the keys a drawing needs, added to the lineage JSON of
`sluice lineage` and GET /lineage (per view "reads", the relations it reads
directly; "tables", every table with its columns), checked against the
programs' text (the bank program: balance reads credits and debits, which
read transactions), with the contract's keys as they were; the console's
graph.js served, and referenced by the page.

In headless Chromium (as tests/e2e/test_console.py drives it; skipped,
saying so, when Chromium, node or the npm registry is missing): a bank
pipeline without connectors gets rows over HTTP; the console draws the four
relations in three layers; clicking every view column marks exactly the
table columns its lineage lists, by kind, and its view's row deciders
(dashed); clicking every table column marks exactly what `sluice lineage
--impact` lists. The memory panel shows the relations and operators of
/stats' memory breakdown with its row counts. A screenshot goes to
build/test-artifacts/console/.
"""
import json
import os
import re
import shutil

import pytest
import requests

from conftest import REPO, run, wait_until
from test_manager import manager  # noqa: F401  (the fixture)

BANK = os.path.join(REPO, "examples", "bank.sql")
SHOTS = os.path.join(REPO, "build", "test-artifacts", "console")
CHROMIUM = "/usr/bin/chromium"


def bank_without_connectors():
    """examples/bank.sql with its datagen connector cut: rows come over HTTP."""
    text = open(BANK).read()
    cut = re.sub(r"\)\s*WITH\s*\('connectors'.*?\]'\);", ");", text, count=1, flags=re.S)
    assert cut != text and "datagen" not in cut
    return cut


def lineage_cli(path, *args):
    p = run(["lineage", str(path)] + list(args))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# ---------------------------------------------------------------- the JSON

def test_lineage_json_has_tables_and_reads_of_the_bank_program(sluice):
    lin = lineage_cli(BANK)
    # the contract's keys, as they were, come first; the new ones are added
    assert list(lin) == ["views", "tables"]
    assert list(lin["views"]) == ["credits", "debits", "balance"]
    for v in lin["views"].values():
        assert list(v) == ["columns", "rows", "reads"]
    tx = lambda c, k: {"table": "transactions", "column": c, "kind": k}  # noqa: E731
    assert lin["views"]["credits"]["columns"] == {
        "account": [tx("to_account", "identity")], "credits": [tx("amount", "aggregation")]}
    assert lin["tables"] == {
        "transactions": {"columns": ["from_account", "to_account", "amount", "ts"]}}
    assert {v: o["reads"] for v, o in lin["views"].items()} == {
        "credits": ["transactions"], "debits": ["transactions"], "balance": ["credits", "debits"]}


def test_reads_follow_the_program_through_subqueries_sets_and_views(tmp_path, sluice):
    prog = tmp_path / "ops.sql"
    prog.write_text("""
CREATE TABLE t (a INT, b INT, s VARCHAR);
CREATE TABLE u (k INT, v INT);
CREATE TABLE lonely (x INT);
CREATE VIEW lj AS SELECT t.a, u.v FROM t LEFT JOIN u ON t.a = u.k;
CREATE VIEW st AS SELECT a FROM t EXCEPT SELECT k FROM u;
CREATE VIEW sq AS SELECT a FROM t WHERE b IN (SELECT k FROM u);
CREATE VIEW same AS SELECT * FROM t;
CREATE VIEW over AS SELECT l.a, s.a AS sa FROM lj l JOIN st s ON l.a = s.a;
CREATE VIEW one AS SELECT 1 AS c;
CREATE TABLE sluice_errors (step BIGINT, table_name VARCHAR, record VARCHAR, error VARCHAR);
CREATE VIEW rejected AS SELECT COUNT(*) AS n FROM sluice_errors;
""")
    lin = lineage_cli(prog)
    reads = {v: o["reads"] for v, o in lin["views"].items()}
    assert reads == {"lj": ["t", "u"], "st": ["t", "u"], "sq": ["t", "u"],
                     # a view that is another relation's stream reads the one that made it
                     "same": ["t"],
                     "over": ["lj", "st"], "one": [], "rejected": ["sluice_errors"]}
    # every table, in program order, also one no view reads; the errors
    # table because a view reads it (it depends on no column of it)
    assert list(lin["tables"]) == ["t", "u", "lonely", "sluice_errors"]
    assert lin["tables"]["u"] == {"columns": ["k", "v"]}
    # the dot export draws the same "reads" edges
    p = run(["lineage", str(prog), "--format", "dot"])
    names = {}
    for m in re.finditer(r'^  (r\d+) \[label="\{(?:table|view) ([^|}]+)', p.stdout, re.M):
        names[m.group(1)] = m.group(2).strip()
    edges = {(names[a], names[b]) for a, b in
             re.findall(r"^  (r\d+) -> (r\d+) \[color=gray", p.stdout, re.M)}
    assert edges == {(q, v) for v, rs in reads.items() for q in rs}


def test_get_lineage_and_the_console_assets(http_pipeline, sluice):
    p = http_pipeline(open(BANK).read(), "--paused", name="bank")
    r = requests.get(p.url("/lineage"), timeout=60)
    assert r.status_code == 200, r.text
    lin = r.json()
    assert lin == lineage_cli(BANK)
    # the pipeline's own errors table is left out: no view reads it
    assert list(lin["tables"]) == ["transactions"]
    page = requests.get(p.url("/"), headers={"Accept": "text/html"}, timeout=60)
    assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
    scripts = re.findall(r'<script src="([^"]+)"', page.text)
    assert scripts == ["/console/graph.js", "/console/console.js"], scripts  # graph.js first
    for sel in ('id="graph"', 'id="g-info"', 'id="mem-rels"', 'id="mem-ops"', 'id="mem-sum"'):
        assert sel in page.text, sel
    g = requests.get(p.url("/console/graph.js"), timeout=60)
    assert g.status_code == 200 and g.headers["Content-Type"].startswith("text/javascript")
    assert "default-src 'self'" in g.headers["Content-Security-Policy"]
    assert "const SluiceGraph" in g.text and "/lineage" in g.text
    js = requests.get(p.url("/console/console.js"), timeout=60).text
    assert "SluiceGraph.show(" in js and "'/lineage'" in js and "renderMemory(" in js
    p.stop()


def test_the_manager_serves_a_pipelines_lineage_to_its_console(manager, tmp_path):  # noqa: F811
    m = manager()
    prog = bank_without_connectors()
    m.put("bank", prog, {"workers": 1, "storage": False})
    m.post("bank", "start")
    m.wait_state("bank", "RUNNING")
    r = requests.get(m.url("/v0/pipelines/bank/lineage"), timeout=60)  # what console.js reads
    assert r.status_code == 200, r.text
    src = tmp_path / "bank.sql"
    src.write_text(prog)
    assert r.json() == lineage_cli(src)
    page = requests.get(m.url("/"), timeout=60).text
    assert '<script src="/console/graph.js"' in page
    assert requests.get(m.url("/console/graph.js"), timeout=60).status_code == 200
    m.post("bank", "stop", status=200)


# ---------------------------------------------------------------- in a browser

@pytest.fixture
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip("no Chromium at %s (scripts/deps.sh installs it)" % CHROMIUM)
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are needed to drive Chromium")
    from test_console import Browser, playwright_dir
    mods = playwright_dir()  # skips when the npm registry is unreachable
    b = Browser(mods)
    yield b
    errors = [l for l in (b.cmd("logs") if b.proc.poll() is None else [])
              if l.startswith("pageerror")]
    b.close()
    assert not errors, errors


MARKS = """(() => {
    const g = document.querySelector('#graph');
    const out = {selected: g.dataset.selected, cols: {}, rows: {}, lines: {}};
    for (const e of g.querySelectorAll('.g-col[data-hl]'))
        out.cols[e.dataset.rel + '.' + e.dataset.col] = e.dataset.hl;
    for (const e of g.querySelectorAll('[data-rows]'))
        out.rows[e.dataset.rel + (e.dataset.col !== undefined ? '.' + e.dataset.col : '')] =
            e.dataset.rows.split(',');
    for (const e of g.querySelectorAll('path.g-line')) {
        const k = e.getAttribute('class').replace('g-line ', '');
        out.lines[k] = (out.lines[k] || 0) + 1;
    }
    out.info = document.querySelector('#g-info').textContent;
    return out;
})()"""


def click(b, sel, selected):
    b.cmd("click", sel=sel)
    wait_until(lambda: b.js("document.querySelector('#graph').dataset.selected") == selected,
               "the graph selecting " + selected, poll=0.05)
    return b.js(MARKS)


def test_console_graph_highlights_lineage_and_impact(http_pipeline, browser, tmp_path, sluice):
    prog = bank_without_connectors()
    p = http_pipeline(prog, name="bank")
    rows = [{"from_account": 1 + i % 7, "to_account": 1 + (3 * i) % 7, "amount": 1 + i % 50,
             "ts": "2024-01-01 00:00:%02d" % (i % 60)} for i in range(300)]
    r = requests.post(p.url("/ingress/transactions"), params={"wait": "true"},
                      data="".join(json.dumps(x) + "\n" for x in rows), timeout=60)
    assert r.status_code == 200, r.text
    lin = requests.get(p.url("/lineage"), timeout=60).json()

    b = browser
    b.cmd("goto", url=p.url("/"))
    wait_until(lambda: b.js("document.querySelector('#graph').dataset.nodes") == "4",
               "the program graph drawn", poll=0.05)
    boxes = b.js("""Object.fromEntries(Array.from(document.querySelectorAll('#graph .g-node'))
        .map((g) => { const r = g.querySelector('rect.g-box');
                      return [g.dataset.rel, +r.getAttribute('x')]; }))""")
    # three layers: the table, the views over it, the view over those
    assert boxes["transactions"] < boxes["credits"] == boxes["debits"] < boxes["balance"], boxes
    reads = b.js("Array.from(document.querySelectorAll('#graph path.g-read'))"
                 ".map((e) => e.dataset.from + '>' + e.dataset.to).sort()")
    assert reads == ["credits>balance", "debits>balance", "transactions>credits",
                     "transactions>debits"]

    # every view column: its sources by kind, its view's row deciders dashed
    for v, o in lin["views"].items():
        for c, srcs in o["columns"].items():
            m = click(b, '#graph .g-col[data-rel="%s"][data-col="%s"]' % (v, c), v + "." + c)
            assert m["cols"] == {e["table"] + "." + e["column"]: e["kind"] for e in srcs}, (v, c, m)
            want_rows = {}
            for e in o["rows"]:
                want_rows.setdefault(e["table"] + "." + e["column"], []).append(e["kind"])
            assert m["rows"] == want_rows, (v, c, m)
            assert m["lines"].get("g-dash", 0) == len(want_rows), m
            assert sum(n for k, n in m["lines"].items() if k.startswith("k-")) == len(srcs), m
    m = click(b, '#graph .g-col[data-rel="balance"][data-col="balance"]', "balance.balance")
    assert m["cols"] == {"transactions.amount": "aggregation"}
    assert m["rows"] == {"transactions.from_account": ["join_key", "group_key"],
                         "transactions.to_account": ["join_key", "group_key"]}
    assert m["lines"] == {"k-aggregation": 1, "g-dash": 2}
    assert "transactions.amount (aggregation)" in m["info"], m["info"]
    # the arrows on the paths from transactions.amount to balance are drawn darker
    on = b.js("Array.from(document.querySelectorAll('#graph path.g-read.on'))"
              ".map((e) => e.dataset.from + '>' + e.dataset.to).sort()")
    assert on == reads
    os.makedirs(SHOTS, exist_ok=True)
    b.cmd("shot", path=os.path.join(SHOTS, "09-lineage-balance.png"))

    # every table column: its impact, as `sluice lineage --impact` says
    src = tmp_path / "bank.sql"
    src.write_text(prog)
    for col in lin["tables"]["transactions"]["columns"]:
        imp = lineage_cli(src, "--impact", "transactions." + col, "--format", "json")
        m = click(b, '#graph .g-col[data-rel="transactions"][data-col="%s"]' % col,
                  "transactions." + col)
        assert m["cols"] == {e["view"] + "." + e["column"]: e["kind"] for e in imp["columns"]}, m
        assert m["rows"] == {e["view"]: e["kinds"] for e in imp["rows"]}, m
    m = click(b, '#graph .g-col[data-rel="transactions"][data-col="ts"]', "transactions.ts")
    assert m["cols"] == {} and m["rows"] == {} and "changes nothing" in m["info"], m
    m = click(b, '#graph .g-col[data-rel="transactions"][data-col="from_account"]',
              "transactions.from_account")
    assert m["cols"] == {"debits.account": "identity"}
    assert m["rows"] == {"balance": ["join_key", "group_key"], "debits": ["group_key"]}
    # it reaches balance through debits only
    on = b.js("Array.from(document.querySelectorAll('#graph path.g-read.on'))"
              ".map((e) => e.dataset.from + '>' + e.dataset.to).sort()")
    assert on == ["debits>balance", "transactions>debits"], on
    b.cmd("shot", path=os.path.join(SHOTS, "10-impact-from-account.png"))
    # a view's title: what decides its rows; the Clear button: nothing
    m = click(b, '#graph .g-head[data-rel="credits"]', "credits")
    assert m["cols"] == {} and m["rows"] == {"transactions.to_account": ["group_key"]}, m
    m = click(b, "#g-clear", "")
    assert m["cols"] == {} and m["rows"] == {} and m["lines"] == {}

    # the memory panel: /stats' breakdown per relation and per operator
    mem = requests.get(p.url("/stats"), timeout=60).json()["memory"]
    want = {e["name"]: e["rows"] for e in mem["relations"]}
    assert {"credits", "debits", "balance"} <= set(want), want
    shown = wait_until(lambda: (lambda d: d if set(d) == set(want) else None)(b.js(
        "Object.fromEntries(Array.from(document.querySelectorAll('#mem-rels tbody tr'))"
        ".map((tr) => [tr.dataset.name, +tr.dataset.rows]))")), "the memory panel", poll=0.1)
    assert shown == want  # no input since: the row counts are final
    assert want["balance"] == len({1 + i % 7 for i in range(300)} & {1 + (3 * i) % 7
                                                                      for i in range(300)})
    nops = b.js("document.querySelectorAll('#mem-ops tbody tr').length")
    assert nops == min(10, len(mem["operators"])) and nops > 0
    assert "state" in b.text("#mem-sum") and "resident" in b.text("#mem-sum")
    b.cmd("shot", path=os.path.join(SHOTS, "11-memory-panel.png"))
    p.stop()
