"""Spec 7.2.1: an acknowledged save survives kill -9 of the web workers.

The production web server (``python -m orchestrator.ops.webserver``, two workers) runs
against the test database; client threads save over HTTP and note every save answered
200; the whole server process group is then killed with SIGKILL while saves are in
flight. Every acknowledged save must be in Postgres with its trigger version.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from contexts.models import ContextVersion, TaskContext
from contexts.services.tasks import create_task
from foundation.core.models import ApiToken
from tests.conftest import free_port
from tests.processes import database_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
CLIENTS = 4


def wait_for(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError("the web server exited during start-up")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status in (200, 503):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the web server did not start")


def test_acknowledged_saves_survive_kill_9_of_the_web_workers(tmp_path, settings):
    for n in range(CLIENTS):
        create_task(f"durable-{n}", {"name": f"Durable {n}"})
    _, token = ApiToken.issue("kill-9")
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url(), "CONTEXT_DIR": str(tmp_path / "c"),
           "RECOVERY_DIR": str(tmp_path / "r"), "LOG_LEVEL": "WARNING"}
    server = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.ops.webserver", "--port", str(port), "--workers", "2"],
        cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    acknowledged: list[tuple[str, int, str]] = []
    killed = threading.Event()
    try:
        wait_for(port, server)

        def client(n: int) -> None:
            task_id = f"durable-{n}"
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            for i in range(100_000):
                if killed.is_set():
                    return
                marker = f"{n}-{i}"
                body = json.dumps({"taskId": task_id, "updates": {
                    "immediateContext": {"workingOn": marker}}})
                try:
                    conn.request("POST", "/api/v1/tools/save_context_snapshot/", body,
                                 {"Authorization": f"Bearer {token}",
                                  "Content-Type": "application/json"})
                    response = conn.getresponse()
                    answer = json.loads(response.read())
                except (OSError, http.client.HTTPException, ValueError):
                    return  # the server is gone: what was acknowledged is what counts
                if response.status == 200:
                    acknowledged.append((task_id, answer["version"], marker))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(server.pid, signal.SIGKILL)  # supervisor and workers, mid-request
        killed.set()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)

    assert len(acknowledged) >= 40
    stored = {(v.task_id, v.version): v.snapshot["immediate_context"]["workingOn"]
              for v in ContextVersion.objects.filter(task_id__startswith="durable-",
                                                     version__gt=1)}
    for task_id, version, marker in acknowledged:
        assert stored.get((task_id, version)) == marker, (task_id, version, marker)
    for n in range(CLIENTS):
        mine = [v for t, v, _ in acknowledged if t == f"durable-{n}"]
        if mine:
            assert TaskContext.objects.get(task_id=f"durable-{n}").version >= max(mine)
