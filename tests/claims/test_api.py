"""GET /api/v1/claims/: the live claims listing over REST (claims.api): contested first,
filters, project scoping of tokens, the spec's 404 for an unknown task, authentication
and the OpenAPI document."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from claims.services.queries import file_claims
from foundation.core.models import ApiToken
from tests.claims.test_claims import expire
from tests.conftest import ToolClient, ToolResponse

URL = "/api/v1/claims/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def editing(tools, make_task):
    """Default project: t1 (session a) holds src/x.py and src/y.py, t2 (session b) holds
    src/x.py too (contested). Project other: o1 (session c) holds src/z.py."""
    make_task("t1")
    make_task("t2")
    tools.ok("create_project", {"projectId": "other", "name": "Other"})
    make_task("o1", projectId="other")
    tools.ok("start_session", {"sessionId": "a", "taskId": "t1", "projectDir": "/repo",
                               "agentId": "agent-a"})
    tools.ok("start_session", {"sessionId": "b", "taskId": "t2", "projectDir": "/repo"})
    tools.ok("start_session", {"sessionId": "c", "taskId": "o1", "projectDir": "/other"})
    tools.ok("claim_files", {"sessionId": "a", "paths": ["src/x.py", "src/y.py"]})
    tools.ok("claim_files", {"sessionId": "b", "paths": ["/repo/src/x.py"]})
    tools.ok("claim_files", {"sessionId": "c", "paths": ["src/z.py"]})
    return tools


def listed(client: ToolClient, **params) -> ToolResponse:
    """GET the listing (ToolClient.get names its own first argument ``path``)."""
    response = client.client.get(URL, params)
    return ToolResponse(response.status_code, response.json())


def limited_to(*projects: str) -> ToolClient:
    _, raw = ApiToken.issue(f"limited-{time.monotonic_ns()}", projects=list(projects))
    return ToolClient(raw)


def held(body) -> list[tuple[str, str]]:
    return [(c["path"], c["sessionId"]) for c in body["claims"]]


def test_the_listing_is_the_service_s_contested_first(editing):
    response = listed(editing)
    assert response.status == 200, response.body
    body = response.body
    assert body["success"] is True and body["contested"] == ["src/x.py"]
    assert body["total"] == 4 == len(body["claims"])
    # Contested files first, then by project (src/z.py is project "other"'s) and path.
    assert [c["path"] for c in body["claims"]] == ["src/x.py", "src/x.py", "src/z.py",
                                                   "src/y.py"]
    assert [c["contested"] for c in body["claims"]] == [True, True, False, False]
    first = {c["sessionId"]: c for c in body["claims"] if c["path"] == "src/x.py"}
    assert first["a"]["taskId"] == "t1" and first["a"]["agentId"] == "agent-a"
    assert first["b"]["taskId"] == "t2" and first["b"]["state"] == "held"
    for claim in body["claims"]:
        assert {"claimedAt", "lastEditAt", "expiresAt", "secondsSinceEdit",
                "taskName", "taskStatus", "doing"} <= set(claim)
    service = file_claims(None)
    assert held(body) == held(service) and body["contested"] == service["contested"]


def test_filters_task_session_path_and_project(editing):
    # A task: its claims and the other tasks' claims on its paths (who it contends with).
    by_task = listed(editing, task="t1").body
    assert sorted(held(by_task)) == [("src/x.py", "a"), ("src/x.py", "b"), ("src/y.py", "a")]
    assert by_task["contested"] == ["src/x.py"]
    assert sorted(held(listed(editing, task="t2").body)) == [("src/x.py", "a"),
                                                              ("src/x.py", "b")]
    assert held(listed(editing, session="b").body) == [("src/x.py", "b")]
    assert held(listed(editing, session="nobody").body) == []
    assert held(listed(editing, path="src/y.py").body) == [("src/y.py", "a")]
    # Repeated, or a comma list; a path under no claim lists nothing.
    repeated = listed(editing, path=["src/y.py", "src/z.py"]).body
    comma = listed(editing, path="src/y.py,src/z.py").body
    assert held(repeated) == held(comma) == [("src/z.py", "c"), ("src/y.py", "a")]
    assert listed(editing, path="src/none.py").body["total"] == 0
    assert {c["path"] for c in listed(editing, project="other").body["claims"]} == {"src/z.py"}
    assert {c["path"] for c in listed(editing, projectId="other").body["claims"]} == \
        {"src/z.py"}
    assert listed(editing, project="no-such-project").body["total"] == 0


def test_include_recent(editing):
    expire("a", "src/y.py", 30)  # lapsed 30 s ago: recently held
    every = listed(editing).body
    [recent] = [c for c in every["claims"] if c["path"] == "src/y.py"]
    assert recent["state"] == "recent"
    assert ("src/y.py", "a") not in held(listed(editing, includeRecent="false").body)
    assert listed(editing, includeRecent="true").body["total"] == every["total"] == 4


def test_a_token_limited_to_a_project_sees_only_its_claims(editing, settings):
    other = limited_to("other")
    assert held(listed(other).body) == [("src/z.py", "c")]
    assert listed(other).body["contested"] == []
    # Naming a project it cannot reach lists nothing, as in the other browsing lists.
    assert listed(other, project=settings.MCP_PROJECT_ID).body["total"] == 0
    assert listed(other, path="src/x.py").body["total"] == 0
    assert listed(other, session="a").body["total"] == 0
    # Another project's task answers exactly as a missing one.
    foreign, missing = listed(other, task="t1"), listed(other, task="ghost")
    assert (foreign.status, foreign.error_code) == (missing.status, missing.error_code) \
        == (404, "E1610")
    assert listed(other, task="o1").status == 200


def test_an_unknown_task_is_404_e1610(editing):
    for task in ("ghost", "no such/task"):
        response = listed(editing, task=task)
        assert (response.status, response.error_code) == (404, "E1610"), task
        assert response.body["error"]["details"]["taskId"] == task


def test_bad_input_is_400_e1612(editing):
    for params in ({"path": "../outside.py"}, {"includeRecent": "maybe"},
                   {"project": "../x"}, {"path": "a\x00b"}):
        response = listed(editing, **params)
        assert (response.status, response.error_code) == (400, "E1612"), params


def test_unauthenticated_and_bad_tokens_are_401(editing):
    anonymous = Client().get(URL)
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "E1609"
    assert anonymous["WWW-Authenticate"].startswith("Bearer")
    bad = Client(HTTP_AUTHORIZATION="Bearer orch_not-a-token").get(URL)
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "E1609"
    # The same as another browsing endpoint answers.
    assert Client().get("/api/v1/conflicts/").status_code == 401


def test_read_only(editing):
    assert editing.client.post(URL, {}, content_type="application/json").status_code == 405


def test_described_in_the_openapi_document(api_token):
    schema = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}").get(
        "/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/claims/"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"project", "task", "session", "path", "includeRecent"} <= names
    [path_param] = [p for p in operation["parameters"] if p["name"] == "path"]
    assert path_param["schema"]["type"] == "array"
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer["$ref"].endswith("/ClaimListing")
    listing = schema["components"]["schemas"]["ClaimListing"]
    assert {"claims", "contested", "total"} <= set(listing["properties"])
