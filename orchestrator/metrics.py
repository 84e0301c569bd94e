"""The spec's Prometheus metrics (9.1.1), exported by django-prometheus at /metrics.

Counters and histograms count what this process did. The gauges that describe stored
state (active sessions, sessions needing recovery, unresolved conflicts) are computed
from Postgres at scrape time, so they are right whichever worker is scraped.
"""

from __future__ import annotations

import logging

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

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
backend_failures_total = Counter(
    P + "backend_failures_total", "Secondary backend write failures (repaired by sync)",
    ["backend", "operation"])


class StoredStateCollector:
    """Gauges read from Postgres at scrape time."""

    def describe(self):
        # Declared empty so registering does not run the queries at import time.
        return []

    def collect(self):
        from django.db import connection

        from orchestrator.db import qualified

        queries = {
            "sessions_active": ("Sessions with status active",
                                f"SELECT count(*) FROM {qualified('active_sessions')} "
                                "WHERE status = 'active'"),
            "recovery_needed": ("Sessions needing recovery",
                                f"SELECT count(*) FROM {qualified('active_sessions')} "
                                "WHERE recovery_needed"),
            "conflicts_unresolved": ("Unresolved conflicts",
                                     f"SELECT count(*) FROM {qualified('context_conflicts')} "
                                     "WHERE resolution_status = 'unresolved'"),
        }
        for name, (doc, sql) in queries.items():
            try:
                with connection.cursor() as cursor:
                    cursor.execute(sql)
                    value = cursor.fetchone()[0]
            except Exception as exc:  # a scrape must not fail because Postgres is down
                logger.debug("metric %s unavailable: %s", name, exc)
                continue
            yield GaugeMetricFamily(P + name, doc, value=value)
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT task_id, count(*) FROM {qualified('context_versions')} "
                    "GROUP BY task_id ORDER BY count(*) DESC LIMIT 100")
                rows = cursor.fetchall()
        except Exception:
            return
        family = GaugeMetricFamily(P + "context_versions_total",
                                   "Stored versions per task (top 100)", labels=["task_id"])
        for task_id, count in rows:
            family.add_metric([task_id], count)
        yield family


_registered = False


def register_stored_state_collector() -> None:
    global _registered
    if not _registered:
        REGISTRY.register(StoredStateCollector())
        _registered = True
