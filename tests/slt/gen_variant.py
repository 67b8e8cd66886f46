#!/usr/bin/env python3
"""Writes tests/slt/variant.test (run by tests/e2e/test_variant.py in
one-shot mode and incrementally on 1-2 workers): the VARIANT type (JSON,
JSONB), its subscripts, ->, ->>, JSON path functions, TYPEOF, casts,
comparison, GROUP BY, DISTINCT and joins over VARIANT values (issue 19).

Every expected result is PostgreSQL 15's answer over jsonb (a throw-away
server started here through tests/e2e/pgserver.py), never Sluice's: each
query is written twice, in Sluice's spelling (VARIANT, v['k'], v[i]
1-based, PARSE_JSON, TO_JSON, TYPEOF) and in PostgreSQL's (jsonb, v->'k',
v->(i-1), ::jsonb, ::text, jsonb_typeof). A JSON result column (type
letter J here, T in the file) is written in Sluice's documented text form,
computed here from PostgreSQL's value by Python's json module: compact,
keys sorted, numbers as exact decimals (docs/sql.md, VARIANT).

    /usr/bin/python3 tests/slt/gen_variant.py            # rewrites the file
    /usr/bin/python3 tests/slt/gen_variant.py --check    # compares, writes nothing
"""
import decimal
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dialect  # noqa: E402  (fmt, Engine, query_record)

gen_dialect.HASH_THRESHOLD = 60

ROWS = [
    (1, '{"name": "ann", "age": 31, "tags": ["a", "b"], "addr": {"city": "Oslo", "zip": "0150"}}', 10),
    (2, '{"name": "bob", "age": 31.0, "tags": [], "addr": {"city": "Rome"}, "x": null}', 20),
    (3, '{"name": "cy", "age": "unknown", "tags": ["b", 1, true, null], "addr": null}', 30),
    (4, '[1, 2.50, -3e2, {"k": [10, 20]}, "s"]', 40),
    (5, '"just a string"', 50),
    (6, '12.5000', 60),
    (7, 'null', 70),
    (8, 'true', 80),
    (9, '{"age": 4.2e1, "name": "dee", "tags": ["a"], "addr": {"zip": "1", "city": "Oslo"}}', 90),
    (10, '{"name": "esc \\"q\\" \\\\ \\u00e9 \\n", "age": -0.5, "tags": [[1, 2], {"b": 1, "a": 2}]}', 100),
]


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def ddl(pg):
    ty = "jsonb" if pg else "VARIANT"
    vals = ",".join("(%d, %s, %d)" % (k, sql_str(j), n) for k, j, n in ROWS)
    return [
        "CREATE TABLE tv(k INT, v %s, n INT)" % ty,
        "INSERT INTO tv VALUES" + vals + ",(11, NULL, NULL)",
        "CREATE TABLE tw(id INT, j %s)" % ("jsonb" if pg else "JSON"),
        "INSERT INTO tw VALUES(1, '\"ann\"'),(2, '31'),(3, '{\"city\": \"Oslo\"}'),(4, '[\"a\", \"b\"]'),"
        "(5, 'null'),(6, '3.10')",
    ]


# (comment, Sluice's query, PostgreSQL's query, types (J: JSON text), sort)
QUERIES = [
    ("VARIANT columns print as compact JSON, keys sorted, numbers normalized",
     "SELECT k, v FROM tv",
     "SELECT k, v FROM tv", "IJ", "rowsort"),
    ("members by key, elements by 1-based index; NULL when missing or of another kind",
     "SELECT k, v['name'], v['age'], v['tags'][1], v['tags'][2], v['addr']['city'], v[1], v[4]['k'][2] FROM tv",
     "SELECT k, v->'name', v->'age', v->'tags'->0, v->'tags'->1, v->'addr'->'city', "
     "CASE WHEN jsonb_typeof(v) = 'array' THEN v->0 END, v->3->'k'->1 FROM tv",
     "IJJJJJJJ", "rowsort"),
    ("-> (0-based, negative from the end) and ->> (text; NULL for JSON null)",
     "SELECT k, v -> 'name', v ->> 'name', v -> 'tags' -> 0, v -> 'tags' -> -1, v ->> 'x', v -> 'x', v ->> 4 FROM tv",
     "SELECT k, v -> 'name', v ->> 'name', v -> 'tags' -> 0, v -> 'tags' -> -1, v ->> 'x', v -> 'x', v ->> 4 FROM tv",
     "IJTJJTJT", "rowsort"),
    ("JSON path functions: text keys, array steps as 0-based integers",
     "SELECT k, JSONB_EXTRACT_PATH(v, 'addr', 'city'), JSON_EXTRACT_PATH_TEXT(v, 'addr', 'zip'), JSONB_EXTRACT_PATH_TEXT(v, '3', 'k', '1') FROM tv",
     "SELECT k, jsonb_extract_path(v, 'addr', 'city'), jsonb_extract_path_text(v, 'addr', 'zip'), jsonb_extract_path_text(v, '3', 'k', '1') FROM tv",
     "IJTT", "rowsort"),
    ("TYPEOF names the JSON kind (jsonb_typeof's names); JSON null is not SQL NULL",
     "SELECT k, TYPEOF(v), TYPEOF(v['age']), JSONB_TYPEOF(v['x']), v IS NULL, v['x'] IS NULL FROM tv",
     "SELECT k, jsonb_typeof(v), jsonb_typeof(v->'age'), jsonb_typeof(v->'x'), v IS NULL, v->'x' IS NULL FROM tv",
     "ITTTII", "rowsort"),
    ("casts to SQL types: numbers to numeric types, strings to VARCHAR, booleans to BOOLEAN",
     "SELECT k, CAST(v['age'] AS INT), CAST(v['age'] AS DOUBLE), CAST(v['age'] AS DECIMAL(10,2)), CAST(v['name'] AS VARCHAR) FROM tv WHERE TYPEOF(v['age']) = 'number'",
     "SELECT k, trunc((v->'age')::numeric)::int, (v->'age')::float8, (v->'age')::decimal(10,2), v->>'name' FROM tv WHERE jsonb_typeof(v->'age') = 'number'",
     "IIRRT", "rowsort"),
    ("casts from SQL values, and TO_JSON / PARSE_JSON round trips",
     "SELECT k, CAST(n AS VARIANT), CAST(CAST(k AS VARCHAR) AS VARIANT), TO_JSON(v), PARSE_JSON(TO_JSON(v)) = v FROM tv",
     "SELECT k, to_jsonb(n), to_jsonb(k::text), v::text, v::text::jsonb = v FROM tv",
     "IJJJI", "rowsort"),
    ("equality ignores key order, spaces and number spelling",
     "SELECT PARSE_JSON('{\"a\": 1, \"b\": [1.0, 2]}') = PARSE_JSON('{\"b\":[1,2.00],\"a\":1e0}'), PARSE_JSON('[1,2]') = PARSE_JSON('[2,1]'), PARSE_JSON('\"1\"') = PARSE_JSON('1'), PARSE_JSON('{\"a\":1,\"a\":2}')",
     "SELECT '{\"a\": 1, \"b\": [1.0, 2]}'::jsonb = '{\"b\":[1,2.00],\"a\":1e0}'::jsonb, '[1,2]'::jsonb = '[2,1]'::jsonb, '\"1\"'::jsonb = '1'::jsonb, '{\"a\":1,\"a\":2}'::jsonb",
     "IIIJ", "nosort"),
    ("a VARIANT compared with a SQL value: the value as a VARIANT",
     "SELECT k FROM tv WHERE v['age'] = 31 OR v['name'] = 'dee'",
     "SELECT k FROM tv WHERE v->'age' = to_jsonb(31) OR v->'name' = to_jsonb('dee'::text)",
     "I", "rowsort"),
    ("GROUP BY an extracted member (31 and 31.0 are one group)",
     "SELECT v['age'], COUNT(*), SUM(n) FROM tv GROUP BY v['age']",
     "SELECT v->'age', COUNT(*), SUM(n) FROM tv GROUP BY v->'age'", "JII", "rowsort"),
    ("GROUP BY a nested member, text form",
     "SELECT CAST(v['addr']['city'] AS VARCHAR), COUNT(*), SUM(n) FROM tv GROUP BY CAST(v['addr']['city'] AS VARCHAR)",
     "SELECT v->'addr'->>'city', COUNT(*), SUM(n) FROM tv GROUP BY v->'addr'->>'city'", "TII", "rowsort"),
    ("GROUP BY a text member",
     "SELECT v ->> 'city', COUNT(*) FROM (SELECT v['addr'] AS v FROM tv) s GROUP BY v ->> 'city'",
     "SELECT v ->> 'city', COUNT(*) FROM (SELECT v->'addr' AS v FROM tv) s GROUP BY v ->> 'city'", "TI", "rowsort"),
    ("DISTINCT over VARIANT values",
     "SELECT DISTINCT v['tags'][1] FROM tv",
     "SELECT DISTINCT v->'tags'->0 FROM tv", "J", "rowsort"),
    ("a join on VARIANT values",
     "SELECT k, id FROM tv JOIN tw ON tv.v['name'] = tw.j",
     "SELECT k, id FROM tv JOIN tw ON tv.v->'name' = tw.j", "II", "rowsort"),
    ("a join on a VARIANT member and a VARIANT column",
     "SELECT k, id FROM tv JOIN tw ON tv.v['addr']['city'] = tw.j['city']",
     "SELECT k, id FROM tv JOIN tw ON tv.v->'addr'->'city' = tw.j->'city'", "II", "rowsort"),
    ("a join on a VARIANT member and a VARIANT column, numbers of different spelling",
     "SELECT k, id FROM tv JOIN tw ON tv.v['age'] = tw.j",
     "SELECT k, id FROM tv JOIN tw ON tv.v->'age' = tw.j", "II", "rowsort"),
    ("JSON column type names, scalar members and casts",
     "SELECT id, j, TYPEOF(j), j ->> 1, CAST(j AS DOUBLE), CAST(j AS VARCHAR) FROM tw",
     "SELECT id, j, jsonb_typeof(j), j ->> 1, CASE WHEN jsonb_typeof(j) = 'number' THEN j::float8 END, "
     "CASE WHEN jsonb_typeof(j) = 'string' THEN j #>> '{}' END FROM tw",
     "IJTTRT", "rowsort"),
]


# ---- answers from Python's json module (what PostgreSQL has no form for:
# Feldera's PARSE_JSON of malformed text, CASTs that give NULL, the order)

TEXTS = [
    '{"b": 1, "a": [true, null]}', ' [1, 2.0, "x"] ', '"s"', '""', '-0.0', '12.50', '1e3',
    '-7.9', '3000000000', 'true', 'false', 'null', '[]', '{}', '[[]]', '[1, 2]', '[1]',
    '[1, "a"]', '{"a": 1}', '{"a": 1, "b": 0}', '{"a": 2}', '{"": 1}', '"a"', '"ab"',
    '"2024-01-02"', '"\\u00e9"', '"a\\"b"',
    # malformed: NULL
    '{bad}', '[1,]', '01', 'NaN', '', '  ', '"\\u0000"', '"\\ud800"', '{"a" 1}', 'nul',
    '[1] [2]', "'single'", '1.', '.5', '+1', '"tab\there"',
]


def no_constants(c):
    raise ValueError(c)


def parse(text):
    """Python's json reading of text as Sluice accepts it (NaN/Infinity,
    \\u0000 and lone surrogates refused), or None."""
    try:
        v = json.loads(text, parse_float=decimal.Decimal, parse_int=decimal.Decimal,
                       parse_constant=no_constants)
    except ValueError:
        return None

    def ok(x):
        if isinstance(x, str):
            try:
                x.encode()
            except UnicodeEncodeError:
                return False
            return "\0" not in x
        if isinstance(x, list):
            return all(ok(y) for y in x)
        if isinstance(x, dict):
            return all(ok(k) and ok(y) for k, y in x.items())
        return True
    return ("ok", v) if ok(v) else None


def order_key(v):
    """docs/sql.md's VARIANT order: null < false < true < numbers < strings
    < arrays < objects."""
    if v is None:
        return (0,)
    if v is False:
        return (1,)
    if v is True:
        return (2,)
    if isinstance(v, decimal.Decimal):
        return (3, v)
    if isinstance(v, str):
        return (4, v.encode())
    if isinstance(v, list):
        return (5, [order_key(x) for x in v])
    return (6, [(k.encode(), order_key(v[k])) for k in sorted(v, key=lambda s: s.encode())])


def kind(v):
    return ("null" if v is None else "boolean" if isinstance(v, bool) else
            "number" if isinstance(v, decimal.Decimal) else "string" if isinstance(v, str) else
            "array" if isinstance(v, list) else "object")


def py_answers():
    parsed = [(k, parse(t)) for k, t in enumerate(TEXTS, 1)]
    ok = [(k, p[1]) for k, p in parsed if p]
    rows1 = [[str(k), "NULL", "NULL", "NULL", "NULL", "NULL"] if not p else
             [str(k), shown(canon(p[1])), kind(p[1]), str(int(isinstance(p[1], list))),
              str(int(isinstance(p[1], dict))), str(int(p[1] is None))] for k, p in parsed]
    order = [[str(k)] for k, v in sorted(ok, key=lambda kv: (order_key(kv[1]), kv[0]))]

    def cast_int(v):
        if isinstance(v, decimal.Decimal) and -2**31 <= int(v) < 2**31:
            return str(int(v))
        return "NULL"
    rows3 = [[str(k), cast_int(v),
              shown(gen_dialect.fmt(v, "T")) if isinstance(v, str) else "NULL",
              str(int(v)) if isinstance(v, bool) else "NULL",
              "%.3f" % (float(v) + 0.0) if isinstance(v, decimal.Decimal) else "NULL"] for k, v in ok]
    return [
        ("PARSE_JSON: Python's json reading; malformed text is NULL (Feldera)",
         "SELECT k, TO_JSON(PARSE_JSON(s)), TYPEOF(PARSE_JSON(s)), IS_ARRAY(PARSE_JSON(s)), "
         "IS_OBJECT(PARSE_JSON(s)), IS_VARIANT_NULL(PARSE_JSON(s)) FROM tj", "ITTIII", "rowsort", rows1),
        ("ORDER BY a VARIANT: null < false < true < numbers < strings < arrays < objects",
         "SELECT k FROM tj WHERE PARSE_JSON(s) IS NOT NULL ORDER BY PARSE_JSON(s), k", "I",
         "nosort", order),
        ("CASTs of a VARIANT: NULL unless it holds a value of a kind that converts",
         "SELECT k, CAST(PARSE_JSON(s) AS INT), CAST(PARSE_JSON(s) AS VARCHAR), "
         "CAST(PARSE_JSON(s) AS BOOLEAN), CAST(PARSE_JSON(s) AS DOUBLE) FROM tj "
         "WHERE PARSE_JSON(s) IS NOT NULL", "IITIR", "rowsort", rows3),
        ("VARIANTNULL, CASTs to VARIANT and to an ARRAY",
         "SELECT VARIANTNULL() = PARSE_JSON('null'), VARIANTNULL() IS NULL, TO_JSON(VARIANTNULL()), "
         "TO_JSON(CAST(DATE '2024-01-02' AS VARIANT)), TO_JSON(CAST(ARRAY[1, NULL] AS VARIANT)), "
         "CAST(PARSE_JSON('[1, \"2\", 3.7, null]') AS INT ARRAY), CAST(PARSE_JSON('1') AS INT ARRAY), "
         "TO_JSON(CAST('[1]' AS VARIANT))", "IITTTTTT", "nosort",
         [["1", "0", "null", shown(canon("2024-01-02")), canon([decimal.Decimal(1), None]),
           "{1,NULL,3,NULL}", "NULL", shown(canon("[1]"))]]),
    ]


def canon(v):
    """Sluice's text form of JSON value v (parsed with decimals)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, decimal.Decimal):
        return num(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(canon(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canon(v[k])
                          for k in sorted(v, key=lambda s: s.encode())) + "}"


def num(d):
    """0.D x 10^E: plain digits for -6 < E <= 21, else d.ddde[+-]x."""
    sign, digits, exp = d.normalize().as_tuple()
    if digits == (0,):
        return "0"
    ds = "".join(map(str, digits))
    e = len(ds) + exp
    s = "-" if sign else ""
    if 0 < e <= 21:
        ip = ds[:e].ljust(e, "0")
        return s + ip + ("." + ds[e:] if len(ds) > e else "")
    if -6 < e <= 0:
        return s + "0." + "0" * -e + ds
    return s + ds[0] + ("." + ds[1:] if len(ds) > 1 else "") + "e%s%d" % ("-" if e - 1 < 0 else "+", abs(e - 1))


def shown(s):
    """As the slt runner shows a string: bytes outside ' '..'~' as '@'."""
    return "".join(chr(b) if 0x20 <= b <= 0x7e else "@" for b in s.encode())


def jtext(v):
    if v is None:
        return "NULL"
    if not isinstance(v, str):
        v = json.dumps(v)
    return shown(canon(json.loads(v, parse_float=decimal.Decimal, parse_int=decimal.Decimal)))


def pg_engine():
    eng = gen_dialect.Engine("pg")
    import psycopg2.extras
    import psycopg2.extensions as ext
    # jsonb as its text, parsed here with exact decimals
    ext.register_type(ext.new_type((3802, 114), "JSONB_TEXT", lambda v, cur: v), eng.db)
    del psycopg2.extras
    return eng


def render(eng):
    out = ["# VARIANT (JSON): type, subscripts, ->, ->>, path functions, TYPEOF, casts (docs/sql.md, VARIANT).",
           "# Generated by tests/slt/gen_variant.py; expected results from PostgreSQL 15's jsonb "
           "(a throw-away server, tests/e2e/pgserver.py).",
           "hash-threshold %d" % gen_dialect.HASH_THRESHOLD, ""]
    for s, p in zip(ddl(False), ddl(True)):
        eng.run(p)
        out.extend(["statement ok", s, ""])
    for comment, sql, pg, types, sort in QUERIES:
        rows = [[jtext(v) if types[i] == "J" else
                 shown(gen_dialect.fmt(v, types[i])) if types[i] == "T" else gen_dialect.fmt(v, types[i])
                 for i, v in enumerate(r)] for r in eng.run(pg)]
        gen_dialect.query_record(out, comment, sql, types.replace("J", "T"), sort, rows)
    out.extend(["# JSON texts for PARSE_JSON, answers from Python's json module", "statement ok",
                "CREATE TABLE tj(k INT, s VARCHAR)", "", "statement ok",
                "INSERT INTO tj VALUES" + ",".join("(%d, %s)" % (k, sql_str(t))
                                                   for k, t in enumerate(TEXTS, 1)), ""])
    for comment, sql, types, sort, rows in py_answers():
        gen_dialect.query_record(out, comment, sql, types, sort, rows)
    return "\n".join(out)


def main():
    gen_dialect.run_pg("variant.test", render, open_engine=pg_engine)


if __name__ == "__main__":
    main()
