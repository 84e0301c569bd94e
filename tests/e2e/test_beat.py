"""Celery beat really schedules every periodic job (a real beat process, short periods)."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrator.celery import periodic_jobs
from tests import processes
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
JOBS = ("contexts.sync_hot_context", "sessions.detect_crashed_sessions",
        "sessions.clean_stale_sessions", "graph.drain_outbox", "orchestrator.retention",
        "contexts.check_checkpoints", "sessions.resume_paused_sessions",
        "contexts.replay_pending_saves", "conflicts.detect_conflicts",
        "graph.sync_graph")


def test_schedule_follows_settings(settings):
    settings.ENABLE_CONFLICT_DETECTION = False
    settings.ENABLE_NEO4J = False
    settings.HEARTBEAT_INTERVAL_MS = 1500
    jobs = periodic_jobs()
    assert {j["task"] for j in jobs.values()} == set(JOBS[:8])
    assert jobs["detect crashed sessions"]["schedule"] == 1.5
    assert jobs["resume paused sessions"]["schedule"] == 1.5
    assert jobs["replay pending saves"]["schedule"] == 1.5


EVERY_SECOND = {"HOT_SYNC_INTERVAL_SECONDS": "1", "HEARTBEAT_INTERVAL_MS": "1000",
                "STALE_SESSION_SWEEP_INTERVAL_SECONDS": "1",
                "CONFLICT_DETECTION_INTERVAL_SECONDS": "1", "RETENTION_INTERVAL_SECONDS": "1",
                "CHECKPOINT_CHECK_INTERVAL_SECONDS": "1",
                "GRAPH_SYNC_INTERVAL_SECONDS": "1", "GRAPH_OUTBOX_INTERVAL_SECONDS": "1",
                "ENABLE_NEO4J": "true", "ENABLE_CONFLICT_DETECTION": "true"}


def test_beat_sends_every_job():
    env = {**os.environ, **EVERY_SECOND}
    beat = subprocess.Popen(
        [sys.executable, *processes.celery_beat("INFO")],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # A thread reads beat's output, so a silent beat cannot hold the loop past its deadline
    # (a readline() here would block until beat printed again).
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=lambda: ([lines.put(line) for line in beat.stdout],
                                     lines.put(None)), daemon=True).start()
    seen: set[str] = set()
    output: list[str] = []
    try:
        deadline = time.monotonic() + 45
        while seen != set(JOBS) and (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:  # beat exited
                break
            output.append(line)
            if "Sending due task" in line:
                seen |= {job for job in JOBS if f"({job})" in line}
    finally:
        beat.terminate()
        try:
            beat.wait(timeout=10)
        except subprocess.TimeoutExpired:
            beat.kill()
    assert seen == set(JOBS), "".join(output[-30:])


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_every_job_beat_sends(tmp_path):
    """Beat sending a task no worker has registered is silent until the worker drops it
    ("Received unregistered task"): the outbox drain was lost that way once."""
    env = processes.service_env(tmp_path, **EVERY_SECOND)
    log = tmp_path / "celery.log"

    def succeeded() -> set[str]:
        lines = log.read_text().splitlines()
        return {job for job in JOBS
                if any(f"Task {job}[" in line and "succeeded" in line for line in lines)}

    with processes.running({"worker": processes.celery_worker("INFO"),
                            "beat": processes.celery_beat()}, env, log):
        wait_for(lambda: succeeded() == set(JOBS) or "unregistered" in log.read_text(),
                 timeout=90, interval=0.5)
    text = log.read_text()
    assert "unregistered" not in text, text[-3000:]
    assert succeeded() == set(JOBS), text[-3000:]
