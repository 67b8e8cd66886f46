"""Bounded resources in the HTTP server (docs/http.md, "Limits"): the
connection cap and idle timeout, egress streams exempt from it, a
backpressure subscriber that stops reading reported in /status and cut off
after --egress-stall-timeout, bodies refused before they are read when
they could not be taken, the bound on bytes of bodies in flight, on the
records of one request and of an open transaction, and JSON-array records
split across many pieces.

No test depends on how much work fits in an interval: the small timeouts
are configured and every wait is for an event (a socket closed by the
server, a line in the log, a state in /status) under a generous hang guard.
"""
import json
import socket
import time

import pytest
import requests

PROG = """
CREATE TABLE e (k INT, s VARCHAR);
CREATE MATERIALIZED VIEW ev AS SELECT k, s FROM e;
CREATE MATERIALIZED VIEW cnt AS SELECT COUNT(*) AS n FROM e;
"""

GUARD = 120  # seconds: hang guard only, never a performance bound


def lines(*objs):
    return "".join(json.dumps(o) + "\n" for o in objs)


def rows(n, base=0, width=0):
    return lines(*[{"k": base + i, "s": "x" * width} for i in range(n)])


def count(p):
    r = requests.get(p.url("/query"), params={"sql": "SELECT n FROM cnt", "format": "json"},
                     timeout=60)
    assert r.status_code == 200, r.text
    return json.loads(r.text)["n"] if r.text.strip() else 0


def wait_for(pred, what):
    deadline = time.monotonic() + GUARD
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    pytest.fail("hang guard: never saw " + what)


def raw_request(p, head, body=b"", rcvbuf=None):
    """A socket that sent `head` (and `body`) and reads nothing yet."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", p.port))
    s.sendall(head.encode() + body)
    return s


def read_answer(s):
    """The status line of the answer on s (hang guard as socket timeout)."""
    s.settimeout(GUARD)
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0].decode()


def closed_by_server(s):
    """True once the server closed s (recv gives EOF or a reset)."""
    s.setblocking(False)
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_idle_connections_past_the_cap_are_closed_and_the_server_recovers(http_pipeline):
    p = http_pipeline(PROG, "--http-max-connections", "16", "--http-idle-timeout", "1")
    socks = []
    try:
        for _ in range(300):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.connect(("127.0.0.1", p.port))
            socks.append(s)
        # every idle one ends: those past the cap at once, the others timed out
        wait_for(lambda: all(closed_by_server(s) for s in socks), "every idle socket closed")
        # and new clients are served again
        r = wait_for(lambda: _status_or_none(p), "the server accepting again")
        assert r["state"] == "running"
    finally:
        for s in socks:
            s.close()
    requests.post(p.url("/ingress/e"), data=rows(3), params={"wait": "true"}, timeout=60)
    assert count(p) == 3
    p.stop()


def _status_or_none(p):
    try:
        r = requests.get(p.url("/status"), timeout=10)
        return r.json() if r.status_code == 200 else None
    except requests.RequestException:
        return None


def test_an_egress_stream_is_not_cut_by_the_idle_timeout(http_pipeline):
    p = http_pipeline(PROG, "--http-idle-timeout", "1")
    stream = requests.post(p.url("/egress/ev"), stream=True, timeout=GUARD)
    assert stream.status_code == 200
    it = stream.iter_lines()
    idle = socket.create_connection(("127.0.0.1", p.port))
    try:
        # the idle timeout has fired once this idle connection is closed
        wait_for(lambda: closed_by_server(idle), "the idle connection closed")
    finally:
        idle.close()
    requests.post(p.url("/ingress/e"), data=rows(2), timeout=60)
    chunk = json.loads(next(l for l in it if l))
    assert sorted(d["insert"]["k"] for d in chunk["json_data"]) == [0, 1]
    stream.close()
    p.stop()


EGRESS_HEAD = ("POST /egress/ev?backpressure=true HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
               "Content-Length: 0\r\n\r\n")


def stall(p):
    """Subscribe with backpressure, read nothing, push until /status says
    the pipeline waits on the subscriber. Returns the socket."""
    s = raw_request(p, EGRESS_HEAD % p.port, rcvbuf=4096)
    wait_for(lambda: _subscribed(p), "the subscription")
    base = 0

    def pushed_until_stalled():
        nonlocal base
        st = requests.get(p.url("/status"), timeout=60).json()
        if st.get("stalled"):
            return st["stalled"]
        r = requests.post(p.url("/ingress/e"), data=rows(5000, base, 200), timeout=60)
        assert r.status_code in (200, 503), r.text
        base += 5000
        return None

    return s, wait_for(pushed_until_stalled, "/status reporting the stall")


def _subscribed(p):
    outs = requests.get(p.url("/stats"), timeout=60).json().get("outputs") or []
    return any(o.get("transport") == "http" and o["metrics"]["subscribers"] > 0 for o in outs)


def test_a_backpressure_subscriber_that_does_not_read_is_reported_in_status(http_pipeline):
    p = http_pipeline(PROG, "--egress-buffer", "64K", "--egress-stall-timeout", "600")
    s, st = stall(p)
    assert st["view"] == "ev" and st["reason"] == "egress_backpressure"
    assert st["timeout_secs"] == 600
    s.close()  # the subscriber leaves: the steps go on
    r = requests.post(p.url("/ingress/e"), data=rows(1, 10**6), params={"wait": "true"},
                      timeout=GUARD)
    assert r.status_code == 200, r.text
    assert requests.get(p.url("/status"), timeout=60).json()["stalled"] is None
    p.stop()


def test_a_backpressure_subscriber_that_stalls_too_long_is_disconnected(http_pipeline):
    p = http_pipeline(PROG, "--egress-buffer", "64K", "--egress-stall-timeout", "1")
    s = raw_request(p, EGRESS_HEAD % p.port, rcvbuf=4096)
    wait_for(lambda: _subscribed(p), "the subscription")
    try:
        base = 0

        def dropped():
            nonlocal base
            if "read nothing for" in p.stderr():
                return True
            r = requests.post(p.url("/ingress/e"), data=rows(5000, base, 200), timeout=GUARD)
            assert r.status_code in (200, 503), r.text
            if r.status_code == 200:  # 503: the queue is full, nothing taken
                base += 5000
            return False

        wait_for(dropped, "the stalled subscriber disconnected")
        assert "egress subscriber 1 of ev disconnected" in p.stderr()
        # the steps go on without it
        r = requests.post(p.url("/ingress/e"), data=rows(1, 10**6), params={"wait": "true"},
                          timeout=GUARD)
        assert r.status_code == 200, r.text
        assert count(p) == base + 1
        assert requests.get(p.url("/status"), timeout=60).json()["stalled"] is None
    finally:
        s.close()
    p.stop()


def test_a_body_is_refused_before_it_is_read_when_the_queue_is_full(http_pipeline):
    p = http_pipeline(PROG, "--paused", "--http-buffer", "10")
    requests.post(p.url("/ingress/e"), data=rows(10), timeout=60).raise_for_status()
    # 64 MB announced, a few bytes sent: the answer comes without the rest
    s = raw_request(p, "POST /ingress/e HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                       "Content-Length: %d\r\n\r\n" % (p.port, 64 << 20), b'{"k": 1}\n')
    try:
        assert " 503 " in read_answer(s)
    finally:
        s.close()
    requests.post(p.url("/start"), timeout=60)
    wait_for(lambda: count(p) == 10, "the queued rows processed")
    p.stop()


def test_bodies_in_flight_are_bounded_and_the_bound_is_given_back(http_pipeline):
    p = http_pipeline(PROG, "--http-max-body", "1M")  # in flight: 4 x 1M
    head = ("POST /ingress/e HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n\r\n"
            % (p.port, 1 << 20))
    held = []
    try:
        for k in range(4):  # one at a time, each seen reserved before the next
            held.append(raw_request(p, head, b'{"k": 1}\n'))
            wait_for(lambda: requests.get(p.url("/stats"), timeout=60).json()["global_metrics"]
                     ["http_body_bytes_in_flight"] == (k + 1) << 20, "the body reserved")
        def refused():
            r = requests.post(p.url("/ingress/e"), data=rows(1), timeout=60)
            assert r.status_code in (200, 503), r.text
            return r.json() if r.status_code == 503 else None
        j = wait_for(refused, "a 503 while four bodies are being read")
        assert j["error_code"] == "ServerBusy"
    finally:
        for s in held:
            s.close()
    # once the held bodies are given up, pushes are taken again
    wait_for(lambda: requests.post(p.url("/ingress/e"), data=rows(1), timeout=60)
             .status_code == 200, "the bound given back")
    p.stop()


def test_one_body_may_not_hold_more_records_than_the_queue_bound(http_pipeline):
    p = http_pipeline(PROG, "--http-buffer", "100")
    r = requests.post(p.url("/ingress/e"), data=rows(101), timeout=60)
    assert r.status_code == 413 and r.json()["error_code"] == "TooManyRecords", r.text
    r = requests.post(p.url("/ingress/e"), data=rows(100), params={"wait": "true"}, timeout=60)
    assert r.status_code == 200 and r.json()["accepted"] == 100
    assert count(p) == 100
    p.stop()


def test_an_open_transaction_takes_no_more_than_the_queue_bound(http_pipeline):
    p = http_pipeline(PROG, "--http-buffer", "100")
    assert requests.post(p.url("/start_transaction"), timeout=60).status_code == 200
    r = requests.post(p.url("/ingress/e"), data=rows(60), timeout=60)
    assert r.status_code == 200, r.text
    # the push joins the transaction once the controller took it
    wait_for(lambda: requests.get(p.url("/status"), timeout=60).json()["transaction"]
             ["records"] == 60, "the transaction holding 60 records")
    r = requests.post(p.url("/ingress/e"), data=rows(60, 60), timeout=60)
    assert r.status_code == 503 and r.json()["error_code"] == "TransactionFull", r.text
    r = requests.post(p.url("/ingress/e"), data=rows(40, 60), timeout=60)
    assert r.status_code == 200, r.text
    r = requests.post(p.url("/commit_transaction"), timeout=GUARD)
    assert r.status_code == 200 and r.json()["records"] == 100, r.text
    assert count(p) == 100
    p.stop()


def test_json_array_records_split_across_many_pieces_parse_whole(http_pipeline):
    p = http_pipeline(PROG)
    big = 'a\\"b\\\\' * 200000 + "end"
    body = json.dumps([{"k": 1, "s": big}, {"k": 2, "s": "[{,}]"}, 7]).encode()
    # pieces of odd sizes, so that some end right after a backslash or a quote
    pieces = [body[i:i + 4093] for i in range(0, len(body), 4093)]
    r = requests.post(p.url("/ingress/e"), data=iter(pieces), params={"wait": "true"},
                      timeout=GUARD)
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["accepted"] == 2 and j["error_count"] == 1
    got = requests.get(p.url("/query"), params={"sql": "SELECT k, s FROM ev ORDER BY k",
                                                "format": "json"}, timeout=60).text
    recs = [json.loads(l) for l in got.splitlines() if l]
    assert [x["k"] for x in recs] == [1, 2]
    assert recs[0]["s"] == big and recs[1]["s"] == "[{,}]"
    p.stop()
