"""/metrics: what the processes counted, plus gauges of stored state read at scrape time.

The gauges that describe stored state (active sessions, sessions needing recovery,
unresolved conflicts, versions per task) are computed from Postgres when scraped, so they
are right whichever worker answers.

Only a token of scope ``metrics`` (``create_api_token prometheus --scope metrics``) or
``admin``, reaching every project, reads it: the figures name every project and the
busiest tasks. Every label stays bounded whatever the fleet's size (see the per-task and
per-project limits below).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

from foundation.core.auth import authenticate_header
from foundation.core.db import qualified
from foundation.core.errors import error_body
from foundation.core.models import TokenScope
from foundation.observability.metrics import P, multiprocess_dir
from orchestrator.web.fastlane import AUTH_HEADERS

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
            # How late crash detection is (an alert fires past 10 minutes): a live session
            # whose heartbeat is older than the crash threshold should have been marked
            # crashed already.
            "oldest_active_heartbeat_age_seconds": (
                "Age of the oldest heartbeat among active sessions (0 when there are none)",
                "SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(last_heartbeat)), 0) "
                f"FROM {qualified('active_sessions')} WHERE status = 'active'"),
        }
        # Not stored state: the fleet this stack is sized for (FLEET_CAPACITY_SESSIONS),
        # which the alert rules and the dashboard measure the active sessions against.
        yield GaugeMetricFamily(P + "fleet_capacity_sessions",
                                "Active sessions this stack is sized for (FLEET_CAPACITY_SESSIONS)",
                                value=float(settings.FLEET_CAPACITY_SESSIONS))
        queries["file_claims_live"] = (
            "File claims held now (not released, not past their TTL)",
            "SELECT count(*) FROM file_claims WHERE released_at IS NULL AND expires_at > now()")
        for name, (doc, sql) in queries.items():
            rows = _rows(sql)
            if rows is not None:
                yield GaugeMetricFamily(P + name, doc, value=float(rows[0][0]))
        labelled = {
            # Agents by state: every session row by its status (active, paused, crashed,
            # ended, ...): a handful of series.
            "sessions_by_status": (
                "Sessions per status", ["status"],
                f"SELECT status, count(*) FROM {qualified('active_sessions')} GROUP BY status"),
            # The spec's conflicts_unresolved has no labels; the critical-conflict alert
            # needs the severity.
            "conflicts_unresolved_by_severity": (
                "Unresolved conflicts per severity", ["severity"],
                f"SELECT severity, count(*) FROM {qualified('context_conflicts')} "
                "WHERE resolution_status = 'unresolved' GROUP BY severity"),
            "context_versions_total": (
                f"Stored versions per task: the {TASK_SERIES_LIMIT} tasks with the most, "
                f"the rest added up under task_id=\"{OTHER_TASKS}\"", ["task_id"],
                _versions_per_task_sql()),
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


# The spec's context_versions_total{task_id}: one series per task would grow with every
# task a fleet ever made (thousands), so the TASK_SERIES_LIMIT tasks with the most stored
# versions keep their own series and all others are summed into one, labelled OTHER_TASKS
# (not a valid task id, so it never collides with one). The sum over every series stays
# the number of stored versions.
TASK_SERIES_LIMIT = 20
OTHER_TASKS = "(other)"


def _versions_per_task_sql() -> str:
    return (f"WITH counted AS (SELECT task_id, count(*) AS versions, "
            f"row_number() OVER (ORDER BY count(*) DESC, task_id) AS rank "
            f"FROM {qualified('context_versions')} GROUP BY task_id) "
            f"SELECT CASE WHEN rank <= {TASK_SERIES_LIMIT} THEN task_id "
            f"ELSE '{OTHER_TASKS}' END AS label, sum(versions) "
            f"FROM counted GROUP BY 1")


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


def _refusal(request: HttpRequest) -> JsonResponse | None:
    """401 without a valid token, 403 for a token that is not a scraper's (metrics or
    admin scope, every project), 503 while Postgres cannot check it."""
    header = request.headers.get("Authorization")
    try:
        principal = authenticate_header(header)
    except (OperationalError, InterfaceError):
        return JsonResponse(error_body("E1654", "PostgreSQL is unreachable"), status=503)
    if principal is None:
        message = ("Authentication credentials were not provided." if not header
                   else "Invalid or revoked bearer token")
        return JsonResponse(error_body("E1609", message), status=401, headers=AUTH_HEADERS)
    if principal.scope not in (TokenScope.METRICS, TokenScope.ADMIN) or principal.projects:
        return JsonResponse(error_body(
            "E1608", "/metrics needs a metrics or admin token reaching every project",
            {"scope": principal.scope}), status=403)
    return None


def metrics_view(request: HttpRequest) -> HttpResponse:
    """/metrics: this process's registry, or every process's values in multiprocess mode."""
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    if multiprocess_dir():
        counted = CollectorRegistry()
        multiprocess.MultiProcessCollector(counted)
    else:
        counted = REGISTRY
    return HttpResponse(generate_latest(counted) + generate_latest(STORED_STATE),
                        content_type=CONTENT_TYPE_LATEST)
