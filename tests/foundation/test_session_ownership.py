"""Session ownership (spec 8.1.2): the token that starts a session owns it; another write
token may read it but not write it (E1604), an admin token may; over REST and MCP (where
the read scope is checked too). Token scopes and revoked tokens: test_tokens.py."""

from __future__ import annotations

import time

import httpx
import pytest

from bench.roundtrips import PostgresTrace
from contexts.models import Checkpoint, ContextVersion, GlobalContextVersion, TaskContext
from foundation.core.models import ApiToken, SessionOwner, TokenScope
from foundation.core.tools import ToolContext, access, call_tool
from sessions.models import ActiveSession, SessionDetail, SessionEvent, ToolInvocation
from tests import mcp_client
from tests.foundation.conftest import client_with

pytestmark = pytest.mark.django_db


SESSION_WRITES = [
    ("heartbeat", lambda s: {"sessionId": s}),
    ("update_session_scratchpad", lambda s: {"sessionId": s, "patch": {"k": 1}}),
    ("append_session_event", lambda s: {"sessionId": s, "type": "user_message", "role": "user",
                                        "content": "hi"}),
    ("report_compaction", lambda s: {"sessionId": s}),
    ("record_activity", lambda s: {"sessionId": s, "toolUses": [
        {"tool": "Edit", "success": True, "timestamp": "2026-11-24T10:00:00Z",
         "filePaths": ["/elsewhere/stolen.py"]}]}),
    ("acquire_task_lock", lambda s: {"taskId": "own-task", "sessionId": s}),
    ("renew_task_lock", lambda s: {"taskId": "own-task", "sessionId": s}),
    ("release_task_lock", lambda s: {"taskId": "own-task", "sessionId": s}),
    ("check_recovery", lambda s: {"markRecovered": s}),
    ("end_session", lambda s: {"sessionId": s}),
]


def test_the_starting_token_owns_the_session(owner, session):
    assert SessionOwner.objects.get(session_id=session).token_name == owner.token_name


@pytest.mark.parametrize(("tool", "payload"), SESSION_WRITES, ids=[t for t, _ in SESSION_WRITES])
def test_another_write_token_cannot_write_the_session(session, tool, payload):
    other = client_with(TokenScope.WRITE)
    response = other.call(tool, payload(session))
    assert (response.status, response.error_code) == (403, "E1604"), response.body
    assert SessionDetail.objects.get(session_id=session).scratchpad == {}
    assert not SessionEvent.objects.filter(session_id=session).exists()
    assert not ToolInvocation.objects.filter(session_id=session, transport="hook").exists()
    assert TaskContext.objects.get(task_id="own-task").key_files in (None, [])


def test_owner_and_admin_tokens_can_write_it(owner, session):
    owner.ok("update_session_scratchpad", {"sessionId": session, "patch": {"by": "owner"}})
    owner.ok("acquire_task_lock", {"taskId": "own-task", "sessionId": session})
    admin = client_with(TokenScope.ADMIN)
    admin.ok("heartbeat", {"sessionId": session})
    admin.ok("release_task_lock", {"taskId": "own-task", "sessionId": session})
    admin.ok("end_session", {"sessionId": session})


def test_reading_another_tokens_session_is_allowed(session):
    other = client_with(TokenScope.WRITE)
    other.ok("get_session_scratchpad", {"sessionId": session})
    other.ok("check_recovery", {})
    assert other.get(f"/api/v1/sessions/{session}/").status == 200


def test_sessions_started_in_process_belong_to_no_token(owner):
    started = call_tool("start_session", {}, ToolContext("command", actor="hook"))
    assert not SessionOwner.objects.filter(session_id=started["sessionId"]).exists()
    owner.ok("heartbeat", {"sessionId": started["sessionId"]})


def test_the_owner_check_costs_one_query_per_session_not_per_call(owner, session,
                                                                  monkeypatch):
    """Owned or not, a session's owner is looked up once; a session id that does not exist
    yet is looked up again, so that whoever starts it owns it from its first call."""
    lookups: list[str] = []

    def fetch_one(sql, params):  # the real statement, counted (it is prepared: Django's
        if "token_name FROM" in sql:  # query capture does not see it)
            lookups.append(sql)
        return real_fetch_one(sql, params)

    real_fetch_one = access.prepared.fetch_one
    monkeypatch.setattr(access.prepared, "fetch_one", fetch_one)
    ownerless = call_tool("start_session", {}, ToolContext("command"))["sessionId"]
    for session_id in (session, ownerless):
        access.forget_session_owners()
        owner.ok("heartbeat", {"sessionId": session_id})
        assert len(lookups) == 1
        owner.ok("heartbeat", {"sessionId": session_id})
        assert len(lookups) == 1
        lookups.clear()


def test_the_owner_check_is_planned_once_per_connection(owner, session):
    """The owner lookup is a prepared statement: after its first run on a connection it is
    sent without its text (Bind and Execute, no Parse), so Postgres does not plan it again
    (planning was 0.42 of its 0.44 ms)."""
    for _ in range(2):  # the first may be the connection's first: parsed then
        access.forget_session_owners()
        trace = PostgresTrace()
        with trace.capture():
            assert access.owner_of(session) == owner.token_name
    assert trace.statements() == [] and trace.round_trips() == 1, trace.lines
    other = client_with(TokenScope.WRITE)
    assert other.call("heartbeat", {"sessionId": "not-yet"}).status == 404
    owner.ok("start_session", {"sessionId": "not-yet"})
    refused = other.call("heartbeat", {"sessionId": "not-yet"})
    assert refused.status == 403 and refused.body["error"]["code"] == "E1604"


def test_mcp_enforces_the_same(live_api):
    url, _ = live_api
    _, owner = ApiToken.issue("mcp-owner", TokenScope.WRITE)
    _, other = ApiToken.issue("mcp-other", TokenScope.WRITE)
    _, reader = ApiToken.issue("mcp-reader", TokenScope.READ)
    started = httpx.post(f"{url}/api/v1/tools/start_session/", json={}, timeout=30,
                         headers={"Authorization": f"Bearer {owner}"})
    assert started.status_code == 200
    session = started.json()["sessionId"]
    foreign = mcp_client.call_tool(url, other, "heartbeat", {"sessionId": session})
    assert foreign.is_error and foreign.structured_content["error"]["code"] == "E1604"
    assert foreign.content[0].text.startswith("E1604: ")
    read_only = mcp_client.call_tool(url, reader, "create_task", {"taskId": "m", "name": "m"})
    assert read_only.is_error and read_only.structured_content["error"]["code"] == "E1608"
    assert not mcp_client.call_tool(url, owner, "heartbeat", {"sessionId": session}).is_error
    # The REST fast lane (the production path) answers the same as the DRF view.
    via_rest = httpx.post(f"{url}/api/v1/tools/heartbeat/", json={"sessionId": session},
                          headers={"Authorization": f"Bearer {other}"}, timeout=30)
    assert via_rest.status_code == 403 and via_rest.json()["error"]["code"] == "E1604"


# -- writes that name a session as their author (issue 34) ------------------------------------
# A save, checkpoint, rollback, switch, resolution or global-context update names the
# session it was made in: in the version history, the checkpoint, the conflict. Naming
# another token's session would forge that trail, so it is E1604 as for the session tools.
def _other_task(client) -> str:
    if not TaskContext.objects.filter(task_id="other-task").exists():
        client.ok("create_task", {"taskId": "other-task", "name": "Other"})
    return "other-task"


def _report_conflict(client) -> str:
    """A new conflict (one per pair of tasks: a second report is the same conflict)."""
    task = f"conflicting-{time.monotonic_ns()}"
    client.ok("create_task", {"taskId": task, "name": "Conflicting"})
    return client.ok("report_conflict", {
        "taskAId": "own-task", "taskBId": task, "severity": "low",
        "description": "they disagree"})["conflict"]["id"]


AUTHORED_WRITES = [
    ("save_context_snapshot", lambda s, c: {"taskId": "own-task", "sessionId": s,
                                            "updates": {"currentPhase": "forged"}}),
    ("create_checkpoint", lambda s, c: {"label": "forged", "taskId": "own-task",
                                        "sessionId": s}),
    ("rollback_to", lambda s, c: {"taskId": "own-task", "sessionId": s,
                                  "target": {"type": "version", "version": 1}}),
    ("switch_task", lambda s, c: {"fromTaskId": "own-task", "toTaskId": _other_task(c),
                                  "sessionId": s}),
    ("update_global_context", lambda s, c: {"hardRules": ["forged"], "sessionId": s}),
    ("resolve_conflict", lambda s, c: {"conflictId": _report_conflict(c), "sessionId": s,
                                       "resolution": {"action": "ignore"}}),
]


def _trail(session: str) -> dict[str, int]:
    """What names the session as the author of a write."""
    return {"versions": ContextVersion.objects.filter(session_id=session).count(),
            "checkpoints": Checkpoint.objects.filter(session_id=session).count(),
            "globals": GlobalContextVersion.objects.filter(session_id=session).count()}


@pytest.mark.parametrize(("tool", "payload"), AUTHORED_WRITES,
                         ids=[t for t, _ in AUTHORED_WRITES])
def test_a_write_cannot_name_another_tokens_session(session, tool, payload):
    other = client_with(TokenScope.WRITE)
    arguments = payload(session, other)
    before = _trail(session)
    response = other.call(tool, arguments)
    assert (response.status, response.error_code) == (403, "E1604"), response.body
    assert response.body["error"]["details"] == {"sessionId": session, "tool": tool}
    assert _trail(session) == before
    assert TaskContext.objects.get(task_id="own-task").current_phase != "forged"


@pytest.mark.parametrize(("tool", "payload"), AUTHORED_WRITES,
                         ids=[t for t, _ in AUTHORED_WRITES])
def test_the_owner_and_an_admin_name_it(owner, session, tool, payload):
    owner.ok(tool, payload(session, owner))
    admin = client_with(TokenScope.ADMIN)
    arguments = payload(session, admin)
    if tool == "switch_task":  # back again
        arguments = {**arguments, "fromTaskId": "other-task", "toTaskId": "own-task"}
    admin.ok(tool, arguments)


def test_every_write_tool_naming_a_session_checks_its_owner():
    """No write tool takes a sessionId it does not create without the owner rule."""
    from foundation.core.tools import registry

    unchecked = [t.name for t in registry.tools() + registry.internal_tools()
                 if not t.read_only and "sessionId" in t.input_schema["properties"]
                 and "sessionId" not in t.creates and t.writes_session is None]
    assert unchecked == []


def test_crashed_session_ids_of_another_token_are_left_alone(session):
    other = client_with(TokenScope.WRITE)
    other.ok("start_session", {"crashedSessionIds": [session]})
    other.ok("check_recovery", {"crashedSessionIds": [session]})
    assert ActiveSession.objects.get(session_id=session).status == "active"
    admin = client_with(TokenScope.ADMIN)
    admin.ok("check_recovery", {"crashedSessionIds": [session]})
    assert ActiveSession.objects.get(session_id=session).status == "crashed"
