"""A real S3-compatible server on loopback for end-to-end tests.

Sluice's remote checkpoints talk S3. To test them against a server that
really checks signatures (SigV4), lists with ListObjectsV2 and does
multipart uploads, this module starts a private, throw-away OpenStack Swift
2.30 cluster with its ``s3api`` middleware (Debian packages swift,
swift-proxy, swift-object, swift-container, swift-account and memcached).
See /work/shared/RECIPES.md, section 8, for the recipe this is based on.

Usage (pytest)::

    from s3server import SwiftS3, available

    ok, why = available()
    if not ok:
        pytest.skip(why)
    with SwiftS3(tmp_path) as s3:
        s3.create_bucket("ckpt")
        ...  # point sluice at s3.endpoint / s3.access_key / s3.secret_key
        assert s3.list_keys("ckpt", prefix="epoch-") == [...]

What it does:

* Everything (configs, rings, device data, logs, netrc files) lives under
  the given ``base_dir``, which should be a fresh temporary directory::

      base_dir/etc/    swift.conf, {proxy,object,container,account}-server.conf,
                       *.builder, *.ring.gz, netrc files
      base_dir/srv/d1  the single storage "device" (needs user xattrs)
      base_dir/logs/   one log per process (memcached, object, ..., proxy)
      base_dir/tmp/    scratch files for curl uploads/downloads

* Free loopback ports are picked by binding 127.0.0.1:0, never hard-coded,
  so tests can run while other Swift/memcached instances use the defaults.
  If another process grabs a port in the short window before our server
  binds it, the whole start is retried with fresh ports.
* Swift's servers normally read /etc/swift/swift.conf (hash prefix/suffix and
  storage policies) whatever their ``swift_dir`` says: only the ring files
  come from ``swift_dir``. To be independent of the machine's
  /etc/swift/swift.conf, each server is run through a tiny wrapper
  (``_WRAPPER`` below) that calls ``swift.common.utils.set_swift_dir`` and
  reloads the storage policies before running the normal
  /usr/bin/swift-*-server script.
* Each process runs in its own session/process group (so stop() can signal
  it and any children), with ``workers = 0`` (no forking), and with
  PR_SET_PDEATHSIG so that it also dies if the test process is killed hard.
* Ready means: every port accepts connections, ``GET /healthcheck`` on the
  proxy answers ``OK`` and a SigV4-signed S3 ListBuckets answers 200.

The S3 client side of this helper uses /usr/bin/curl's ``--aws-sigv4``
(curl 7.88), standard library only. Two details matter:

* The access key ``test:tester`` contains a colon, and ``curl --user``
  splits at the first colon, so the credentials go into a netrc file.
* curl 7.88 does not send ``x-amz-content-sha256`` by itself; we send
  ``UNSIGNED-PAYLOAD``.
"""
import atexit
import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
import xml.etree.ElementTree as ET

CURL = "/usr/bin/curl"
# Swift's scripts are "#! /usr/bin/python3" and the swift package lives in
# the Debian python's dist-packages; a pyenv "python3" on PATH cannot import it.
SWIFT_PYTHON = "/usr/bin/python3"
SWIFT_SERVERS = ("object", "container", "account", "proxy")
REQUIRED_BINARIES = tuple("swift-%s-server" % n for n in SWIFT_SERVERS) + (
    "swift-ring-builder", "memcached")

STARTUP_TIMEOUT = 60.0      # seconds until the cluster must answer S3
STOP_TIMEOUT = 10.0         # seconds between SIGTERM and SIGKILL
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

# Runs one Swift server with swift.conf taken from swift_dir instead of
# /etc/swift/swift.conf. argv: swift_dir script conf_file [options...]
_WRAPPER = r"""
import runpy, sys
from swift.common import utils
swift_dir, script = sys.argv[1], sys.argv[2]
utils.set_swift_dir(swift_dir)          # hash prefix/suffix from our swift.conf
from swift.common import constraints, storage_policy
storage_policy.reload_storage_policies()  # policies from our swift.conf
constraints.reload_constraints()
sys.argv = [script] + sys.argv[3:]
runpy.run_path(script, run_name="__main__")
"""

# Runs several swift-ring-builder commands (one tab-separated argv per
# argument) in one interpreter. Exit code 1 = "completed with warnings" is
# fine; 2 = error stops everything.
_RING_SCRIPT = r"""
import sys
from swift.cli.ringbuilder import main
for cmd in sys.argv[1:]:
    args = cmd.split("\t")
    print("$ swift-ring-builder " + " ".join(args), flush=True)
    try:
        main(["swift-ring-builder"] + args)
        rc = 0
    except SystemExit as e:
        rc = e.code or 0
    if rc not in (0, 1):
        sys.exit("swift-ring-builder %s failed with exit status %s" % (" ".join(args), rc))
"""


def available():
    """Return (True, "") if Swift + memcached + curl are installed, else
    (False, reason) -- for pytest.skip()."""
    missing = [b for b in REQUIRED_BINARIES if shutil.which(b) is None]
    if missing:
        return False, "not installed: %s (apt-get install swift swift-proxy " \
                      "swift-object swift-container swift-account memcached)" % ", ".join(missing)
    if not os.access(CURL, os.X_OK):
        return False, "%s not found" % CURL
    if not os.access(SWIFT_PYTHON, os.X_OK):
        return False, "%s not found" % SWIFT_PYTHON
    return True, ""


class SwiftS3Error(RuntimeError):
    """The Swift/S3 server could not be set up or did not come up."""


def _free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (all bound at once, so they
    differ; released right away, so another process could still take one --
    start() retries in that case)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


try:                                # loaded here, not in the forked child
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _PRCTL = None


def _child_setup():
    """preexec_fn: have the kernel SIGKILL the child if the test process
    dies without calling stop() (e.g. pytest killed by a timeout). Kept as
    the setting survives exec; user=root / memcached -u root do not change
    credentials, which would clear it."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL, 0, 0, 0)          # PR_SET_PDEATHSIG = 1


def _tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return "(cannot read %s: %s)" % (path, e)
    return "\n".join(text.splitlines()[-lines:])


# An opener that ignores http_proxy & co. from the environment.
_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class SwiftS3:
    """A private Swift + s3api cluster on 127.0.0.1; a context manager.

    Attributes once started: endpoint ("http://127.0.0.1:PORT"), access_key,
    secret_key, region, ports (dict name -> port), base_dir, startup_seconds.
    """

    access_key = "test:tester"      # tempauth account "test", user "tester"
    secret_key = "testing"
    region = "us-east-1"            # s3api "location"

    def __init__(self, base_dir):
        self.base_dir = os.path.abspath(str(base_dir))
        self.etc_dir = os.path.join(self.base_dir, "etc")
        self.devices_dir = os.path.join(self.base_dir, "srv")
        self.log_dir = os.path.join(self.base_dir, "logs")
        self.tmp_dir = os.path.join(self.base_dir, "tmp")
        self.ports = {}
        self.endpoint = None
        self.startup_seconds = None
        self._procs = {}            # name -> (Popen, open log file)
        self._netrcs = {}           # (key, secret) -> netrc path
        # Safety net: stop at interpreter exit if the test forgot to.
        ref = weakref.ref(self)
        atexit.register(lambda: ref() is not None and ref().stop())

    # ------------------------------------------------------------------ life

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        """Write configs, build rings, start memcached + 4 Swift servers and
        wait until S3 answers. On failure everything started is stopped
        again and SwiftS3Error (with log tails) is raised."""
        ok, why = available()
        if not ok:
            raise SwiftS3Error(why)
        if self._procs:
            raise SwiftS3Error("already started")
        t0 = time.monotonic()
        for d in (self.etc_dir, self.devices_dir, self.log_dir, self.tmp_dir):
            os.makedirs(d, exist_ok=True)
        self._check_xattrs()
        attempts = 3
        for attempt in range(1, attempts + 1):
            try:
                self._start_once(deadline=time.monotonic() + STARTUP_TIMEOUT)
                break
            except _PortTaken as e:
                # Someone else bound one of our ports in the meantime.
                self.stop()
                if attempt == attempts:
                    raise SwiftS3Error("ports kept being taken: %s" % e) from None
            except BaseException:
                self.stop()
                raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _start_once(self, deadline):
        names = ("object", "container", "account", "proxy", "memcached")
        self.ports = dict(zip(names, _free_ports(len(names))))
        self.endpoint = "http://127.0.0.1:%d" % self.ports["proxy"]
        self._write_configs()
        self._build_rings()
        self._start_memcached()
        for n in SWIFT_SERVERS:
            self._start_swift(n)
        self._wait_ready(deadline)

    def stop(self):
        """Terminate all processes (and their process groups), wait for them,
        close logs. Idempotent; fine after a half-failed start."""
        procs, self._procs = self._procs, {}
        # SIGTERM everything first, then wait, so shutdowns overlap.
        for proc, _log in procs.values():
            self._signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for proc, log in procs.values():
            self._wait_exit_nowait(proc, deadline)
            # The leader has exited but is not reaped yet (WNOWAIT), so its
            # process group id cannot have been reused: SIGKILL any member
            # (child) that is still around, then reap.
            self._signal_group(proc, signal.SIGKILL)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
            log.close()

    def pids(self):
        """PIDs of the running server processes (name -> pid)."""
        return {n: p.pid for n, (p, _) in self._procs.items()}

    @staticmethod
    def _signal_group(proc, sig):
        try:
            os.killpg(proc.pid, sig)    # start_new_session: pgid == pid
        except (ProcessLookupError, PermissionError):
            pass

    @staticmethod
    def _wait_exit_nowait(proc, deadline):
        """Wait until proc has exited, without reaping it; SIGKILL its group
        at the deadline."""
        killed = False
        while True:
            try:
                info = os.waitid(os.P_PID, proc.pid,
                                 os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return                  # already reaped
            if info is not None:
                return
            if time.monotonic() > deadline and not killed:
                SwiftS3._signal_group(proc, signal.SIGKILL)
                killed = True
                deadline = time.monotonic() + STOP_TIMEOUT
            elif time.monotonic() > deadline:
                return                  # unkillable?! give up waiting
            time.sleep(0.02)

    # ----------------------------------------------------------------- setup

    def _check_xattrs(self):
        """Swift's object server stores metadata in user xattrs."""
        probe = os.path.join(self.devices_dir, ".xattr-probe")
        with open(probe, "wb") as f:
            f.write(b"x")
        try:
            os.setxattr(probe, "user.swift.probe", b"1")
        except OSError as e:
            raise SwiftS3Error(
                "%s does not support user xattrs (%s); Swift needs them. Use a "
                "base_dir on ext4/xfs/tmpfs with user_xattr." % (self.devices_dir, e)) from None
        finally:
            os.unlink(probe)

    def _write(self, name, text):
        with open(os.path.join(self.etc_dir, name), "w") as f:
            f.write(text)

    def _write_configs(self):
        user = pwd.getpwuid(os.getuid()).pw_name     # "root" here
        # Read via the _WRAPPER (set_swift_dir), not /etc/swift/swift.conf.
        self._write("swift.conf", """\
[swift-hash]
swift_hash_path_suffix = sluice-test
swift_hash_path_prefix = sluice-test

[storage-policy:0]
name = Policy-0
default = yes
""")
        common = """\
[DEFAULT]
swift_dir = {etc}
devices = {dev}
mount_check = false
bind_ip = 127.0.0.1
bind_port = {port}
# fail fast if the port was taken (start() then retries with new ports)
bind_timeout = 3
workers = 0
user = {user}
log_name = {name}
# no /dev/log here: logs go to stdout thanks to -v (and to UDP syslog, unread)
log_level = INFO
recon_cache_path = {base}/recon
"""
        for n in ("object", "container", "account"):
            self._write("%s-server.conf" % n, common.format(
                etc=self.etc_dir, dev=self.devices_dir, port=self.ports[n],
                user=user, name="%s-server" % n, base=self.base_dir) + """
[pipeline:main]
pipeline = {n}-server

[app:{n}-server]
use = egg:swift#{n}
""".format(n=n))
        self._write("proxy-server.conf", common.format(
            etc=self.etc_dir, dev=self.devices_dir, port=self.ports["proxy"],
            user=user, name="proxy-server", base=self.base_dir) + """
[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:{mc}

[filter:listing_formats]
use = egg:swift#listing_formats

[filter:s3api]
use = egg:swift#s3api
location = {region}

[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = {secret} .admin

[filter:copy]
use = egg:swift#copy

[filter:slo]
use = egg:swift#slo

[filter:dlo]
use = egg:swift#dlo
""".format(mc=self.ports["memcached"], region=self.region, secret=self.secret_key))

    def _build_rings(self):
        """One ring per server type: 2^6 partitions, 1 replica, 1 device.

        These are the usual `swift-ring-builder X.builder create/add/
        rebalance` commands, but all nine run in one Python process
        (_RING_SCRIPT calls the CLI's main()), because each
        swift-ring-builder start costs ~0.75 s of imports on this machine."""
        cmds = []
        for n in ("object", "container", "account"):
            builder = "%s.builder" % n
            for stale in (builder, "%s.ring.gz" % n):       # from a retried start
                p = os.path.join(self.etc_dir, stale)
                if os.path.exists(p):
                    os.unlink(p)
            cmds += [[builder, "create", "6", "1", "1"],
                     [builder, "add", "r1z1-127.0.0.1:%d/d1" % self.ports[n], "100"],
                     [builder, "rebalance"]]
        p = subprocess.run([SWIFT_PYTHON, "-c", _RING_SCRIPT] + ["\t".join(c) for c in cmds],
                           cwd=self.etc_dir, capture_output=True, text=True, timeout=120)
        with open(os.path.join(self.log_dir, "rings.log"), "a") as f:
            f.write(p.stdout + p.stderr)
        missing = [n for n in ("object", "container", "account")
                   if not os.path.exists(os.path.join(self.etc_dir, "%s.ring.gz" % n))]
        if p.returncode != 0 or missing:
            raise SwiftS3Error("building the rings failed (exit %d, missing %s):\n%s%s"
                               % (p.returncode, missing, p.stdout[-3000:], p.stderr[-3000:]))
        os.makedirs(os.path.join(self.devices_dir, "d1"), exist_ok=True)

    def _spawn(self, name, argv):
        log_path = os.path.join(self.log_dir, "%s.log" % name)
        log = open(log_path, "ab")
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, cwd=self.base_dir,
                                    start_new_session=True, preexec_fn=_child_setup,
                                    close_fds=True)
        except BaseException:
            log.close()
            raise
        self._procs[name] = (proc, log)

    def _start_memcached(self):
        argv = ["memcached", "-l", "127.0.0.1", "-p", str(self.ports["memcached"]),
                "-U", "0", "-m", "16", "-c", "256"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]  # memcached refuses root without -u
        self._spawn("memcached", argv)

    def _start_swift(self, n):
        script = shutil.which("swift-%s-server" % n)
        conf = os.path.join(self.etc_dir, "%s-server.conf" % n)
        self._spawn(n, [SWIFT_PYTHON, "-c", _WRAPPER, self.etc_dir, script, conf, "-v"])

    def _logs_tail(self):
        out = []
        for name in ("memcached",) + SWIFT_SERVERS:
            path = os.path.join(self.log_dir, "%s.log" % name)
            if os.path.exists(path):
                out.append("----- %s -----\n%s" % (path, _tail(path) or "(empty)"))
        return "\n".join(out)

    def _wait_ready(self, deadline):
        """Poll until all ports listen, /healthcheck says OK and a signed S3
        ListBuckets gives 200. Fail fast if a process dies."""
        last = "nothing tried yet"
        while True:
            for name, (proc, _) in self._procs.items():
                if proc.poll() is not None:
                    tail = self._logs_tail()
                    if "Address already in use" in tail or "Could not bind" in tail:
                        raise _PortTaken("%s: %s" % (name, tail[-500:]))
                    raise SwiftS3Error("%s exited with status %s during startup\n%s"
                                       % (name, proc.returncode, tail))
            try:
                closed = [n for n, p in self.ports.items() if not _port_open(p)]
                if closed:
                    last = "ports not listening yet: %s" % ", ".join(closed)
                else:
                    with _NO_PROXY_OPENER.open(self.endpoint + "/healthcheck", timeout=5) as r:
                        body = r.read()
                    if body.strip() != b"OK":
                        last = "healthcheck said %r" % body[:200]
                    else:
                        status, body = self.request("GET", "/")     # ListBuckets
                        if status == 200:
                            return
                        last = "S3 ListBuckets gave HTTP %d: %s" % (
                            status, body[:300].decode("utf-8", "replace"))
            except (OSError, urllib.error.URLError, SwiftS3Error) as e:
                last = "%s: %s" % (type(e).__name__, e)
            if time.monotonic() > deadline:
                raise SwiftS3Error("Swift/S3 did not come up within %g s (last: %s)\n%s"
                                   % (STARTUP_TIMEOUT, last, self._logs_tail()))
            time.sleep(0.1)

    # ------------------------------------------------------------ S3 client

    def netrc_path(self, access_key=None, secret_key=None):
        """A netrc file for curl with the given (default: the valid)
        credentials. (curl --user would split 'test:tester' at the colon.)"""
        key = (access_key or self.access_key, secret_key or self.secret_key)
        if key not in self._netrcs:
            for k in key:
                if any(c.isspace() for c in k) or '"' in k:
                    raise ValueError("credentials with spaces/quotes not supported: %r" % (k,))
            path = os.path.join(self.etc_dir, "netrc-%d" % len(self._netrcs))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("machine 127.0.0.1 login %s password %s\n" % key)
            self._netrcs[key] = path
        return self._netrcs[key]

    def curl_args(self, access_key=None, secret_key=None):
        """curl options that SigV4-sign a request for this server; append
        method/URL/body options. Handy for tests that run curl themselves."""
        return [CURL, "-sS", "--noproxy", "*",
                "--aws-sigv4", "aws:amz:%s:s3" % self.region,
                "--netrc-file", self.netrc_path(access_key, secret_key),
                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]

    @staticmethod
    def url_path(bucket, key=None):
        """'/bucket' or '/bucket/key' with the key percent-encoded (S3 style:
        '/' kept, unreserved characters kept)."""
        p = "/" + bucket
        if key is not None:
            p += "/" + urllib.parse.quote(key, safe="/-_.~")
        return p

    @staticmethod
    def query_string(params):
        """Query string sorted by name and fully encoded, as SigV4's canonical
        query wants it (so curl's signing and the server agree)."""
        q = lambda s: urllib.parse.quote(str(s), safe="-_.~")
        return "&".join("%s=%s" % (q(k), q(v)) for k, v in sorted(params.items()))

    def request(self, method, path, params=None, data=None, headers=None,
                access_key=None, secret_key=None, timeout=60):
        """One signed S3 request with curl. path like '/bucket/key' (already
        encoded, see url_path); params a dict for the query string; data
        bytes to upload (PUT/POST). Returns (http_status, body_bytes)."""
        if self.endpoint is None:
            raise SwiftS3Error("server not started")
        url = self.endpoint + path
        if params:
            url += "?" + self.query_string(params)
        argv = self.curl_args(access_key, secret_key) + ["-X", method]
        for h in (headers or {}).items():
            argv += ["-H", "%s: %s" % h]
        upload = None
        if data is not None:
            fd, upload = tempfile.mkstemp(dir=self.tmp_dir, prefix="upload-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            # -T sends Content-Length (not chunked); -X keeps the method.
            argv += ["-T", upload]
        if method == "HEAD":
            argv += ["-I"]
        argv += ["-w", "\n%{http_code}", url]
        try:
            p = subprocess.run(argv, capture_output=True, timeout=timeout)
        finally:
            if upload:
                os.unlink(upload)
        if p.returncode != 0:
            raise SwiftS3Error("curl %s %s failed (exit %d): %s" % (
                method, url, p.returncode, p.stderr.decode("utf-8", "replace")))
        body, _, status = p.stdout.rpartition(b"\n")
        return int(status), body

    def _check(self, what, status, body, ok=(200,)):
        if status not in ok:
            raise SwiftS3Error("%s: HTTP %d: %s" % (what, status,
                                                    body[:1000].decode("utf-8", "replace")))

    def create_bucket(self, name):
        status, body = self.request("PUT", self.url_path(name))
        self._check("create bucket %r" % name, status, body)

    def put_object(self, bucket, key, data):
        status, body = self.request("PUT", self.url_path(bucket, key), data=data)
        self._check("put %s/%s" % (bucket, key), status, body)

    def get_object(self, bucket, key):
        status, body = self.request("GET", self.url_path(bucket, key))
        self._check("get %s/%s" % (bucket, key), status, body)
        return body

    def delete_object(self, bucket, key):
        status, body = self.request("DELETE", self.url_path(bucket, key))
        self._check("delete %s/%s" % (bucket, key), status, body, ok=(200, 204))

    def list_objects(self, bucket, prefix=""):
        """All objects under prefix (ListObjectsV2, following continuation
        tokens): list of dicts with key, size, etag."""
        out = []
        token = None
        while True:
            params = {"list-type": "2", "prefix": prefix}
            if token:
                params["continuation-token"] = token
            status, body = self.request("GET", self.url_path(bucket), params=params)
            self._check("list %s prefix %r" % (bucket, prefix), status, body)
            root = ET.fromstring(body)
            for c in root.findall(S3_NS + "Contents"):
                out.append({"key": c.findtext(S3_NS + "Key"),
                            "size": int(c.findtext(S3_NS + "Size") or 0),
                            "etag": (c.findtext(S3_NS + "ETag") or "").strip('"')})
            if root.findtext(S3_NS + "IsTruncated") != "true":
                return out
            token = root.findtext(S3_NS + "NextContinuationToken")
            if not token:
                return out

    def list_keys(self, bucket, prefix=""):
        """Keys of all objects in bucket starting with prefix, in S3 order."""
        return [o["key"] for o in self.list_objects(bucket, prefix)]


class _PortTaken(Exception):
    """A server could not bind its port (taken since _free_ports)."""
