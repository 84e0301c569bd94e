"""The service under test as ``make run`` serves it: ``python -m orchestrator.ops.webserver`` in
its own process, on the test database, which a test can stop and start again mid-run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings

from tests.processes import database_url

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


class OrchestratorServer:
    def __init__(self, port: int, data_dir: Path, extra_env: dict[str, str] | None = None,
                 ) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = data_dir / "webserver.log"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "CONTEXT_DIR": str(data_dir / "contexts"),
            "RECOVERY_DIR": str(data_dir / "recovery"),
            "INDEX_FILE_DELAY_MS": "0",
            "HISTORY_MIRROR_DELAY_MS": "0",
            **(extra_env or {}),
        }
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "orchestrator.ops.webserver", "--host", "127.0.0.1",
                 "--port", str(self.port), "--workers", "1"],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"orchestrator did not start:\n{self.log()[-3000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM and wait: afterwards nothing listens on the port (connections refused)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
