"""The home page's agent board and "needs you" queue, through its JSON feed and its action
endpoint (the browser's view of the same day is tests/browser/test_board.py): each
session's judged state, the queue's items, every action a tool call recorded under the
person's name, and bad input refused with the spec's code."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from claims.models import FileClaim
from conflicts.models import ContextConflict
from locks import services as locks
from sessions.models import ActiveSession, SessionDetail
from tests.browser.board_day import seed

pytestmark = pytest.mark.django_db

BOARD = "console_board"
ACT = "console_board_act"


@pytest.fixture
def day(tools):
    return seed(tools)


def board(client) -> dict:
    response = client.get(reverse(BOARD))
    assert response.status_code == 200
    return response.json()


def act(client, body) -> tuple[int, dict]:
    response = client.post(reverse(ACT), data=json.dumps(body),
                           content_type="application/json")
    return response.status_code, response.json()


def test_each_session_shows_its_judged_state(admin_client, day):
    data = board(admin_client)
    states = {row["sessionId"]: row["state"] for row in data["rows"]}
    assert states == day
    rows = {row["sessionId"]: row for row in data["rows"]}
    # Paused: never live, and its silence is not held against it.
    assert rows["s-eve"]["heartbeatLevel"] == "none" and "Paused" in rows["s-eve"]["stateText"]
    assert rows["s-di"]["heartbeatLevel"] == "late" and rows["s-ada"]["heartbeatLevel"] == "ok"
    assert rows["s-hal"]["heartbeatLevel"] == "overdue"
    # Names before ids: the agent, the task's name, the file and tool it is on now.
    ada = rows["s-ada"]
    assert (ada["agentId"], ada["taskName"], ada["projectName"]) == \
        ("claude-ada", "Checkout flow", "Web shop")
    assert ada["file"]["path"] == "src/checkout/cart.ts"
    assert ada["tool"]["tool"] == "save_context_snapshot"
    assert data["counts"] == {"live": 5, "late": 1, "overdue": 0, "paused": 2, "crashed": 1,
                              "ended": 1, "recovered": 0}
    assert data["total"] == len(data["rows"]) == 10


def test_the_queue_lists_what_needs_a_person_oldest_first(admin_client, day):
    data = board(admin_client)
    kinds = {}
    for item in data["queue"]:
        kinds.setdefault(item["kind"], []).append(item)
    assert [i["sessionId"] for i in kinds["crashed"]] == ["s-hal"]
    assert {i["severity"] for i in kinds["conflict"]} >= {"critical", "high"}
    assert len(kinds["conflict"]) == ContextConflict.objects.filter(
        resolution_status="unresolved").count()
    assert [(i["sessionId"], i["path"]) for i in kinds["blocked"]] == \
        [("s-ivy", "src/ui/Button.tsx")]
    assert [i["taskId"] for i in kinds["lock"]] == ["billing-refunds"]  # the crashed agent's
    assert [i["path"] for i in kinds["contested"]] == ["src/checkout/cart.ts"]
    assert [i["sessionId"] for i in kinds["paused"]] == ["s-fay"]
    assert data["needsYouCount"] == len(data["queue"]) == sum(data["queueCounts"].values())
    since = [i["since"] for i in data["queue"]]
    assert since == sorted(since)
    # Live agents are not in the queue as crashed.
    assert not {i.get("sessionId") for i in kinds["crashed"]} & {"s-ada", "s-bo", "s-cy"}


def test_the_copy_button_reads_the_resume_prompt_of_a_crashed_session(admin_client, day):
    url = reverse("console_board_prompt")
    answer = admin_client.get(url, {"sessionId": "s-hal"}).json()
    assert answer["success"] and "billing-refunds" in answer["prompt"]
    live = admin_client.get(url, {"sessionId": "s-ada"})  # needs no recovery: no prompt
    assert (live.status_code, live.json()["error"]["code"]) == (404, "E1600")
    missing = admin_client.get(url)
    assert (missing.status_code, missing.json()["error"]["code"]) == (400, "E1612")


def test_the_board_agrees_with_the_overview(admin_client, day):
    data, overview = board(admin_client), admin_client.get(reverse("console_overview")).json()
    assert data["counts"]["crashed"] == overview["recoveryCount"]
    live = sum(data["counts"][state] for state in ("live", "late", "overdue", "paused"))
    assert live == overview["activeSessionCount"]
    assert data["queueCounts"]["conflict"] == overview["conflicts"]["unresolvedTotal"]
    assert data["queueCounts"]["contested"] == overview["fileClaims"]["contestedFiles"]


def audit(user: str) -> list[str]:
    return list(LogEntry.objects.filter(user__username=user).order_by("action_time")
                .values_list("change_message", flat=True))


def test_every_action_is_a_tool_call_recorded_under_the_operators_name(admin_client, day):
    data = board(admin_client)
    by_kind = {item["kind"]: item for item in data["queue"]}
    conflict = next(i for i in data["queue"] if i["kind"] == "conflict"
                    and i["severity"] == "critical")
    steps = [
        {"action": "mark_recovered", "sessionId": "s-hal"},
        {"action": "resolve", "conflictId": conflict["conflictId"], "resolution": "use_a"},
        {"action": "release_claim", "sessionId": "s-jo", "path": "src/ui/Button.tsx"},
        {"action": "release_lock", "taskId": "billing-refunds", "sessionId": "s-hal"},
        {"action": "release_claim", "sessionId": "s-bo", "path": "src/checkout/cart.ts"},
        {"action": "resume", "sessionId": "s-fay"},
    ]
    for body in steps:
        status, answer = act(admin_client, body)
        assert (status, answer["success"]) == (200, True), (body, answer)
    assert ActiveSession.objects.get(session_id="s-hal").recovery_needed is False
    resolved = ContextConflict.objects.get(pk=conflict["conflictId"])
    assert (resolved.resolution_status, resolved.resolved_by) == ("resolved", "admin")
    assert FileClaim.objects.get(session_id="s-jo").released_at is not None
    assert locks.current_lock("billing-refunds") is None
    assert SessionDetail.objects.get(session_id="s-fay").paused_at is None
    messages = audit("admin")
    assert len(messages) == len(steps)
    assert all(m.startswith("Needs-you queue: ") for m in messages)
    assert "marked recovered" in messages[0] and "use_a" in messages[1]

    after = board(admin_client)
    left = {item["key"] for item in after["queue"]}
    for kind in ("crashed", "blocked", "lock", "contested", "paused"):
        assert by_kind[kind]["key"] not in left, kind
    assert conflict["key"] not in left
    states = {row["sessionId"]: row["state"] for row in after["rows"]}
    # Resumed, s-fay is judged by its heartbeat again: it sent none for 15 min, overdue.
    assert states["s-hal"] == "recovered" and states["s-fay"] == "overdue"


@pytest.mark.parametrize("body, code, status", [
    ("not json", "E1612", 400),
    ([1, 2], "E1612", 400),
    ({"action": "explode"}, "E1612", 400),
    ({"action": "mark_recovered"}, "E1612", 400),
    ({"action": "resolve", "conflictId": "00000000-0000-0000-0000-000000000000",
      "resolution": "use_c"}, "E1612", 400),
    ({"action": "resolve", "conflictId": "00000000-0000-0000-0000-000000000000",
      "resolution": "use_a"}, "E1642", 404),
    ({"action": "resume", "sessionId": "nobody"}, "E1600", 404),
    ({"action": "release_claim", "sessionId": "nobody", "path": "a.py"}, "E1600", 404),
])
def test_bad_actions_are_refused_with_the_spec_code_and_change_nothing(admin_client, tools,
                                                                        body, code, status):
    raw = body if isinstance(body, str) else json.dumps(body)
    response = admin_client.post(reverse(ACT), data=raw, content_type="application/json")
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert not LogEntry.objects.exists()


def test_a_person_without_the_permission_sees_the_board_but_may_not_act(client, day):
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_activesession"))
    client.force_login(viewer)
    assert board(client)["needsYouCount"] > 0
    status, answer = act(client, {"action": "mark_recovered", "sessionId": "s-hal"})
    assert (status, answer["error"]["code"]) == (403, "E1608")
    assert ActiveSession.objects.get(session_id="s-hal").recovery_needed is True


def test_the_feed_needs_a_console_login(client):
    response = client.get(reverse(BOARD))
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.post(reverse(ACT), data="{}", content_type="application/json"
                       ).status_code == 302


def test_the_home_page_carries_the_count_in_its_title(admin_client, day):
    page = admin_client.get(reverse("admin:index")).content.decode()
    count = board(admin_client)["needsYouCount"]
    assert f"<title>({count}) " in page
    assert 'id="agent-board"' in page and 'id="board-data"' in page
