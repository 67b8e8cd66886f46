"""Simulated hosts for multi-host end-to-end tests.

Each "host" is a Linux network namespace with its own address (10.251.NET.i)
on a private bridge, and its own hostname (UTS namespace) for the processes
started through this module. The heavy lifting is done by
scripts/netns-hosts.sh (see its header for the layout); this module wraps it
for pytest. Standard library only.

    from netns import NetnsHosts, netns_available, mpirun_available

    ok, why = netns_available()
    if not ok:
        pytest.skip(why)
    with NetnsHosts(3) as h:
        subprocess.run(h.mpirun(["hostname"]), ...)       # mpirun on host 1
        subprocess.run(h.on_host1(["sluice", ...]), ...)   # any program on host 1
        h.cut(3); ...; h.heal(3)                           # partition host 3

Requires root (namespace creation); netns_available() reports why not.
"""
import atexit
import functools
import itertools
import os
import shutil
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "netns-hosts.sh")

_counter = itertools.count()
_live = set()


def _b36(n):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        n, r = divmod(n, 36)
        s = digits[r] + s
        if n == 0:
            return s


def _letters(n):
    # 0 -> "a", 25 -> "z", 26 -> "ba", ...: always ends with a letter, as the
    # script requires (PREFIX + host number must be unambiguous).
    s = ""
    while True:
        n, r = divmod(n, 26)
        s = chr(ord("a") + r) + s
        if n == 0:
            return s


def unique_prefix():
    """A prefix unique to this process and call: "sl" + pid in base 36 + a
    per-process counter in letters, e.g. "sl2ihxsa" (at most ~10 chars)."""
    return "sl" + _b36(os.getpid()) + _letters(next(_counter))


def _run(argv, timeout=60):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, text=True)


@functools.lru_cache(maxsize=None)
def netns_available():
    """(True, "") if network namespaces, veth pairs, a bridge and UTS
    namespaces can be created here; else (False, reason). Tries it with a
    throwaway namespace, which is deleted again. Cached per process."""
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return False, "%r not found (need iproute2 and util-linux)" % tool
    if not os.access(SCRIPT, os.X_OK):
        return False, "%s missing or not executable" % SCRIPT
    ns = "slprobe" + _b36(os.getpid())
    steps = [
        ["ip", "netns", "add", ns],
        ["ip", "-n", ns, "link", "add", "br0", "type", "bridge"],
        ["ip", "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
        ["ip", "-n", ns, "link", "set", "v0", "master", "br0"],
        ["ip", "netns", "exec", ns, "unshare", "--uts", "/bin/sh", "-c", "hostname " + ns],
    ]
    try:
        for argv in steps:
            try:
                p = _run(argv, timeout=20)
            except (OSError, subprocess.TimeoutExpired) as e:
                return False, "network namespaces unavailable: %s: %s" % (" ".join(argv), e)
            if p.returncode != 0:
                return False, "network namespaces unavailable: `%s` failed: %s" % (
                    " ".join(argv), (p.stderr or p.stdout).strip() or "exit %d" % p.returncode)
        return True, ""
    finally:
        try:
            _run(["ip", "netns", "del", ns], timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass


@functools.lru_cache(maxsize=None)
def mpirun_available():
    """(True, version line) if an Open MPI mpirun (and orted) is installed;
    else (False, reason). The MCA options used here are Open MPI specific."""
    exe = shutil.which("mpirun")
    if exe is None:
        return False, "mpirun not found (install openmpi-bin)"
    try:
        p = _run([exe, "--version"], timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, "mpirun --version failed: %s" % e
    out = (p.stdout + p.stderr).strip()
    if "Open MPI" not in out:
        return False, "mpirun is not Open MPI: %s" % (out.splitlines() or ["?"])[0]
    if shutil.which("orted") is None:
        return False, "Open MPI's orted not found in PATH"
    return True, out.splitlines()[0]


class NetnsError(RuntimeError):
    pass


class NetnsHosts:
    """Context manager: `n` simulated hosts, set up on enter, torn down on exit
    (always, also on exceptions; also at interpreter exit if still up).

    Attributes (valid after enter):
      n, prefix     number of hosts and the namespace prefix
      names         ["<prefix>1", ...]: namespace names = hostnames
      addrs         ["10.251.NET.1", ...]
      subnet        "10.251.NET.0/24"
      bridge        name of the bridge namespace
      dir           directory with the generated files
      hostfile      path of the Open MPI hostfile ("ADDR slots=1" lines)
      agent         path of agent.sh (ssh stand-in used by mpirun)
      mca           ["--mca", KEY, VALUE, ...] for an mpirun command line
      mca_env       {"OMPI_MCA_KEY": VALUE, ...}: the same as environment
    Hosts are numbered from 1 in on_host/cut/heal, like in names/addrs order.
    """

    def __init__(self, n, prefix=None, net=None, timeout=60):
        if n < 1:
            raise ValueError("need at least one host")
        self.n = n
        self.prefix = prefix or unique_prefix()
        self.net = net
        self.timeout = timeout
        self._up = False

    # -------------------------------------------------------------- lifecycle
    def _script(self, *args):
        argv = [SCRIPT] + [str(a) for a in args]
        p = _run(argv, timeout=self.timeout)
        if p.returncode != 0:
            raise NetnsError("%s failed (exit %d): %s" % (
                " ".join(argv), p.returncode, (p.stderr + p.stdout).strip()))
        return p.stdout

    def up(self):
        args = ["up", self.n, self.prefix] + ([self.net] if self.net is not None else [])
        _live.add(self)
        try:
            out = self._script(*args)
            info = {}
            for line in out.splitlines():
                k, sep, v = line.partition(": ")
                if sep:
                    info[k] = v
            self.dir = info["dir"]
            self.subnet = info["subnet"]
            self.bridge = info["bridge"]
            self.hostfile = os.path.join(self.dir, "hostfile")
            self.agent = os.path.join(self.dir, "agent.sh")
            self.names, self.addrs = [], []
            with open(os.path.join(self.dir, "hosts")) as f:
                for line in f:
                    addr, name = line.split()
                    self.addrs.append(addr)
                    self.names.append(name)
            self.mca, self.mca_env = [], {}
            with open(os.path.join(self.dir, "mca")) as f:
                for line in f:
                    opt, key, val = line.split()
                    self.mca += [opt, key, val]
                    self.mca_env["OMPI_MCA_" + key] = val
            if len(self.names) != self.n:
                raise NetnsError("expected %d hosts, got %r" % (self.n, self.names))
        except BaseException:
            try:
                self.down()
            except Exception:
                pass
            raise
        self._up = True
        return self

    def down(self):
        """Kill whatever still runs in the hosts, delete the namespaces and
        the generated files. Idempotent."""
        _live.discard(self)
        self._up = False
        self._script("down", self.prefix)

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()
        return False

    # ---------------------------------------------------------------- helpers
    def _name(self, i):
        if not 1 <= i <= self.n:
            raise IndexError("host %d out of 1..%d" % (i, self.n))
        return "%s%d" % (self.prefix, i)

    def on_host(self, i, argv):
        """argv that runs `argv` on host i (1-based): inside namespace i, with
        its own UTS namespace whose hostname is names[i-1]. The arguments are
        passed through "$@", never re-parsed by a shell."""
        name = self._name(i)
        return ["ip", "netns", "exec", name, "unshare", "--uts", "/bin/sh", "-c",
                'hostname %s && exec "$@"' % name, "sh"] + [str(a) for a in argv]

    def on_host1(self, argv):
        return self.on_host(1, argv)

    def mpirun(self, argv, np=None, map_by="node", extra=()):
        """argv that runs `mpirun ... argv` on host 1 across all hosts, with
        np ranks (default: one per host) placed round-robin by node."""
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe",
               "--hostfile", self.hostfile] + self.mca + [
               "-np", str(np if np is not None else self.n)]
        if map_by:
            cmd += ["--map-by", map_by]
        return self.on_host1(cmd + list(extra) + [str(a) for a in argv])

    def cut(self, i):
        """Partition host i: its bridge port goes down; packets to and from
        it are dropped silently (established TCP connections just stall)."""
        self._name(i)
        self._script("cut", i, self.prefix)

    def heal(self, i):
        """Undo cut(i)."""
        self._name(i)
        self._script("heal", i, self.prefix)

    def pids(self, i):
        """Pids of the processes currently inside host i's namespace."""
        p = _run(["ip", "netns", "pids", self._name(i)], timeout=20)
        return [int(x) for x in p.stdout.split()]


@atexit.register
def _teardown_leftovers():
    for h in list(_live):
        try:
            h.down()
        except Exception:
            pass
