"""Issue 22 item 9: every bad query parameter of the browsing endpoints is a 400 in the
spec's error format (E1612), never a 500; and the first request after Postgres cut the
service's connections succeeds. Real HTTP to the live server (uvicorn, the ASGI app),
real Postgres."""

from __future__ import annotations

import httpx
import psycopg
import pytest
from django.db import connection

# Every paginated browsing list; {task} and {session} are filled in.
LISTS = ["/api/v1/tasks/", "/api/v1/versions/", "/api/v1/checkpoints/", "/api/v1/sessions/",
         "/api/v1/conflicts/", "/api/v1/relationships/", "/api/v1/handoffs/",
         "/api/v1/tasks/{task}/versions/"]
CURSOR_LISTS = ["/api/v1/sessions/{session}/events/", "/api/v1/sessions/{session}/tool-history/"]
BAD_PAGE_VALUES = ["-2.67e-294", "-1", "1.5", "2.0", "1e3", "abc", "", " 5", "0x10", "+5",
                   "99999999999999999999", "9" * 5000, "2147483648"]
# Not a page parameter: anything a filter or the project scope reads.
NUL_PARAMETERS = ["projectId", "taskId", "status", "ordering", "task", "sessionId",
                  "keyword", "scope"]


def _error(response: httpx.Response, status: int = 400) -> dict:
    assert response.status_code == status, (response.request.url, response.text[:300])
    body = response.json()
    assert body["success"] is False and set(body) == {"success", "error", "timestamp"}
    assert body["error"]["code"] == "E1612", body
    return body["error"]


@pytest.fixture
def browsing(live_api):
    url, token = live_api
    client = httpx.Client(base_url=url, timeout=30,
                          headers={"Authorization": f"Bearer {token}"})
    for body in ({"taskId": "bp-1", "name": "One"}, {"taskId": "bp-2", "name": "Two"}):
        assert client.post("/api/v1/tools/create_task/", json=body).status_code == 200
    assert client.post("/api/v1/tools/start_session/",
                       json={"sessionId": "bp-s1", "taskId": "bp-1"}).status_code == 200
    yield client
    client.close()


def _lists(paths: list[str]) -> list[str]:
    return [p.format(task="bp-1", session="bp-s1") for p in paths]


def test_bad_limit_and_offset_are_400_on_every_list(browsing):
    for path in _lists(LISTS):
        assert browsing.get(path, params={"limit": 1, "offset": 1}).status_code == 200, path
        assert browsing.get(path, params={"limit": 1000, "offset": 2**31 - 1}
                            ).status_code == 200, path
        for name in ("limit", "offset"):
            for value in BAD_PAGE_VALUES + (["0", "1001"] if name == "limit" else []):
                error = _error(browsing.get(path, params={name: value}))
                assert error["details"][0]["field"] == name, (path, name, value)


def test_the_versions_list_of_the_fault_run(browsing):
    error = _error(browsing.get("/api/v1/versions/?limit=-2.67e-294"))
    assert error["message"].startswith("Invalid query parameter limit")


def test_bad_cursors_and_page_sizes_are_400_on_the_logs(browsing):
    for path in _lists(CURSOR_LISTS):
        first = browsing.get(path, params={"limit": 1})
        assert first.status_code == 200, first.text
        for value in ["0", "-1", "1.5", "abc", "1001", "99999999999999999999"]:
            _error(browsing.get(path, params={"limit": value}))
        for cursor in ["abc", "%%%", "", "cD0xZTk5", "bz0tMQ==", "cj14", "cD1hYmM=",
                       "cD05OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5"]:
            _error(browsing.get(path, params={"cursor": cursor}))


def test_nul_characters_in_any_parameter_are_400(browsing):
    for path in _lists(LISTS + CURSOR_LISTS) + ["/api/v1/global-context/",
                                                "/api/v1/claims/"]:
        for name in NUL_PARAMETERS:
            response = browsing.get(path, params={name: "a\x00b"})
            _error(response)
        _error(browsing.get(path, params={"a\x00b": "1"}))
    # A detail view that reads the project scope too.
    _error(browsing.get("/api/v1/sessions/bp-s1/", params={"projectId": "\x00"}))


def test_the_openapi_document_states_the_bounds(browsing):
    schema = browsing.get("/api/schema/?format=json").json()
    parameters = {p["name"]: p["schema"] for p in
                  schema["paths"]["/api/v1/versions/"]["get"]["parameters"]}
    assert parameters["limit"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    assert parameters["offset"] == {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}


def _terminate_other_backends() -> int:
    """pg_terminate_backend of every other connection to the test database (the live
    server's pooled connections), from a connection of its own; each call waits until
    its backend is gone (the timeout argument), as after a restart or a failover."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = "
            "current_database() AND pid <> pg_backend_pid() AND pid <> %s "
            "AND backend_type = 'client backend'",
            [connection.connection.info.backend_pid if connection.connection else 0]
        ).fetchall()
    return len(rows)


def test_the_first_request_after_postgres_cut_the_connections_succeeds(browsing):
    """A pooled connection the server terminated is found dead before the request's first
    query (CONN_HEALTH_CHECKS, checked on the socket) and replaced: no 503."""
    for _ in range(3):  # every worker thread of the live server has a pooled connection
        assert browsing.get("/api/v1/tasks/").status_code == 200
        assert browsing.post("/api/v1/tools/get_unified_context/",
                             json={"taskId": "bp-1"}).status_code == 200
    connection.ensure_connection()
    assert _terminate_other_backends() >= 1
    for _ in range(3):
        browsing_answer = browsing.get("/api/v1/tasks/")
        assert browsing_answer.status_code == 200, browsing_answer.text
        tool_answer = browsing.post("/api/v1/tools/get_unified_context/",
                                    json={"taskId": "bp-1"})
        assert tool_answer.status_code == 200, tool_answer.text
        assert browsing.get("/healthz").status_code == 200
