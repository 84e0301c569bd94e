"""/metrics: what the processes counted, plus gauges of stored state read at scrape time.

The gauges that describe stored state (active sessions, sessions needing recovery,
unresolved conflicts, versions per task) are computed from Postgres when scraped, so they
are right whichever worker answers.
"""

from __future__ import annotations

import logging

from django.db import connection
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

from orchestrator.core.db import qualified
from orchestrator.observability.metrics import P, multiprocess_dir

logger = logging.getLogger("orchestrator.metrics")


class StoredStateCollector:
    """Gauges read from Postgres at scrape time."""

    def describe(self):
        # Declared empty so registering does not run the queries at import time.
        return []

    def collect(self):
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
            # How late crash detection is (KPI 9.1.2): a live session whose heartbeat is
            # older than the crash threshold should have been marked crashed already.
            "oldest_active_heartbeat_age_seconds": (
                "Age of the oldest heartbeat among active sessions (0 when there are none)",
                "SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(last_heartbeat)), 0) "
                f"FROM {qualified('active_sessions')} WHERE status = 'active'"),
        }
        for name, (doc, sql) in queries.items():
            rows = _rows(sql)
            if rows is not None:
                yield GaugeMetricFamily(P + name, doc, value=float(rows[0][0]))
        labelled = {
            # The spec's conflicts_unresolved has no labels; the critical-conflict alert
            # needs the severity.
            "conflicts_unresolved_by_severity": (
                "Unresolved conflicts per severity", ["severity"],
                f"SELECT severity, count(*) FROM {qualified('context_conflicts')} "
                "WHERE resolution_status = 'unresolved' GROUP BY severity"),
            "context_versions_total": (
                "Stored versions per task (top 100)", ["task_id"],
                f"SELECT task_id, count(*) FROM {qualified('context_versions')} "
                "GROUP BY task_id ORDER BY count(*) DESC LIMIT 100"),
        }
        labelled.update(_per_project())
        for name, (doc, labels, sql) in labelled.items():
            rows = _rows(sql)
            if rows is None:
                continue
            family = GaugeMetricFamily(P + name, doc, labels=labels)
            for *label_values, count in rows:
                family.add_metric([str(v) for v in label_values], count)
            yield family


# Per-project gauges: a project label only here, on gauges of stored state, where the
# series are (projects) x (a few statuses or severities) and at most PROJECT_SERIES_LIMIT
# projects are listed (the busiest first). The counters and histograms the processes keep
# (tool_calls_total, *_duration_seconds, ...) carry no project: their label sets times
# the number of repositories, times the histogram buckets, would grow without bound.
PROJECT_SERIES_LIMIT = 200


def _per_project() -> dict[str, tuple[str, list[str], str]]:
    sessions, conflicts = qualified("active_sessions"), qualified("context_conflicts")
    tasks = qualified("task_contexts")
    top = f" ORDER BY count(*) DESC LIMIT {PROJECT_SERIES_LIMIT}"
    return {
        "project_sessions_active": (
            "Active sessions per project", ["project"],
            f"SELECT project_id, count(*) FROM {sessions} WHERE status = 'active' "
            "GROUP BY project_id" + top),
        "project_recovery_needed": (
            "Sessions needing recovery per project", ["project"],
            f"SELECT project_id, count(*) FROM {sessions} WHERE recovery_needed "
            "GROUP BY project_id" + top),
        "project_conflicts_unresolved": (
            "Unresolved conflicts per project and severity", ["project", "severity"],
            f"SELECT project_id, severity, count(*) FROM {conflicts} "
            "WHERE resolution_status = 'unresolved' GROUP BY project_id, severity"
            + f" ORDER BY count(*) DESC LIMIT {PROJECT_SERIES_LIMIT * 4}"),
        "project_tasks": (
            "Tasks per project and status", ["project", "status"],
            f"SELECT project_id, COALESCE(status, 'pending'), count(*) FROM {tasks} "
            "GROUP BY 1, 2" + f" ORDER BY count(*) DESC LIMIT {PROJECT_SERIES_LIMIT * 5}"),
    }


def _rows(sql: str) -> list[tuple] | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()
    except Exception as exc:  # a scrape must not fail because Postgres is down
        logger.debug("stored-state metric unavailable: %s", exc)
        return None


STORED_STATE = CollectorRegistry(auto_describe=False)
STORED_STATE.register(StoredStateCollector())


def metrics_view(request: HttpRequest) -> HttpResponse:
    """/metrics: this process's registry, or every process's values in multiprocess mode."""
    if multiprocess_dir():
        counted = CollectorRegistry()
        multiprocess.MultiProcessCollector(counted)
    else:
        counted = REGISTRY
    return HttpResponse(generate_latest(counted) + generate_latest(STORED_STATE),
                        content_type=CONTENT_TYPE_LATEST)
