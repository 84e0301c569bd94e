"""Crash detection by a real Celery worker and beat, and the management commands."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from tests.sessions.helpers import backdate, status_of
from tests.subprocesses import database_url
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
def test_real_worker_and_beat_flip_a_stale_session_and_leave_a_fresh_one(tools, tmp_path):
    tools.ok("start_session", {"sessionId": "stale"})
    tools.ok("start_session", {"sessionId": "fresh"})
    backdate("stale", 10)
    env = {**os.environ, "DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL,
           "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
           "HEARTBEAT_INTERVAL_MS": "500", "CRASH_THRESHOLD_MINUTES": "2",
           "RECOVERY_DIR": str(tmp_path / "recovery"), "CONTEXT_DIR": str(tmp_path / "ctx")}
    celery = [sys.executable, "-m", "celery", "-A", "orchestrator"]
    logs = tmp_path / "celery.log"
    with logs.open("w") as log:
        procs = [
            subprocess.Popen([*celery, "worker", "--pool", "solo", "--concurrency", "1",
                              "--without-gossip", "--without-mingle", "-Q", "celery",
                              "--loglevel", "WARNING"], cwd=ROOT, env=env, stdout=log,
                             stderr=subprocess.STDOUT),
            subprocess.Popen([*celery, "beat", "--schedule", str(tmp_path / "beat-schedule"),
                              "--loglevel", "WARNING"], cwd=ROOT, env=env, stdout=log,
                             stderr=subprocess.STDOUT),
        ]
        try:
            wait_for(lambda: status_of("stale")[0] == "crashed", timeout=30, interval=0.2)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    assert status_of("stale") == ("crashed", True, "crash"), logs.read_text()[-3000:]
    assert status_of("fresh") == ("active", False, None)


@pytest.mark.django_db
def test_management_commands(tools):
    tools.ok("start_session", {"sessionId": "stale"})
    backdate("stale", 10)
    out = StringIO()
    call_command("detect_crashed_sessions", stdout=out)
    assert "stale" in out.getvalue() and "1 session(s) marked crashed" in out.getvalue()
    out = StringIO()
    call_command("clean_stale_sessions", stdout=out)
    assert "0 stale session(s) removed" in out.getvalue()
