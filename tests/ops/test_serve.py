"""`make run`'s supervisor (python -m orchestrator.ops.serve): migrates, starts web, worker
and beat, answers on PORT, and stops all three on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import pytest

from tests.conftest import free_port
from tests.processes import ROOT, service_env
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_serve_migrates_serves_and_stops(tmp_path):
    port = free_port()
    env = service_env(tmp_path, PORT=str(port), ORCHESTRATOR_DATA_DIR=str(tmp_path),
                      WEB_WORKERS="1")
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "orchestrator.ops.serve"], cwd=ROOT,
                                env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            def healthy() -> bool:
                try:
                    return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code \
                        == 200
                except httpx.HTTPError:
                    return False

            assert wait_for(lambda: healthy() or proc.poll() is not None, timeout=120,
                            interval=0.5), log.read_text()[-3000:]
            assert proc.poll() is None, log.read_text()[-3000:]
            # The supervisor announces itself once it sees the web server healthy too
            # (it polls every 0.2 s): a moment after this test can.
            assert wait_for(lambda: "Session orchestrator running at" in log.read_text(),
                            timeout=10), log.read_text()[-3000:]
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
    assert code == 0, log.read_text()[-3000:]
    assert "stopping (signal SIGTERM)" in log.read_text()
