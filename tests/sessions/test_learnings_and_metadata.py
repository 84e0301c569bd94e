"""Issue 40 item 5 (seed 001 NE-S3, seed 002): end_session's learnings reach the WARM tier
of the project's next sessions' context bundles; a session records its agent kind,
workflow, skill and metadata; get_active_session answers the live session of an agent or
a workflow. Against the real Postgres, over the REST tool lane."""

from __future__ import annotations

import pytest

from bench.roundtrips import PostgresTrace
from contexts.models import ProjectLearning
from contexts.services.projects import create_project
from sessions.models import SessionDetail
from sessions.services import lifecycle
from tests.sessions.helpers import conforms

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def repositories(db):
    for key in ("repo", "elsewhere"):
        create_project(key, key.title())


def _warm(bundle: dict) -> str:
    return bundle["text"].split("### WARM")[1].split("### COLD")[0]


def test_learnings_reach_the_next_sessions_warm_tier(tools):
    tools.ok("create_task", {"taskId": "l1", "name": "Parser", "projectId": "repo"})
    tools.ok("create_task", {"taskId": "l2", "name": "Elsewhere",
                             "projectId": "elsewhere"})
    tools.ok("start_session", {"sessionId": "first", "taskId": "l1"})
    ended = conforms("end_session", tools.ok("end_session", {
        "sessionId": "first", "agentId": "claude",
        "learnings": ["  The parser tests need LANG=C  ", "Never run migrations on main"]}))
    assert ended["learningsRecorded"] == 2
    assert list(ProjectLearning.objects.filter(project_id="repo").order_by("id").values_list(
        "text", "session_id", "agent_id")) == [
        ("The parser tests need LANG=C", "first", "claude"),
        ("Never run migrations on main", "first", "claude")]

    # The next session of the project, on any of its tasks: newest first, in WARM.
    tools.ok("create_task", {"taskId": "l3", "name": "Lexer", "projectId": "repo"})
    started = tools.ok("start_session", {"sessionId": "next", "taskId": "l3",
                                         "contextBudgetTokens": 2000})
    warm = _warm(started["contextBundle"])
    assert warm.index("Never run migrations on main") < warm.index(
        "The parser tests need LANG=C")
    assert "- **Learning**: The parser tests need LANG=C" in warm
    # get_context_bundle carries them too; another project's sessions do not see them.
    assert "LANG=C" in tools.ok("get_context_bundle", {"taskId": "l1"})["text"]
    assert "LANG=C" not in tools.ok("get_context_bundle", {"taskId": "l2"})["text"]


def test_the_bundle_shows_the_ten_newest_learnings(tools):
    tools.ok("create_task", {"taskId": "many", "name": "Many", "projectId": "repo"})
    for n in range(3):
        tools.ok("start_session", {"sessionId": f"s{n}", "taskId": "many"})
        tools.ok("end_session", {"sessionId": f"s{n}",
                                 "learnings": [f"lesson {n}-{i}" for i in range(5)]})
    text = tools.ok("get_context_bundle", {"taskId": "many"})["text"]
    shown = [line for line in text.splitlines() if line.startswith("- **Learning**")]
    assert shown == [f"- **Learning**: lesson {n}-{i}" for n in (2, 1) for i in range(4, -1, -1)]
    assert ProjectLearning.objects.filter(project_id="repo").count() == 15  # all kept


@pytest.mark.parametrize("learnings,problem", [
    (["fine", ""], "minLength"),
    (["x" * 1001], "maxLength"),
    ([f"l{i}" for i in range(21)], "maxItems"),
    ("one string", "type"),
    ([42], "type"),
])
def test_bad_learnings_are_refused_and_nothing_is_written(tools, learnings, problem):
    tools.ok("start_session", {"sessionId": "bad", "projectId": "repo"})
    answer = tools.call("end_session", {"sessionId": "bad", "learnings": learnings})
    assert (answer.status, answer.error_code) == (400, "E1612"), answer.body
    assert not ProjectLearning.objects.exists()
    # The session was not ended either: the whole call was refused.
    assert tools.ok("heartbeat", {"sessionId": "bad"})["status"] == "active"


def test_a_blank_learning_is_refused_by_name(tools):
    tools.ok("start_session", {"sessionId": "blank", "projectId": "repo"})
    answer = tools.call("end_session", {"sessionId": "blank", "learnings": ["ok", "   "]})
    assert (answer.status, answer.error_code) == (400, "E1612")
    assert answer.body["error"]["details"] == {"field": "learnings[1]", "problem": "blank"}
    assert not ProjectLearning.objects.exists()
    assert tools.ok("heartbeat", {"sessionId": "blank"})["status"] == "active"


def test_learnings_of_a_session_that_is_not_live_are_not_kept(tools):
    tools.ok("start_session", {"sessionId": "done", "projectId": "repo"})
    tools.ok("end_session", {"sessionId": "done"})
    again = tools.call("end_session", {"sessionId": "done", "learnings": ["late"]})
    assert (again.status, again.error_code) == (409, "E1602")
    assert not ProjectLearning.objects.exists()


def test_end_session_with_learnings_is_still_one_round_trip(tools):
    for sid in ("warm", "a"):
        tools.ok("start_session", {"sessionId": sid, "projectId": "repo"})
    lifecycle.end_session("warm", summary="prepares the statements", learnings=["w"])
    trace = PostgresTrace()
    with trace.capture():
        body = lifecycle.end_session("a", summary="done", learnings=["one", "two"])
    assert trace.round_trips() == 1, trace.statements()
    assert body["learningsRecorded"] == 2


def test_start_session_records_agent_kind_workflow_skill_and_metadata(tools):
    body = conforms("start_session", tools.ok("start_session", {
        "sessionId": "meta", "projectId": "repo", "agentId": "codex-7",
        "agentKind": "codex", "workflow": "create-service",
        "skill": "backend-service-builder", "metadata": {"model": "o4", "ticket": 12}}))
    assert (body["agentKind"], body["workflow"], body["skill"], body["metadata"]) == (
        "codex", "create-service", "backend-service-builder", {"model": "o4", "ticket": 12})
    detail = SessionDetail.objects.get(session_id="meta")
    assert (detail.agent_kind, detail.workflow, detail.skill, detail.metadata) == (
        "codex", "create-service", "backend-service-builder", {"model": "o4", "ticket": 12})
    plain = tools.ok("start_session", {"sessionId": "plain", "projectId": "repo"})
    assert (plain["agentKind"], plain["workflow"], plain["metadata"]) == (None, None, {})


@pytest.mark.parametrize("arguments,field", [
    ({"agentKind": "claude code"}, "agentKind"),  # outside the pattern
    ({"agentKind": "k" * 65}, "agentKind"),
    ({"agentKind": ""}, "agentKind"),
    ({"workflow": "w" * 201}, "workflow"),
    ({"skill": ""}, "skill"),
    ({"metadata": ["not", "an", "object"]}, "metadata"),
    ({"metadata": {f"k{i}": i for i in range(51)}}, "metadata"),
    ({"metadata": {"blob": "x" * 4100}}, "metadata"),  # over 4,096 bytes of JSON
])
def test_bad_session_metadata_is_refused_and_no_session_is_made(tools, arguments, field):
    answer = tools.call("start_session", {"sessionId": "refused", "projectId": "repo",
                                          **arguments})
    assert (answer.status, answer.error_code) == (400, "E1612"), answer.body
    assert field in str(answer.body["error"]["details"])
    assert not SessionDetail.objects.filter(session_id="refused").exists()


def test_get_active_session_by_agent_kind_agent_or_workflow(tools):
    tools.ok("start_session", {"sessionId": "old-claude", "projectId": "repo",
                               "agentKind": "claude-code", "agentId": "alice",
                               "workflow": "review"})
    tools.ok("start_session", {"sessionId": "new-claude", "projectId": "repo",
                               "agentKind": "claude-code", "agentId": "bob",
                               "workflow": "write-migration", "skill": "sql",
                               "metadata": {"pr": 7}})
    tools.ok("start_session", {"sessionId": "gemini", "projectId": "elsewhere",
                               "agentKind": "gemini", "workflow": "review"})
    tools.ok("start_session", {"sessionId": "ended", "projectId": "repo",
                               "agentKind": "codex"})
    tools.ok("end_session", {"sessionId": "ended"})

    newest = conforms("get_active_session",
                      tools.ok("get_active_session", {"agentKind": "claude-code"}))
    assert (newest["found"], newest["liveCount"]) == (True, 2)
    assert newest["session"]["sessionId"] == "new-claude"
    assert newest["session"]["metadata"] == {"pr": 7}
    assert newest["session"]["paused"] is False
    assert tools.ok("get_active_session", {"agentId": "alice"})["session"][
        "sessionId"] == "old-claude"
    # Every criterion given must match; projectId narrows.
    both = tools.ok("get_active_session", {"workflow": "review"})
    assert both["liveCount"] == 2
    assert tools.ok("get_active_session", {"workflow": "review", "projectId": "elsewhere"}
                    )["session"]["sessionId"] == "gemini"
    assert tools.ok("get_active_session", {"workflow": "write-migration", "skill": "sql"}
                    )["session"]["sessionId"] == "new-claude"
    # An ended session is not live; nothing found is an answer, not an error.
    none = conforms("get_active_session", tools.ok("get_active_session", {"agentKind": "codex"}))
    assert none == {"success": True, "found": False, "session": None, "liveCount": 0}
    # A paused session is still live, and says so.
    tools.ok("pause_session", {"sessionId": "new-claude", "reason": "usage_limit"})
    assert tools.ok("get_active_session", {"agentId": "bob"})["session"]["paused"] is True


def test_get_active_session_needs_an_agent_or_a_workflow(tools):
    for arguments in ({}, {"skill": "sql"}, {"projectId": "repo"}):
        answer = tools.call("get_active_session", arguments)
        assert (answer.status, answer.error_code) == (400, "E1612"), answer.body
    bad = tools.call("get_active_session", {"agentKind": "no spaces"})
    assert (bad.status, bad.error_code) == (400, "E1612")
