"""What the HTTP tests share (test_http.py, test_http_stream.py,
test_http_txn.py): JSON-lines bodies, pushes to /ingress/TABLE, /query
answers as rows, and a follower that reads an /egress stream in a thread.
"""
import json
import threading

import requests


def lines(*objs):
    return "".join(json.dumps(o) + "\n" for o in objs)


def ingress(p, table, body, status=200, **params):
    r = requests.post(p.url("/ingress/" + table), params=params, data=body, timeout=60)
    assert r.status_code == status, r.text
    return r.json()


def query(p, sql, fmt="json"):
    r = requests.get(p.url("/query"), params={"sql": sql, "format": fmt}, timeout=60)
    assert r.status_code == 200, r.text
    if fmt == "json":
        return [json.loads(l) for l in r.text.splitlines() if l.strip()]
    return r.text


class Follower:
    """Reads an /egress stream in a thread; chunks collects every message."""

    def __init__(self, p, view, **params):
        self.r = requests.post(p.url("/egress/" + view), params=params, stream=True, timeout=120)
        assert self.r.status_code == 200, self.r.text
        self.chunks = []
        self.error = None
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        try:
            for line in self.r.iter_lines():
                if line:
                    self.chunks.append(json.loads(line))
        except Exception as e:  # noqa: BLE001 - reported by join
            self.error = e

    def join(self):
        self.t.join(timeout=120)
        assert not self.t.is_alive()
        assert self.error is None, self.error
        return self.chunks
