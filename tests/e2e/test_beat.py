"""Celery beat really schedules every periodic job (a real beat process, short periods)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.celery import periodic_jobs

ROOT = Path(__file__).resolve().parents[2]
JOBS = ("contexts.sync_hot_context", "sessions.detect_crashed_sessions",
        "sessions.clean_stale_sessions", "graph.drain_outbox", "orchestrator.retention",
        "conflicts.detect_conflicts",
        "graph.sync_graph")


def test_schedule_follows_settings(settings):
    settings.ENABLE_CONFLICT_DETECTION = False
    settings.ENABLE_NEO4J = False
    settings.HEARTBEAT_INTERVAL_MS = 1500
    jobs = periodic_jobs()
    assert {j["task"] for j in jobs.values()} == set(JOBS[:5])
    assert jobs["detect crashed sessions"]["schedule"] == 1.5


def test_beat_sends_every_job(tmp_path):
    env = {**os.environ, "HOT_SYNC_INTERVAL_SECONDS": "1", "HEARTBEAT_INTERVAL_MS": "1000",
           "STALE_SESSION_SWEEP_INTERVAL_SECONDS": "1", "CONFLICT_DETECTION_INTERVAL_SECONDS": "1",
           "RETENTION_INTERVAL_SECONDS": "1",
           "GRAPH_SYNC_INTERVAL_SECONDS": "1", "GRAPH_OUTBOX_INTERVAL_SECONDS": "1",
           "ENABLE_NEO4J": "true",
           "ENABLE_CONFLICT_DETECTION": "true"}
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "orchestrator", "beat", "--loglevel=INFO",
         "--schedule", str(tmp_path / "beat-schedule")],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: set[str] = set()
    output: list[str] = []
    try:
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and seen != set(JOBS):
            line = beat.stdout.readline()
            if not line:
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
