"""Crash detection by a real Celery worker and beat, and the management commands."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from tests import processes
from tests.sessions.helpers import backdate, status_of
from tests.waiting import wait_for


@pytest.mark.django_db(transaction=True)
def test_real_worker_and_beat_flip_a_stale_session_and_leave_a_fresh_one(tools, tmp_path):
    tools.ok("start_session", {"sessionId": "stale"})
    tools.ok("start_session", {"sessionId": "fresh"})
    backdate("stale", 10)
    env = processes.service_env(tmp_path, HEARTBEAT_INTERVAL_MS="500",
                                CRASH_THRESHOLD_MINUTES="2",
                                RECOVERY_DIR=str(tmp_path / "recovery"),
                                CONTEXT_DIR=str(tmp_path / "ctx"))
    log = tmp_path / "celery.log"
    with processes.running({"worker": processes.celery_worker(),
                            "beat": processes.celery_beat()}, env, log):
        wait_for(lambda: status_of("stale")[0] == "crashed", timeout=30, interval=0.2)
    assert status_of("stale") == ("crashed", True, "crash"), log.read_text()[-3000:]
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
    assert "0 abandoned session(s) closed" in out.getvalue()
