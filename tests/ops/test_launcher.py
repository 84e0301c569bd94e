"""orchestrator.ops.launcher starts its own servers, hands their URLs to the command and leaves
no process behind when it is stopped by SIGTERM or SIGINT."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]

# What the launcher must not inherit, or it would use the outer servers (inside `make test`).
CONFIGURED = ("DATABASE_URL", "POSTGRES_HOST", "REDIS_URL", "REDIS_HOST", "NEO4J_URI",
              "NEO4J_USER", "NEO4J_PASSWORD", "NEOMODEL_DATABASE_URL", "ENABLE_NEO4J",
              "ORCHESTRATOR_DATA_DIR")

CHILD = """
import os, time
import psycopg, redis
from neo4j import GraphDatabase

for name in ("DATABASE_URL", "REDIS_URL", "NEO4J_URI"):
    print(name, os.environ[name], flush=True)
with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
    assert conn.execute("SELECT current_database()").fetchone()[0] == "orchestrator"
assert redis.Redis.from_url(os.environ["REDIS_URL"]).ping()
auth = (os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])
with GraphDatabase.driver(os.environ["NEO4J_URI"], auth=auth) as driver:
    with driver.session() as session:
        assert session.run("RETURN 1 AS one").single()["one"] == 1
print("CHILD READY", flush=True)
time.sleep(300)
"""


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def run_and_stop(sig: signal.Signals) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CONFIGURED}
    cmd = [sys.executable, "-m", "orchestrator.ops.launcher", "--temp", "--",
           sys.executable, "-c", CHILD]
    launcher = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    output: list[str] = []

    def pump() -> None:
        for line in launcher.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, "launcher ended early:\n" + "".join(output)
            output.append(line)
            if line.startswith("CHILD READY"):
                break
        assert any("postgres ready at postgresql://" in line for line in output)
        assert any("redis ready at unix://" in line for line in output)
        assert any("arcadedb ready at bolt://" in line for line in output)

        descendants = psutil.Process(launcher.pid).children(recursive=True)
        names = {p.name() for p in descendants}
        assert {"postgres", "java"} <= names, names
        assert any(name.startswith(("valkey", "redis")) for name in names), names

        started = time.monotonic()
        launcher.send_signal(sig)
        code = launcher.wait(timeout=20)
        assert time.monotonic() - started < 20
        assert code == 128 + sig, (code, "".join(output))
        time.sleep(0.2)
        left = [p for p in descendants if alive(p)]
        assert not left, [(p.pid, p.name()) for p in left]
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_launcher_sigterm_leaves_nothing_running() -> None:
    run_and_stop(signal.SIGTERM)


def test_launcher_sigint_leaves_nothing_running() -> None:
    run_and_stop(signal.SIGINT)
