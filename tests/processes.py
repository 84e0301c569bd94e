"""Real server processes for tests (web workers, Celery worker and beat) against the test
database."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]


def database_url(name: str | None = None) -> str:
    """DATABASE_URL of the database this test uses (pytest-django's test database), or of
    database ``name`` on the same server."""
    db = {**settings.DATABASES["default"]}
    db["NAME"] = name or db["NAME"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    port = f":{db['PORT']}" if db["PORT"] else ""
    host = db["HOST"]
    if host.startswith("/"):  # a unix socket (embedded Postgres of make test)
        return f"postgresql://{auth}@localhost{port}/{db['NAME']}?host={host}"
    return f"postgresql://{auth}@{host}{port}/{db['NAME']}"


def service_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a server process that shares this test's backends."""
    env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL,
           "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
           "CONTEXT_DIR": str(settings.CONTEXT_DIR), "RECOVERY_DIR": str(settings.RECOVERY_DIR),
           "ENABLE_NEO4J": "false", "INDEX_FILE_DELAY_MS": "0",
           "HISTORY_MIRROR_DELAY_MS": "0"}
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "PROMETHEUS_MULTIPROC_DIR"):
        env.pop(name, None)
    env.update(extra)
    return env


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@contextmanager
def running(commands: dict[str, list[str]], env: dict[str, str],
            log: Path) -> Iterator[dict[str, subprocess.Popen]]:
    """Run each command (python -m ... args) until the block ends; output goes to ``log``.
    Yields the processes by name (to kill one on purpose)."""
    procs: dict[str, subprocess.Popen] = {}
    with log.open("w") as out:
        try:
            for name, argv in commands.items():
                procs[name] = subprocess.Popen([sys.executable, *argv], cwd=ROOT, env=env,
                                               stdout=out, stderr=subprocess.STDOUT)
            yield procs
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.terminate()
            for proc in procs.values():
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def web(port: int, workers: int) -> list[str]:
    return ["-m", "orchestrator.ops.webserver", "--port", str(port), "--workers", str(workers)]


def celery_worker(loglevel: str = "WARNING") -> list[str]:
    """A one-process Celery worker; ``INFO`` logs a line per task run."""
    return ["-m", "celery", "-A", "orchestrator", "worker", "--pool", "solo", "--concurrency",
            "1", "--without-gossip", "--without-mingle", "--without-heartbeat", "-Q", "celery",
            "--loglevel", loglevel]


def celery_beat(loglevel: str = "WARNING") -> list[str]:
    """Celery beat (schedule and leader lock in Redis); ``INFO`` logs each task it sends."""
    return ["-m", "celery", "-A", "orchestrator", "beat", "--loglevel", loglevel]


def wait_until_serving(base_url: str, log: Path, timeout: float = 60) -> None:
    assert wait_for(lambda: answers(f"{base_url}/healthz"), timeout=timeout, interval=0.2), \
        log.read_text()[-3000:]
