"""`make run`: migrate, then run web (uvicorn), Celery worker and Celery beat in the foreground.

    python -m orchestrator.ops.serve

Runs as orchestrator.ops.launcher's command, so DATABASE_URL, REDIS_URL, ... are already set.
Stops all three on SIGINT/SIGTERM or as soon as one of them exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from foundation.config import web_workers_from_env
from orchestrator.ops.localservers import SERVICE_FILE

STOP_GRACE = 10.0
HEALTH_TIMEOUT = 120.0
PY = sys.executable
ROOT = Path(__file__).resolve().parents[2]  # where manage.py is


def say(message: str) -> None:
    print(f"[serve] {message}", file=sys.stderr, flush=True)


def manage(*args: str) -> int:
    return subprocess.call([PY, str(ROOT / "manage.py"), *args], cwd=ROOT)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # 503 "degraded" is still a server answering
    except (OSError, ValueError):
        return False


def fresh_metrics_dir(data_dir: Path) -> Path:
    """The directory web workers, worker and beat write their metric values to, emptied.

    /metrics adds up every process's files there, so a counter incremented by the Celery
    worker shows on whichever web worker is scraped. Values of a previous run would be
    added in too: only this run's may be there.
    """
    directory = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or data_dir / "metrics")
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    return directory


def record_service(data_dir: Path, url: str) -> None:
    """Where this service answers, for ``claude_setup`` in another terminal
    (orchestrator.ops.localservers.running_service)."""
    (data_dir / SERVICE_FILE).write_text(json.dumps({"url": url, "pid": os.getpid()}) + "\n")


def forget_service(data_dir: Path) -> None:
    with contextlib.suppress(OSError):
        (data_dir / SERVICE_FILE).unlink()


class Serve:
    def __init__(self) -> None:
        self.stopping = 0
        self.children: dict[str, subprocess.Popen] = {}

    def on_signal(self, signum: int, _frame: object) -> None:
        self.stopping = signum

    def start(self, name: str, argv: list[str]) -> None:
        # Same process group as this script: the launcher's forwarded signal reaches them too.
        self.children[name] = subprocess.Popen(argv, cwd=ROOT)

    def first_exit(self) -> str | None:
        return next((name for name, p in self.children.items() if p.poll() is not None), None)

    def stop_all(self) -> None:
        for proc in self.children.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + STOP_GRACE
        for name, proc in self.children.items():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"{name} still running {STOP_GRACE:.0f}s after SIGTERM: killed")
                proc.kill()
                proc.wait()

    def run(self) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self.on_signal)
        migrated = manage("migrate", "--noinput") == 0
        if self.stopping:
            return 0
        if not migrated:
            say("migrate failed")
            return 1
        # Harmless when STATIC_ROOT is not configured: a failure is reported, not fatal.
        if manage("collectstatic", "--noinput", "-v", "0") != 0:
            say("collectstatic failed (is STATIC_ROOT set?); continuing")

        port = os.environ.get("PORT", "8000")
        data_dir = Path(os.environ.get("ORCHESTRATOR_DATA_DIR") or tempfile.gettempdir())
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(fresh_metrics_dir(data_dir))
        self.start("web", [PY, "-m", "orchestrator.ops.webserver", "--host", "127.0.0.1",
                           "--port", port, "--workers", str(web_workers_from_env())])
        self.start("worker", [PY, "-m", "celery", "-A", "orchestrator", "worker",
                              "--loglevel=INFO", "--concurrency=2"])
        # Its schedule and leader lock are in Redis (orchestrator/ops/beat.py): no file, and
        # the beat of a second stack on the same servers (another port) waits as standby.
        self.start("beat", [PY, "-m", "celery", "-A", "orchestrator", "beat", "--loglevel=INFO"])

        base = f"http://127.0.0.1:{port}"
        deadline, announced = time.monotonic() + HEALTH_TIMEOUT, False
        while not self.stopping and (dead := self.first_exit()) is None:
            if not announced and answers(f"{base}/healthz"):
                announced = True
                record_service(data_dir, base)
                print(banner(base, data_dir), file=sys.stderr, flush=True)
            elif not announced and time.monotonic() > deadline:
                say(f"{base}/healthz did not answer within {HEALTH_TIMEOUT:.0f}s")
                dead = "web"
                break
            time.sleep(0.5 if announced else 0.2)

        forget_service(data_dir)
        if self.stopping:
            say(f"stopping (signal {signal.Signals(self.stopping).name})")
        else:
            say(f"{dead} exited (code {self.children[dead].returncode}); stopping the others")
        self.stop_all()
        return 0 if self.stopping else 1


BANNER = """
================================================================
  Session orchestrator running at {base}/
    admin console   {base}/admin/
    API docs        {base}/api/docs/
  create a login:        {manage} createsuperuser
  create an API token:   {manage} create_api_token NAME
  Ctrl-C to stop.
================================================================"""


def banner(base: str, data_dir: Path) -> str:
    """The banner, with manage.py commands that reach this stack's servers: manage.py reads
    the checkout's .data/servers.env unless ORCHESTRATOR_DATA_DIR names another data dir."""
    manage = ".venv/bin/python manage.py"
    if data_dir.resolve() != (ROOT / ".data").resolve():
        manage = f"ORCHESTRATOR_DATA_DIR={shlex.quote(str(data_dir))} {manage}"
    return BANNER.format(base=base, manage=manage)


if __name__ == "__main__":
    sys.exit(Serve().run())
