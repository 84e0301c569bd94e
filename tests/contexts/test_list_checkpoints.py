"""list_checkpoints (seed 003: checkpoint listing with pagination; issue 22 item 2): newest
first with the total, filtered by task, session, label and project, ``latest`` (the
session's last checkpoint after a crash), sizes, errors and tokens limited to projects."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import call_command
from django.db import connection

from contexts.models import Checkpoint
from foundation.core.db import qualified
from foundation.core.models import ApiToken
from tests.conftest import ToolClient
from tests.sessions.helpers import conforms

pytestmark = pytest.mark.django_db


def checkpoint(tools, label: str, **args) -> str:
    # One test is one transaction, where now() (created_at) stands still: the order is then
    # the ids' (cp-<milliseconds>-...), so keep them a millisecond apart.
    time.sleep(0.002)
    return tools.ok("create_checkpoint", {"label": label, **args})["checkpointId"]


def ids(answer) -> list[str]:
    return [c["checkpointId"] for c in answer["checkpoints"]]


def test_newest_first_with_total_and_pages(tools, make_task):
    make_task("lc-a")
    made = [checkpoint(tools, f"step {i}", taskId="lc-a") for i in range(5)]
    first = tools.ok("list_checkpoints", {"taskId": "lc-a", "limit": 2})
    assert ids(first) == made[::-1][:2]
    assert first["total"] == 5 and first["limit"] == 2 and first["offset"] == 0
    second = tools.ok("list_checkpoints", {"taskId": "lc-a", "limit": 2, "offset": 2})
    last = tools.ok("list_checkpoints", {"taskId": "lc-a", "limit": 2, "offset": 4})
    beyond = tools.ok("list_checkpoints", {"taskId": "lc-a", "offset": 10})
    assert ids(second) == made[::-1][2:4] and ids(last) == [made[0]]
    assert (second["total"], last["total"], beyond["total"]) == (5, 5, 5)
    assert beyond["checkpoints"] == []
    # latest is the newest match whatever the page.
    assert {a["latest"]["checkpointId"] for a in (first, second, last, beyond)} == {made[-1]}
    assert tools.ok("list_checkpoints", {"taskId": "lc-a"})["total"] == 5  # default 20


def test_an_entry_has_what_rollback_needs_and_its_size(tools, make_task):
    make_task("lc-b", immediateContext={"notes": "x" * 3000})
    made = checkpoint(tools, "before refactor", taskId="lc-b", description="safe point",
                      checkpointType="milestone", sessionId="lc-session")
    entry = tools.ok("list_checkpoints", {"taskId": "lc-b"})["checkpoints"][0]
    stored = Checkpoint.objects.get(checkpoint_id=made)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT octet_length(snapshot::text), pg_column_size(snapshot) "
                       f"FROM {qualified('checkpoints')} WHERE checkpoint_id = %s", [made])
        size, stored_bytes = cursor.fetchone()
    assert entry == {
        "checkpointId": made, "projectId": stored.project_id, "label": "before refactor",
        "description": "safe point", "checkpointType": "milestone", "taskId": "lc-b",
        "scope": "task", "includedTasks": ["lc-b"], "createdBy": entry["createdBy"],
        "sessionId": "lc-session", "createdAt": entry["createdAt"], "size": size,
        "originalSize": stored.snapshot["originalSize"], "storedBytes": stored_bytes,
        "hash": stored.snapshot["checksum"], "status": "active", "tags": [],
        "agentId": None}
    # Plain JSON: the content plus its checksum, digest and headline; Postgres compresses
    # what it stores.
    assert 0 < entry["originalSize"] < entry["size"]
    assert entry["hash"].startswith("sha256:")
    restored = tools.ok("rollback_to", {"taskId": "lc-b", "target": {
        "type": "checkpoint", "checkpointId": entry["checkpointId"]}})
    assert restored["success"] is True


def test_filters_by_task_including_multi_task_checkpoints_label_and_session(tools, make_task):
    make_task("lc-c")
    make_task("lc-d")
    own = checkpoint(tools, "own", taskId="lc-c", sessionId="lc-s1")
    both = checkpoint(tools, "both", includeTasks=["lc-d", "lc-c"])
    other = checkpoint(tools, "own", taskId="lc-d", sessionId="lc-s2")
    glob = checkpoint(tools, "global one", sessionId="lc-s1")
    assert ids(tools.ok("list_checkpoints", {"taskId": "lc-c"})) == [both, own]
    assert ids(tools.ok("list_checkpoints", {"taskId": "lc-d"})) == [other, both]
    assert ids(tools.ok("list_checkpoints", {"label": "own"})) == [other, own]
    assert ids(tools.ok("list_checkpoints", {"label": "own", "taskId": "lc-c"})) == [own]
    session = tools.ok("list_checkpoints", {"sessionId": "lc-s1"})
    assert ids(session) == [glob, own] and session["latest"]["checkpointId"] == glob
    assert ids(tools.ok("list_checkpoints", {})) == [glob, other, both, own]
    none = tools.ok("list_checkpoints", {"label": "nothing like it"})
    assert none == {**none, "checkpoints": [], "total": 0, "latest": None}


def test_a_sessions_latest_checkpoint_after_a_crash(tools, make_task):
    make_task("lc-e")
    session = tools.ok("start_session", {"taskId": "lc-e"})["sessionId"]
    assert tools.ok("list_checkpoints", {"sessionId": session})["latest"] is None
    checkpoint(tools, "first", taskId="lc-e", sessionId=session)
    last = checkpoint(tools, "second", taskId="lc-e", sessionId=session)
    tools.ok("save_context_snapshot", {"taskId": "lc-e", "sessionId": session,
                                       "updates": {"currentPhase": "broken"}})
    latest = tools.ok("list_checkpoints", {"sessionId": session, "limit": 1})["latest"]
    assert latest["checkpointId"] == last
    tools.ok("rollback_to", {"taskId": "lc-e", "sessionId": session, "target": {
        "type": "checkpoint", "checkpointId": latest["checkpointId"]}})
    # The rollback's own backup is the session's latest now.
    after = tools.ok("list_checkpoints", {"sessionId": session})
    assert after["total"] == 3 and after["latest"]["checkpointType"] == "auto"


def test_errors(tools, make_task):
    make_task("lc-f")
    assert tools.call("list_checkpoints", {"taskId": "nope"}).error_code == "E1610"
    assert tools.call("list_checkpoints", {"sessionId": "nope"}).error_code == "E1600"
    for bad in ({"limit": 0}, {"limit": 101}, {"offset": -1}, {"limit": 2.0},
                {"label": ""}, {"taskId": "../x"}):
        response = tools.call("list_checkpoints", bad)
        assert (response.status, response.error_code) == (400, "E1612"), bad
    # A session that is gone still lists the checkpoints it made.
    checkpoint(tools, "orphan", taskId="lc-f", sessionId="lc-gone")
    assert tools.ok("list_checkpoints", {"sessionId": "lc-gone"})["total"] == 1


def test_a_token_limited_to_projects_sees_only_its_checkpoints(tools, make_task):
    for project in ("lc-one", "lc-two"):
        tools.ok("create_project", {"projectId": project, "name": project})
    make_task("lc-1", projectId="lc-one")
    make_task("lc-2", projectId="lc-two")
    mine = checkpoint(tools, "mine", taskId="lc-1")
    theirs = checkpoint(tools, "theirs", taskId="lc-2", sessionId="lc-two-session")
    checkpoint(tools, "default project's")
    _, raw = ApiToken.issue(f"lc-limited-{time.monotonic_ns()}", "read", ["lc-one"])
    client = ToolClient(raw)
    assert ids(client.ok("list_checkpoints", {})) == [mine]
    assert ids(client.ok("list_checkpoints", {"taskId": "lc-1"})) == [mine]
    # Another project's task is as missing as a task that does not exist.
    foreign = client.call("list_checkpoints", {"taskId": "lc-2"})
    assert (foreign.status, foreign.error_code) == (404, "E1610")
    assert client.call("list_checkpoints", {"projectId": "lc-two"}).error_code == "E1608"
    # A label or session filter never reaches past the token's projects.
    assert client.ok("list_checkpoints", {"label": "theirs"})["total"] == 0
    assert client.call("list_checkpoints",
                       {"sessionId": "lc-two-session"}).error_code == "E1600"
    # An unrestricted caller sees every project; projectId narrows.
    assert theirs in ids(tools.ok("list_checkpoints", {}))
    assert ids(tools.ok("list_checkpoints", {"projectId": "lc-two"})) == [theirs]


def test_an_entry_shows_tags_agent_and_status(tools, make_task):
    """Seed 003 §3.2: what an operator needs to trust a checkpoint. The agent is the one
    named, else the session's; the periodic check's verdict is the status."""
    make_task("lc-t")
    tools.ok("start_session", {"sessionId": "lc-agent-session", "agentId": "claude-7"})
    named = checkpoint(tools, "named", taskId="lc-t", tags=["pre-merge", "green"],
                       agentId="codex-2")
    by_session = checkpoint(tools, "by session", taskId="lc-t", sessionId="lc-agent-session")
    plain = checkpoint(tools, "plain", taskId="lc-t")
    listed = {c["checkpointId"]: c for c in
              tools.ok("list_checkpoints", {"taskId": "lc-t"})["checkpoints"]}
    assert (listed[named]["tags"], listed[named]["agentId"]) == (["pre-merge", "green"],
                                                                 "codex-2")
    assert (listed[by_session]["tags"], listed[by_session]["agentId"]) == ([], "claude-7")
    assert listed[plain]["agentId"] is None
    assert {c["status"] for c in listed.values()} == {"active"}
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {qualified('checkpoints')} SET snapshot = jsonb_set(snapshot, "
                       "'{tasks,lc-t,name}', '\"forged\"') WHERE checkpoint_id = %s", [plain])
    call_command("check_checkpoints", stdout=(out := io.StringIO()))
    assert f"corrupt: {plain}" in out.getvalue()
    answer = conforms("list_checkpoints", tools.ok("list_checkpoints", {"taskId": "lc-t"}))
    listed = {c["checkpointId"]: c for c in answer["checkpoints"]}
    assert [listed[c]["status"] for c in (named, by_session, plain)] == [
        "active", "active", "corrupt"]
