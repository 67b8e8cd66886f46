"""A throw-away PostgreSQL 15 server on 127.0.0.1 for end-to-end tests.

Debian's postgresql-15 binaries (/usr/lib/postgresql/15/bin): initdb into a
temporary directory, pg_ctl start on a free port with wal_level=logical,
trust authentication, the socket in the same directory; psql runs the
tests' queries. The server runs as the user "postgres" when the tests run as
root (PostgreSQL refuses root). See /work/shared/RECIPES.md, section 3.

    srv = PgServer(); srv.start()   # in a new directory under /tmp
    srv.uri                      # postgresql://postgres@127.0.0.1:PORT/postgres
    srv.query("SELECT 1")        # rows as lists of strings (NULL as None)
    srv.restart() / srv.stop() / srv.remove()
"""
import os
import shutil
import socket
import subprocess
import tempfile

BIN = "/usr/lib/postgresql/15/bin"


def available():
    for b in ("initdb", "pg_ctl", "postgres"):
        if not os.access(os.path.join(BIN, b), os.X_OK):
            return False, "%s/%s not installed (Debian package postgresql-15)" % (BIN, b)
    if not shutil.which("psql"):
        return False, "psql not installed (Debian package postgresql-client)"
    return True, ""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class PgServer:
    def __init__(self):
        # its own directory under /tmp: pytest's are private to root, and
        # the server runs as "postgres"
        self.base = tempfile.mkdtemp(prefix="sluice-pg-")
        self.data = os.path.join(self.base, "data")
        self.log = os.path.join(self.base, "server.log")
        self.port = free_port()
        self.uri = "postgresql://postgres@127.0.0.1:%d/postgres" % self.port
        self.running = False

    def _as_pg(self, argv, **kw):
        if os.getuid() == 0:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        return subprocess.run(argv, capture_output=True, text=True, **kw)

    def start(self):
        if not os.path.isdir(self.data):
            os.makedirs(self.base, exist_ok=True)
            if os.getuid() == 0:
                shutil.chown(self.base, "postgres")
            p = self._as_pg([os.path.join(BIN, "initdb"), "-D", self.data, "-A", "trust",
                             "-U", "postgres", "--no-sync"], timeout=120)
            if p.returncode:
                raise RuntimeError("initdb failed: %s" % p.stderr)
        opts = ("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s "
                "-c wal_level=logical -c max_replication_slots=8 -c max_wal_senders=8 "
                "-c fsync=off -c full_page_writes=off" % (self.port, self.base))
        p = self._as_pg([os.path.join(BIN, "pg_ctl"), "-D", self.data, "-l", self.log, "-w",
                         "-t", "120", "-o", opts, "start"], timeout=180)
        if p.returncode:
            raise RuntimeError("pg_ctl start failed: %s %s" % (p.stderr, self.log_text()))
        self.running = True

    def stop(self, mode="fast"):
        if not self.running:
            return
        self._as_pg([os.path.join(BIN, "pg_ctl"), "-D", self.data, "-m", mode, "-w", "-t",
                     "120", "stop"], timeout=180)
        self.running = False

    def remove(self):
        """Stop the server at once and delete its directory."""
        self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    def restart(self):
        self.stop()
        self.start()

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def psql(self, sql):
        p = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-d", self.uri, "-c", sql], capture_output=True, text=True,
                           timeout=120)
        if p.returncode:
            raise RuntimeError("psql failed: %s\n%s" % (sql, p.stderr))
        return p.stdout

    def query(self, sql):
        """Rows of a SELECT as lists of strings; NULL is None (shown as \\N)."""
        out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-P", "null=\\N",
                              "-v", "ON_ERROR_STOP=1", "-d", self.uri, "-c", sql],
                             capture_output=True, text=True, timeout=120)
        if out.returncode:
            raise RuntimeError("psql failed: %s\n%s" % (sql, out.stderr))
        rows = []
        for line in out.stdout.split("\n"):
            if line == "":
                continue
            rows.append([None if v == "\\N" else v for v in line.split("\t")])
        return rows
