"""GET /healthz: is each backend reachable? 503 only when Postgres is not."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection
from django.http import JsonResponse

from foundation.backends import files, redis_store
from foundation.core.errors import failure_reason

logger = logging.getLogger("orchestrator.health")


def check_postgres() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:
        logger.warning("health check: PostgreSQL: %s", exc)
        return f"error: {failure_reason(exc)}"


def check_redis() -> str:
    return "ok" if redis_store.ping() else "error: unreachable"


def check_neo4j() -> str:
    if not settings.ENABLE_NEO4J:
        return "disabled"
    from graph import backend as graph_backend

    return graph_backend.health()


def check_files() -> str:
    if not settings.ENABLE_FILE_SYNC:
        return "disabled"
    bad = [str(d) for d in (files.context_dir(), files.recovery_dir()) if not files.writable(d)]
    return "ok" if not bad else f"error: not writable: {', '.join(bad)}"


def healthz(request):
    backends = {
        "postgres": check_postgres(),
        "redis": check_redis(),
        "neo4j": check_neo4j(),
        "files": check_files(),
    }
    healthy = all(v in ("ok", "disabled") for v in backends.values())
    status = 200 if backends["postgres"] == "ok" else 503
    return JsonResponse({"status": "ok" if healthy else "degraded", "backends": backends},
                        status=status)
