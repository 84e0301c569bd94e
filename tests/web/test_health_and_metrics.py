"""/healthz, /metrics, the OpenAPI document, and a stopped Postgres (503 E1654, not 500).
(Tokens: tests/foundation/test_tokens.py; the spec's metrics one by one: tests/observability/test_metrics.py.)"""

from __future__ import annotations

from django.test import Client

from tests.conftest import free_port, metrics_token


def test_healthz_reports_every_backend(db, client: Client, settings):
    settings.ENABLE_NEO4J = False
    body = client.get("/healthz").json()
    assert body == {"status": "ok", "backends": {"postgres": "ok", "redis": "ok",
                                                  "neo4j": "disabled", "files": "ok"}}


def test_healthz_is_degraded_not_down_without_redis(db, client: Client, settings):
    settings.ENABLE_NEO4J = False
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "degraded"
    assert response.json()["backends"]["redis"].startswith("error")


def test_healthz_reports_unwritable_files(db, client: Client, settings, tmp_path):
    settings.ENABLE_NEO4J = False
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    settings.CONTEXT_DIR = blocker / "contexts"
    body = client.get("/healthz").json()
    assert body["status"] == "degraded" and body["backends"]["files"].startswith("error")


def test_metrics_expose_spec_names(db, client: Client, tools):
    tools.ok("create_task", {"taskId": "m1", "name": "metrics"})
    tools.call("create_task", {"taskId": "m1", "name": "again"})
    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_token()}").content.decode()
    for name in ("session_orchestration_context_saves_total",
                 "session_orchestration_sessions_active",
                 "session_orchestration_conflicts_unresolved",
                 "session_orchestration_cache_hits_total",
                 "django_http_requests_total_by_method_total",
                 "django_db_execute_total"):
        assert name in text, name
    assert ('session_orchestration_tool_calls_total{outcome="E1614",tool="create_task",'
            'transport="rest"}') in text


def test_openapi_document_generates_without_warnings(db, tmp_path):
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    text = target.read_text()
    assert "/api/v1/tools/create_task/" in text and "bearerAuth" in text


def test_postgres_down_is_503_e1654_not_500(django_db_blocker):
    """Postgres stopped (a closed port): the API answers 503 with E1654, healthz 503 too."""
    from django.db import connections

    # connections caches the DATABASES dict itself, so point it elsewhere in place and
    # put it back in place.
    databases = connections.settings
    original = databases["default"]
    # Keep the connection object itself: pytest-django drops the test database through
    # the object it set up with, and a stand-in left open would block the DROP.
    original_connection = connections["default"]
    databases["default"] = {**original, "HOST": "127.0.0.1", "PORT": str(free_port()),
                            "CONN_MAX_AGE": 0}
    connections.close_all()
    del connections["default"]
    try:
        with django_db_blocker.unblock():
            client = Client(HTTP_AUTHORIZATION="Bearer whatever")
            response = client.post("/api/v1/tools/get_unified_context/", {},
                                   content_type="application/json")
            assert response.status_code == 503
            assert response.json()["error"]["code"] == "E1654"
            health = client.get("/healthz")
            assert health.status_code == 503
            assert health.json()["backends"]["postgres"].startswith("error")
    finally:
        databases["default"] = original
        connections["default"].close()
        connections["default"] = original_connection
