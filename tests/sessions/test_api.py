"""REST browsing of sessions, events (cursor pages) and tool history."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_sessions_list_filters_and_detail(tools):
    tools.ok("start_session", {"sessionId": "s1", "projectDir": "/a"})
    tools.ok("start_session", {"sessionId": "s2", "projectDir": "/b"})
    tools.ok("end_session", {"sessionId": "s2"})
    listed = tools.get("/api/v1/sessions/", status="active")
    assert listed.status == 200
    assert [s["sessionId"] for s in listed.body["results"]] == ["s1"]
    detail = tools.get("/api/v1/sessions/s2/")
    assert detail.body["status"] == "ended" and detail.body["projectDir"] == "/b"
    assert tools.get("/api/v1/sessions/ghost/").status == 404


def test_sessions_list_says_which_agent_runs_each(tools):
    tools.ok("start_session", {"sessionId": "cx", "agentId": "codex", "agentKind": "codex"})
    tools.ok("start_session", {"sessionId": "bare"})
    listed = tools.get("/api/v1/sessions/", ordering="started_at").body["results"]
    assert [(s["sessionId"], s["agentId"], s["agentKind"]) for s in listed] == [
        ("cx", "codex", "codex"), ("bare", None, None)]
    detail = tools.get("/api/v1/sessions/cx/").body
    assert (detail["agentId"], detail["agentKind"]) == ("codex", "codex")


def test_events_are_cursor_paginated_in_sequence_order(tools):
    tools.ok("start_session", {"sessionId": "s1"})
    for n in range(5):
        tools.ok("append_session_event", {"sessionId": "s1", "type": "user_message",
                                          "role": "user", "content": f"m{n}"})
    first = tools.get("/api/v1/sessions/s1/events/", limit=3)
    assert [e["sequence"] for e in first.body["results"]] == [1, 2, 3]
    cursor = first.body["next"].split("cursor=")[1].split("&")[0]
    second = tools.get("/api/v1/sessions/s1/events/", limit=3, cursor=cursor)
    assert [e["sequence"] for e in second.body["results"]] == [4, 5]
    assert second.body["next"] is None
    history = tools.get("/api/v1/sessions/s1/tool-history/")
    assert [h["tool"] for h in history.body["results"]][0] == "append_session_event"
    assert len(history.body["results"]) == 6


def test_handoffs_listing(tools):
    tools.ok("start_session", {"sessionId": "s1", "projectDir": "/a"})
    tools.ok("end_session", {"sessionId": "s1", "summary": "note"})
    body = tools.get("/api/v1/handoffs/", active="true").body
    assert [h["summary"] for h in body["results"]] == ["note"]
