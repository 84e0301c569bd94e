"""The spec's Prometheus metrics (``session_orchestration_*``), served at /metrics.

Counters and histograms count what a process did. With several processes (web workers,
the Celery worker and beat) each writes its values to files under
``PROMETHEUS_MULTIPROC_DIR`` and /metrics adds them up (prometheus_client's multiprocess
mode; ``make run`` sets the directory). The gauges that describe stored state are read
from Postgres at scrape time by the endpoint (orchestrator.web.metrics).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from typing import Any

from prometheus_client import (
    Counter,
    Gauge,
    Histogram,
)

logger = logging.getLogger("orchestrator.metrics")
P = "session_orchestration_"

sessions_total = Counter(P + "sessions_total", "Sessions by status reached", ["status"])
heartbeat_age_seconds = Histogram(
    P + "heartbeat_age_seconds", "Age of the previous heartbeat when a new one arrives",
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800))
context_saves_total = Counter(P + "context_saves_total", "Context saves per backend", ["backend"])
context_save_duration_seconds = Histogram(
    P + "context_save_duration_seconds", "Context save duration per backend", ["backend"])
checkpoints_total = Counter(P + "checkpoints_total", "Checkpoints created", ["type", "scope"])
rollbacks_total = Counter(P + "rollbacks_total", "Rollbacks executed", ["type"])
conflicts_detected_total = Counter(
    P + "conflicts_detected_total", "Conflicts detected", ["type", "severity"])
conflicts_resolved_total = Counter(
    P + "conflicts_resolved_total", "Conflicts resolved", ["action"])
file_claim_checks_total = Counter(
    P + "file_claim_checks_total",
    "Claims asked for before an edit or by a tool, by outcome: clear, warned (another "
    "task's live session holds the file; the edit goes on), blocked (policy block)",
    ["outcome"])
task_switches_total = Counter(P + "task_switches_total", "Task switches")
task_switch_duration_seconds = Histogram(
    P + "task_switch_duration_seconds", "Task switch duration")
cache_hits_total = Counter(P + "cache_hits_total", "Redis cache hits")
cache_misses_total = Counter(P + "cache_misses_total", "Redis cache misses")
cache_sync_duration_seconds = Histogram(P + "cache_sync_duration_seconds", "Hot sync duration")
tool_calls_total = Counter(
    P + "tool_calls_total", "Tool calls by tool, transport and outcome (ok or the E16xx code)",
    ["tool", "transport", "outcome"])
tool_call_duration_seconds = Histogram(
    P + "tool_call_duration_seconds", "Tool call duration, whatever the transport", ["tool"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
# When each periodic job last finished without an error: the alert for a job that stopped
# running (deploy/prometheus/alerts.yml) compares it with time(). "max" keeps the newest
# value across processes, including the worker processes that have exited since.
job_last_success_timestamp_seconds = Gauge(
    P + "job_last_success_timestamp_seconds", "Unix time a periodic job last succeeded",
    ["job"], multiprocess_mode="max")
# Rows leaving the graph outbox: applied by a drain, or covered by a full sync_graph. Both
# take one advisory lock in turn, so over all processes and servers this adds up to the
# rows queued, each applied once.
graph_outbox_applied_total = Counter(
    P + "graph_outbox_applied_total",
    "Graph outbox rows applied to the Bolt mirror, by a drain or a full sync", ["via"])
backend_failures_total = Counter(
    P + "backend_failures_total", "Secondary backend write failures (repaired by sync)",
    ["backend", "operation"])


@functools.cache
def labelled(metric: Counter | Histogram | Gauge, *values: str) -> Any:
    """``metric.labels(*values)``, remembered: the hot paths (every save, every tool call)
    ask for the same few children over and over, and ``labels`` validates and locks each
    time. Label values come from small fixed sets (tools, transports, codes, backends)."""
    return metric.labels(*values)


def mark_job_success(job: str) -> None:
    """Record that periodic ``job`` (sync_hot_context, detect_conflicts, ...) just succeeded."""
    job_last_success_timestamp_seconds.labels(job).set(time.time())


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None
