"""Self-test of the simulated-hosts fixture (tests/e2e/netns.py,
scripts/netns-hosts.sh): 3 network namespaces on a bridge, Open MPI placing
one rank per namespace, hostnames per namespace, argument passing, network
partition (cut/heal) and complete teardown. Skipped, with the reason, where
namespaces cannot be created or Open MPI's mpirun is missing."""
import subprocess
import sys

import pytest

from conftest import wait_until
from netns import NetnsHosts, mpirun_available, netns_available


def _need_netns():
    ok, why = netns_available()
    if not ok:
        pytest.skip(why)


def _ns_list():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def hosts():
    _need_netns()
    with NetnsHosts(3) as h:
        yield h
    assert h.prefix not in _ns_list(), "namespaces left behind:\n" + _ns_list()


def run(argv, timeout=30):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        pytest.fail("hung after %d s: %s\n%s" % (timeout, " ".join(argv), e.stderr))


def test_layout(hosts):
    assert hosts.names == [hosts.prefix + str(i) for i in (1, 2, 3)]
    net = hosts.subnet.rsplit(".", 1)[0]
    assert hosts.addrs == [net + ".%d" % i for i in (1, 2, 3)]
    with open(hosts.hostfile) as f:
        assert f.read().split("\n")[:3] == [a + " slots=1" for a in hosts.addrs]
    assert hosts.mca[:3] == ["--mca", "plm_rsh_agent", hosts.agent]
    assert "mpi_yield_when_idle" in hosts.mca
    for name in hosts.names + [hosts.bridge]:
        assert name in _ns_list().split()


def test_on_host_args_and_hostname(hosts):
    args = ["a b", "'q'", '"d"', "$HOME", "*", ""]
    p = run(hosts.on_host(2, [sys.executable, "-c",
                              "import socket,sys; print(socket.gethostname()); print(sys.argv[1:])"]
                          + args))
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out[0] == hosts.names[1]
    assert out[1] == repr(args)


def test_mpirun_one_rank_per_host(hosts):
    ok, why = mpirun_available()
    if not ok:
        pytest.skip(why)
    p = run(hosts.mpirun(["hostname"]), timeout=30)
    assert p.returncode == 0, "mpirun failed (exit %d):\n%s" % (p.returncode, p.stderr)
    got = p.stdout.split()
    assert sorted(got) == sorted(hosts.names), p.stdout + p.stderr


CONNECT = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], 5555), timeout=float(sys.argv[2])).close()
    print("connected")
except OSError as e:
    print("failed", e)
"""
LISTEN = """
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5555)); s.listen(16)
while True:
    s.accept()[0].close()
"""


def test_cut_and_heal(hosts):
    def connect(timeout):
        p = run(hosts.on_host1([sys.executable, "-c", CONNECT, hosts.addrs[2], str(timeout)]))
        return p.stdout.strip()

    srv = subprocess.Popen(hosts.on_host(3, [sys.executable, "-c", LISTEN]))
    try:
        # wait for the listener (hang guard, not a bound)
        wait_until(lambda: connect(1) == "connected", "reaching host 3 before the cut")
        hosts.cut(3)
        assert connect(0.5).startswith("failed")  # dropped packets: no wait would connect
        hosts.heal(3)
        assert connect(30) == "connected"  # at once on a healed link; 30 s is a hang guard
    finally:
        srv.kill()
        srv.wait()


def test_down_is_idempotent():
    _need_netns()
    h = NetnsHosts(2)
    with pytest.raises(RuntimeError):
        with h:
            bg = subprocess.Popen(h.on_host(2, ["sleep", "60"]))
            raise RuntimeError("boom")      # teardown must still happen
    assert bg.wait(timeout=60) != 0         # killed by down
    assert h.prefix not in _ns_list()
    h.down()                                # again: no error
