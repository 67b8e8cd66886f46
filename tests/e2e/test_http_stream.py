"""/egress streams: formats, snapshots, many subscribers, slow clients
(disconnected without backpressure, waited for with it), clients that go
away, and 50 concurrent pushers with 10 subscribers where every record is
counted end to end (nothing lost, nothing duplicated).
"""
import json
import socket
import threading

import requests

from conftest import wait_until
from httpkit import Follower, ingress, lines

PROG = """
CREATE TABLE e (id BIGINT NOT NULL, src INT, s VARCHAR) WITH ('materialized' = 'true');
CREATE VIEW allv AS SELECT id, src FROM e;
CREATE MATERIALIZED VIEW cnt AS SELECT COUNT(*) AS n FROM e;
CREATE VIEW wide AS SELECT id, s FROM e;
"""


def push(p, body, status=200, **params):
    return ingress(p, "e", body, status, **params)


def test_formats_snapshot_and_several_subscribers(http_pipeline):
    p = http_pipeline(PROG, "--workers", "2")
    push(p, lines({"id": 1, "src": 0, "s": "a,b"}, {"id": 2, "src": 0, "s": None}), wait="true")
    fj = Follower(p, "allv")
    fc = Follower(p, "allv", format="csv")
    fs = Follower(p, "cnt", snapshot="true")
    ft = Follower(p, "e", format="csv", snapshot="true")  # a materialized table
    r = requests.post(p.url("/egress/allv"), params={"snapshot": "true"})
    assert r.status_code == 400 and r.json()["error_code"] == "NotMaterialized"
    r = requests.post(p.url("/egress/allv"), params={"format": "xml"})
    assert r.status_code == 400
    push(p, lines({"id": 3, "src": 1, "s": "x"}, {"delete": {"id": 1, "src": 0, "s": "a,b"}}),
         wait="true")
    push(p, "4,2,\"q\"\"uote\"\n", format="csv", wait="true")
    step = requests.get(p.url("/status")).json()["step"]
    p.stop()
    cj, cc, cs, ct = fj.join(), fc.join(), fs.join(), ft.join()
    assert [sorted(json.dumps(x, sort_keys=True) for x in c["json_data"]) for c in cj] == [
        sorted([json.dumps({"delete": {"id": 1, "src": 0}}, sort_keys=True),
                json.dumps({"insert": {"id": 3, "src": 1}}, sort_keys=True)]),
        [json.dumps({"insert": {"id": 4, "src": 2}}, sort_keys=True)]]
    assert cj[-1]["sequence_number"] == step
    assert [c["text_data"] for c in cc] == ["1,0,-1\n3,1,1\n", "4,2,1\n"]
    assert cs[0]["snapshot"] is True and cs[0]["json_data"] == [{"insert": {"n": 2}}]
    assert [c.get("snapshot", False) for c in cs] == [True, False]  # n: 2 -> 2 -> 3
    assert cs[-1]["json_data"] == [{"delete": {"n": 2}}, {"insert": {"n": 3}}]
    assert ct[0]["text_data"] == '1,0,"a,b",1\n2,0,,1\n'
    assert ct[2]["text_data"] == '4,2,"q""uote",1\n'


def test_slow_client_is_disconnected_and_the_pipeline_goes_on(http_pipeline):
    p = http_pipeline(PROG, "--egress-buffer", "4096")
    # a subscriber that never reads, with a tiny receive window
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", p.port))
    sock.sendall(b"POST /egress/wide HTTP/1.1\r\nHost: localhost:%d\r\n"
                 b"Content-Length: 0\r\n\r\n" % p.port)
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert b" 200 " in head.split(b"\r\n")[0]
    fast = Follower(p, "cnt")
    big = "x" * 1000
    n = 0
    for i in range(400):  # ~20 MB of changes for the slow one
        push(p, lines(*[{"id": n + k, "src": i, "s": big} for k in range(50)]), wait="true")
        n += 50
        if "reads too slowly" in p.stderr():
            break
    # the pipeline kept going: everything pushed is in
    assert json.loads(requests.get(p.url("/query"), params={
        "sql": "SELECT * FROM cnt", "format": "json"}).text) == {"n": n}
    st = requests.get(p.url("/stats")).json()
    wide = [o for o in st["outputs"] if o["view"] == "wide"][0]["metrics"]
    assert wide["dropped_subscribers"] == 1
    sock.close()
    res = p.stop()
    assert "egress subscriber 1 of wide disconnected: the client reads too slowly" in res.stderr
    chunks = fast.join()
    assert chunks[-1]["json_data"][-1] == {"insert": {"n": n}}


def test_backpressure_makes_the_pipeline_wait(http_pipeline):
    p = http_pipeline(PROG, "--egress-buffer", "4096")
    gate = threading.Event()
    r = requests.post(p.url("/egress/wide"), params={"backpressure": "true"}, stream=True)
    assert r.status_code == 200
    got = []

    def read():
        gate.wait()
        for line in r.iter_lines():
            if line:
                got.append(json.loads(line))

    t = threading.Thread(target=read)
    t.start()
    # a second subscriber of the same messages, reading at full speed: the
    # messages it releases are still queued for the waiting one
    fast = Follower(p, "wide")
    big = "y" * 500
    total = 0
    for i in range(60):  # far more than the 4 KiB queue while the reader waits
        push(p, lines(*[{"id": total + k, "src": i, "s": big} for k in range(20)]))
        total += 20
    gate.set()
    push(p, lines({"id": total, "src": -1, "s": "last"}), wait="true")
    total += 1
    p.stop()
    t.join(timeout=120)
    assert not t.is_alive()
    ids = [x["insert"]["id"] for c in got for x in c["json_data"]]
    assert sorted(ids) == list(range(total))
    assert "subscriber 1 of wide disconnected" not in p.stderr()
    fast.t.join(timeout=120)  # it may have been cut off for being slow itself
    assert not fast.t.is_alive()


def test_disconnecting_clients_are_forgotten(http_pipeline):
    p = http_pipeline(PROG)
    rs = [requests.post(p.url("/egress/allv"), stream=True) for _ in range(3)]
    push(p, lines({"id": 0, "src": 0}), wait="true")
    for r in rs:
        first = next(r.iter_lines())
        assert json.loads(first)["json_data"] == [{"insert": {"id": 0, "src": 0}}]
        r.close()
    pushed = [0]

    def forgotten():  # each step lets the server notice closed sockets
        pushed[0] += 1
        push(p, lines({"id": pushed[0], "src": pushed[0]}), wait="true")
        st = requests.get(p.url("/stats")).json()
        return [o for o in st["outputs"] if o["view"] == "allv"][0]["metrics"][
            "subscribers"] == 0
    wait_until(forgotten, "the closed subscribers being forgotten")
    assert json.loads(requests.get(p.url("/query"), params={
        "sql": "SELECT * FROM cnt", "format": "json"}).text)["n"] == pushed[0] + 1
    p.stop()


def test_fifty_pushers_ten_subscribers_count_every_record(http_pipeline):
    p = http_pipeline(PROG, "--workers", "2", "--http-buffer", "2000")
    followers = [Follower(p, "allv", format="csv" if k % 3 == 0 else "json")
                 for k in range(10)]
    npush, nreq, nrows = 50, 12, 20
    errors = []

    def pusher(w):
        try:
            s = requests.Session()
            for q in range(nreq):
                base = (w * nreq + q) * nrows
                if q % 2:
                    body = "".join("%d,%d,\n" % (base + k, w) for k in range(nrows))
                    params = {"format": "csv"}
                else:
                    body = lines(*[{"insert": {"id": base + k, "src": w}} for k in range(nrows)])
                    params = {}
                # 503 = queue full: retry (nothing was taken) until the queue drains
                r = wait_until(lambda: (lambda x: x if x.status_code != 503 else None)(
                    s.post(p.url("/ingress/e"), params=params, data=body, timeout=120)),
                    "room in the ingress queue", poll=0.005)
                assert r.status_code == 200 and r.json()["accepted"] == nrows, r.text
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=pusher, args=(w,)) for w in range(npush)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]
    total = npush * nreq * nrows
    p.stop()  # drains the queue, then ends every stream
    for f in followers:
        ids = []
        for c in f.join():
            if "json_data" in c:
                for x in c["json_data"]:
                    ids.append(x["insert"]["id"])
            else:
                for line in c["text_data"].splitlines():
                    i, src, w = line.split(",")
                    assert w == "1"
                    ids.append(int(i))
        assert len(ids) == total and len(set(ids)) == total and min(ids) == 0 and \
            max(ids) == total - 1
