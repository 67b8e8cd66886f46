"""Security of the HTTP API (docs/security.md): API keys (full and
read-only, from flags and from --config), the Host check against DNS
rebinding, the Origin check against cross-site requests, HTTPS with a
self-signed certificate, the client subcommands' --api-key, --cacert and
--insecure, and input that is not valid UTF-8 refused per record so that
/query always answers valid JSON.
"""
import json
import os
import signal
import subprocess

import pytest
import requests

from conftest import assert_no_crash, sluice_bin

PROG = """
CREATE TABLE e (k INT, s VARCHAR);
CREATE MATERIALIZED VIEW ev AS SELECT k, s FROM e;
"""

KEY, RO = "s3cret-key", "reader-key"


def auth(key):
    return {"Authorization": "Bearer " + key}


def term(p):
    """Stop with SIGTERM (no key needed) and check a clean exit."""
    p.proc.send_signal(signal.SIGTERM)
    res = p.wait_exit()
    assert res.returncode == 0, res.stderr[-3000:]


def client(*args, env=None):
    e = dict(os.environ)
    e.pop("SLUICE_API_KEY", None)
    e.update(env or {})
    r = subprocess.run([sluice_bin()] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=120, env=e)
    assert_no_crash(r)
    return r


def test_with_api_keys_every_endpoint_needs_one(http_pipeline):
    p = http_pipeline(PROG, "--api-key", KEY, "--api-key", "second-key")
    for method, path in [("GET", "/status"), ("GET", "/"), ("GET", "/stats"),
                         ("GET", "/metrics"), ("GET", "/query?sql=SELECT+1"),
                         ("POST", "/pause"), ("POST", "/stop"), ("POST", "/ingress/e"),
                         ("POST", "/egress/ev"), ("GET", "/nowhere")]:
        for headers in ({}, auth("wrong"), {"Authorization": "Basic " + KEY}):
            r = requests.request(method, p.url(path), headers=headers, timeout=60)
            assert r.status_code == 401, (method, path, r.text)
            assert r.json()["error_code"] == "Unauthorized"
    r = requests.post(p.url("/ingress/e"), data='{"k": 1, "s": "a"}\n',
                      params={"wait": "true"}, headers=auth(KEY), timeout=60)
    assert r.status_code == 200, r.text
    r = requests.get(p.url("/query"), params={"sql": "SELECT k FROM ev", "format": "json"},
                     headers=auth("second-key"), timeout=60)
    assert r.status_code == 200 and json.loads(r.text) == {"k": 1}
    assert requests.post(p.url("/stop"), headers=auth(KEY), timeout=60).status_code == 200
    assert p.wait_exit().returncode == 0


def test_a_read_only_key_reads_but_changes_nothing(http_pipeline):
    p = http_pipeline(PROG, "--api-key", KEY, "--api-key-ro", RO)
    requests.post(p.url("/ingress/e"), data='{"k": 1, "s": "a"}\n', params={"wait": "true"},
                  headers=auth(KEY), timeout=60).raise_for_status()
    for path in ["/status", "/stats", "/metrics", "/query?sql=SELECT+k+FROM+ev"]:
        r = requests.get(p.url(path), headers=auth(RO), timeout=60)
        assert r.status_code == 200, (path, r.text)
    with requests.post(p.url("/egress/ev"), params={"snapshot": "true"}, headers=auth(RO),
                       stream=True, timeout=60) as r:
        assert r.status_code == 200
        first = json.loads(next(l for l in r.iter_lines() if l))
        assert first["snapshot"] and first["json_data"] == [{"insert": {"k": 1, "s": "a"}}]
    for method, path in [("POST", "/pause"), ("POST", "/stop"), ("POST", "/ingress/e"),
                         ("POST", "/start_transaction"), ("POST", "/checkpoint"),
                         ("GET", "/"), ("POST", "/query")]:
        r = requests.request(method, p.url(path), headers=auth(RO), data="SELECT 1",
                             timeout=60)
        assert r.status_code == 403 and r.json()["error_code"] == "ReadOnlyKey", (path, r.text)
    assert requests.get(p.url("/status"), headers=auth(KEY), timeout=60).json()["state"] == \
        "running"
    term(p)


def test_what_a_read_only_key_may_do_comes_with_each_route(http_pipeline):
    """The route table says which methods a read-only key may use: any on
    /egress (the route then answers 404 or 405), GET on the reading ones,
    nothing on a path no route serves."""
    p = http_pipeline(PROG, "--api-key", KEY, "--api-key-ro", RO)
    r = requests.get(p.url("/egress"), headers=auth(RO), timeout=60)
    assert r.status_code == 404 and r.json()["error_code"] == "UnknownView", r.text
    r = requests.delete(p.url("/egress/ev"), headers=auth(RO), timeout=60)
    assert r.status_code == 405 and r.headers["Allow"] == "GET, POST", r.text
    r = requests.get(p.url("/status/"), headers=auth(RO), timeout=60)
    assert r.status_code == 200 and r.json()["state"] == "running", r.text
    for method, path in [("GET", "/nowhere"), ("GET", "/completion_status"),
                         ("PUT", "/query"), ("GET", "/ingress/e")]:
        r = requests.request(method, p.url(path), headers=auth(RO), timeout=60)
        assert r.status_code == 403 and r.json()["error_code"] == "ReadOnlyKey", (path, r.text)
    r = requests.get(p.url("/nowhere"), headers=auth(KEY), timeout=60)
    listed = r.json()["details"]["endpoints"]
    assert r.status_code == 404 and "GET, POST /egress/{name}" in listed and "GET /" in listed
    term(p)


def test_api_keys_come_from_the_config_as_strings_or_objects(http_pipeline, tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"api_keys": ["k1", {"key": "k2", "read_only": True}],
                               "http_max_connections": 32, "http_idle_timeout_secs": 30}))
    p = http_pipeline(PROG, "--config", cfg)
    assert requests.get(p.url("/status"), timeout=60).status_code == 401
    assert requests.get(p.url("/status"), headers=auth("k2"), timeout=60).status_code == 200
    assert requests.post(p.url("/pause"), headers=auth("k2"), timeout=60).status_code == 403
    assert requests.post(p.url("/pause"), headers=auth("k1"), timeout=60).status_code == 200
    term(p)


def test_a_foreign_host_header_is_refused_against_dns_rebinding(http_pipeline):
    p = http_pipeline(PROG, "--allowed-host", "sluice.internal")
    for host in ["evil.example:%d" % p.port, "evil.example", "127.0.0.1:1",
                 "localhost.evil.example:%d" % p.port]:
        r = requests.get(p.url("/query"), params={"sql": "SELECT 1"}, headers={"Host": host},
                         timeout=60)
        assert r.status_code == 403 and r.json()["error_code"] == "HostNotAllowed", host
    for host in ["127.0.0.1:%d" % p.port, "localhost:%d" % p.port, "LOCALHOST:%d" % p.port,
                 "[::1]:%d" % p.port, "sluice.internal", "sluice.internal:443"]:
        r = requests.get(p.url("/status"), headers={"Host": host}, timeout=60)
        assert r.status_code == 200, (host, r.text)
    p.stop()


def test_a_cross_site_request_that_changes_state_is_refused(http_pipeline):
    p = http_pipeline(PROG, "--allowed-host", "ui.example")
    for origin in ["http://evil.example", "https://evil.example:%d" % p.port, "null",
                   "http://127.0.0.1:1"]:
        for path in ["/pause", "/stop", "/ingress/e", "/start_transaction"]:
            r = requests.post(p.url(path), headers={"Origin": origin}, data='{"k": 1}\n',
                              timeout=60)
            assert r.status_code == 403 and r.json()["error_code"] == "OriginNotAllowed", \
                (origin, path)
    # reading is no change (and the browser keeps the answer from a foreign page)
    assert requests.get(p.url("/status"), headers={"Origin": "http://evil.example"},
                        timeout=60).status_code == 200
    assert requests.get(p.url("/query"), params={"sql": "SELECT k FROM ev"},
                        timeout=60).status_code == 200
    for origin in ["http://127.0.0.1:%d" % p.port, "http://localhost:%d" % p.port,
                   "https://ui.example"]:
        r = requests.post(p.url("/ingress/e"), headers={"Origin": origin}, data='{"k": 1}\n',
                          timeout=60)
        assert r.status_code == 200, (origin, r.text)
    assert requests.get(p.url("/status"), timeout=60).json()["state"] == "running"
    p.stop()


@pytest.fixture
def cert(tmp_path):
    crt, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        str(key), "-out", str(crt), "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return crt, key


def test_https_with_a_self_signed_certificate_and_the_clients(http_pipeline, cert, tmp_path):
    crt, key = cert
    p = http_pipeline(PROG, "--tls-cert", crt, "--tls-key", key, "--api-key", KEY)
    base = "https://127.0.0.1:%d" % p.port
    r = requests.get(base + "/status", headers=auth(KEY), verify=str(crt), timeout=60)
    assert r.status_code == 200 and r.json()["state"] == "running"
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(base + "/status", headers=auth(KEY), timeout=60)  # not trusted
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get("http://127.0.0.1:%d/status" % p.port, timeout=60)  # not TLS
    data = tmp_path / "rows.json"
    data.write_text('{"k": 1, "s": "x"}\n{"k": 2, "s": "y"}\n')
    r = client("push", base, "e", data, "--wait", "--cacert", crt, "--api-key", KEY)
    assert r.returncode == 0 and "pushed 2 records" in r.stdout, r.stderr
    r = client("query", base, "SELECT COUNT(*) AS n FROM ev", "--format", "json", "--insecure",
               env={"SLUICE_API_KEY": KEY})
    assert r.returncode == 0 and json.loads(r.stdout) == {"n": 2}, r.stderr
    r = client("stats", base, "--cacert", crt, env={"SLUICE_API_KEY": KEY})
    assert r.returncode == 0 and json.loads(r.stdout)["global_metrics"]["state"] == "running"
    r = client("stats", base, "--api-key", KEY)
    assert r.returncode == 1 and "--cacert" in r.stderr
    r = client("query", base, "SELECT 1", "--cacert", crt)
    assert r.returncode == 1 and "HTTP 401" in r.stderr
    r = client("query", base, "SELECT 1", "--cacert", crt, "--api-key", "wrong")
    assert r.returncode == 1 and "not valid" in r.stderr
    p.proc.send_signal(signal.SIGTERM)
    assert p.wait_exit().returncode == 0


def test_tail_sends_the_api_key_and_follows_over_https(http_pipeline, cert):
    crt, key = cert
    p = http_pipeline(PROG, "--tls-cert", crt, "--tls-key", key, "--api-key-ro", RO,
                      "--api-key", KEY)
    base = "https://localhost:%d" % p.port
    requests.post(base + "/ingress/e", data='{"k": 5, "s": "t"}\n', params={"wait": "true"},
                  headers=auth(KEY), verify=str(crt), timeout=60).raise_for_status()
    tail = subprocess.Popen([sluice_bin(), "tail", base, "ev", "--snapshot", "--cacert",
                             str(crt), "--api-key", RO], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(tail.stdout.readline())
        assert first["snapshot"] and first["json_data"] == [{"insert": {"k": 5, "s": "t"}}]
    finally:
        tail.kill()
        tail.communicate()
    p.proc.send_signal(signal.SIGTERM)
    assert p.wait_exit().returncode == 0


def test_tls_flags_go_together_and_unreadable_files_are_errors(tmp_path, cert):
    crt, key = cert
    prog = tmp_path / "p.sql"
    prog.write_text(PROG)
    for args, want in [(["--tls-cert", crt], "give both"),
                       (["--tls-cert", tmp_path / "none.pem", "--tls-key", key], "none.pem")]:
        r = subprocess.run([sluice_bin(), "run", str(prog), "--http", "127.0.0.1:0"] +
                           [str(a) for a in args], capture_output=True, text=True, timeout=120)
        assert_no_crash(r)
        assert r.returncode != 0 and want in r.stderr, r.stderr


def test_invalid_utf8_records_are_parse_errors_and_query_output_stays_json(http_pipeline):
    p = http_pipeline(PROG)
    body = (b'{"k": 1, "s": "caf\xc3\xa9"}\n{"k": 2, "s": "bad \xff byte"}\n'
            b'{"k": 3, "s": "\xed\xa0\x80 surrogate"}\n{"k": 4, "s": "ok"}\n')
    r = requests.post(p.url("/ingress/e"), data=body, params={"wait": "true"}, timeout=60)
    j = r.json()
    assert r.status_code == 200 and j["accepted"] == 2 and j["error_count"] == 2, r.text
    assert all("invalid UTF-8" in e["reason"] for e in j["errors"])
    assert [e["line"] for e in j["errors"]] == [2, 3]
    csv = b'5,plain\n6,"quoted \xc0\xaf overlong"\n7,\xe2\x82\xac\n'
    r = requests.post(p.url("/ingress/e"), data=csv, params={"format": "csv", "wait": "true"},
                      timeout=60)
    j = r.json()
    assert j["accepted"] == 2 and j["error_count"] == 1 and j["errors"][0]["line"] == 2, r.text
    r = requests.get(p.url("/query"), params={"sql": "SELECT k, s FROM ev ORDER BY k",
                                              "format": "json"}, timeout=60)
    r.content.decode("utf-8")  # strict: raises on invalid UTF-8
    got = [json.loads(l) for l in r.text.splitlines() if l]
    assert got == [{"k": 1, "s": "caf\u00e9"}, {"k": 4, "s": "ok"}, {"k": 5, "s": "plain"},
                   {"k": 7, "s": "\u20ac"}]
    st = requests.get(p.url("/stats"), timeout=60).json()
    m = [i for i in st["inputs"] if i["table"] == "e"][0]["metrics"]
    assert m["num_parse_errors"] == 3
    p.stop()
