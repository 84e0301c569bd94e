"""Event log and scratchpad (seed 002): sequences, immutability, windows, merge patches."""

from __future__ import annotations

import threading

import pytest
from django.db import DatabaseError, connection, transaction

from sessions.models import SessionEvent
from sessions.services import events


def _events_for(session_id: str) -> list[int]:
    return list(SessionEvent.objects.filter(session_id=session_id)
                .order_by("sequence").values_list("sequence", flat=True))


@pytest.mark.django_db(transaction=True)
def test_16_threads_x_100_appends_give_1_to_1600(tools):
    tools.ok("start_session", {"sessionId": "busy"})
    failures: list[BaseException] = []
    barrier = threading.Barrier(16)

    def worker(n: int) -> None:
        barrier.wait()
        try:
            for i in range(100):
                events.append_event("busy", "tool_call", "tool", f"{n}-{i}")
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert _events_for("busy") == list(range(1, 1601))


@pytest.mark.django_db
def test_events_are_immutable_in_the_database(tools):
    tools.ok("start_session", {"sessionId": "s1"})
    tools.ok("append_session_event", {"sessionId": "s1", "type": "user_message",
                                      "role": "user", "content": "hello"})
    for sql in ("UPDATE agent_sessions_sessionevent SET content = 'x'",
                "DELETE FROM agent_sessions_sessionevent"):
        with pytest.raises(DatabaseError, match="immutable"), transaction.atomic(), \
                connection.cursor() as cursor:
            cursor.execute(sql)
    assert SessionEvent.objects.get(session_id="s1").content == "hello"


@pytest.mark.django_db
def test_append_refusals(tools):
    assert tools.call("append_session_event", {"sessionId": "ghost", "type": "user_message",
                                               "role": "user", "content": "x"}
                      ).error_code == "E1600"
    tools.ok("start_session", {"sessionId": "s1"})
    bad = tools.call("append_session_event", {"sessionId": "s1", "type": "chat",
                                              "role": "user", "content": "x"})
    assert (bad.status, bad.error_code) == (400, "E1612")
    tools.ok("end_session", {"sessionId": "s1"})
    ended = tools.call("append_session_event", {"sessionId": "s1", "type": "user_message",
                                                "role": "user", "content": "x"})
    assert (ended.status, ended.error_code) == (409, "E1602")


@pytest.mark.django_db
def test_several_sessions_events_in_one_statement_follow_each_sessions_sequence(tools):
    """append_events: each event as append_event would append it, in the order given; an
    ended or unknown session's is skipped (False) without failing the others' or the
    caller's transaction, and gives no number away."""
    for session in ("s1", "s2", "done"):
        tools.ok("start_session", {"sessionId": session})
    events.append_event("s1", "user_message", "user", "first")
    tools.ok("end_session", {"sessionId": "done"})
    before = _events_for("done")
    with transaction.atomic():
        appended = events.append_events([
            ("s1", "system_event", "system", "a", {"n": 1}),
            ("done", "system_event", "system", "b", None),
            ("s2", "system_event", "system", "c", {"n": 2}),
            ("ghost", "system_event", "system", "d", None),
            ("s1", "system_event", "system", "e", {"n": 3})])
        assert appended == [True, False, True, False, True]
        events.append_event("s2", "user_message", "user", "still usable")
    rows = {s: list(SessionEvent.objects.filter(session_id=s).order_by("sequence")
                    .values_list("sequence", "content", "parts"))
            for s in ("s1", "s2")}
    assert rows["s1"][1:] == [(2, "a", {"n": 1}), (3, "e", {"n": 3})]
    assert rows["s2"] == [(1, "c", {"n": 2}), (2, "still usable", None)]
    assert _events_for("done") == before
    assert events.append_events([]) == []


@pytest.mark.django_db(transaction=True)
def test_an_append_waiting_on_an_ending_session_is_refused_and_leaves_no_gap(tools):
    """end_session holds the session's row lock; an append that waited for it must see the
    end (E1602), add nothing, and give its sequence number back."""
    from django.db import connections

    from foundation.core.errors import OrchestratorError
    from sessions.models import SessionDetail
    from sessions.services.common import DETAIL_TABLE, sessions_table

    tools.ok("start_session", {"sessionId": "ending"})
    events.append_event("ending", "user_message", "user", "first")
    locked, outcome = threading.Event(), {}

    def ender() -> None:
        with transaction.atomic(), connection.cursor() as cursor:  # what end_session does
            cursor.execute(f"SELECT 1 FROM {DETAIL_TABLE} WHERE session_id = 'ending' "
                           "FOR UPDATE")
            cursor.execute(f"UPDATE {sessions_table()} SET status = 'ended' "
                           "WHERE session_id = 'ending'")
            locked.set()
            threading.Event().wait(0.5)  # the append is now waiting on the lock
        connection.close()

    def appender() -> None:
        locked.wait()
        try:
            events.append_event("ending", "user_message", "user", "too late")
        except OrchestratorError as exc:
            outcome["code"] = exc.code
        finally:
            connections["default"].close()

    threads = [threading.Thread(target=ender), threading.Thread(target=appender)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcome == {"code": "E1602"}
    assert _events_for("ending") == [1]
    assert SessionDetail.objects.get(session_id="ending").event_count == 1


@pytest.mark.django_db
def test_recent_events_by_turns_and_tokens(tools):
    tools.ok("start_session", {"sessionId": "s1"})
    for turn in range(5):
        tools.ok("append_session_event", {"sessionId": "s1", "type": "user_message",
                                          "role": "user", "content": f"question {turn}"})
        tools.ok("append_session_event", {"sessionId": "s1", "type": "model_message",
                                          "role": "assistant", "content": "x" * 400,
                                          "parts": {"turn": turn}})
    two = tools.ok("get_recent_session_events", {"sessionId": "s1", "maxTurns": 2})
    assert [e["sequence"] for e in two["events"]] == [7, 8, 9, 10]
    assert two["events"][0]["content"] == "question 3"
    budget = tools.ok("get_recent_session_events", {"sessionId": "s1", "maxTurns": 5,
                                                    "maxTokens": 250})
    assert budget["truncated"] is True and budget["estimatedTokens"] <= 250
    assert [e["sequence"] for e in budget["events"]] == [9, 10]
    everything = tools.ok("get_recent_session_events", {"sessionId": "s1", "maxTurns": 100})
    assert everything["count"] == 10 and everything["truncated"] is False


@pytest.mark.django_db
def test_scratchpad_merge_patch(tools):
    tools.ok("start_session", {"sessionId": "s1"})
    assert tools.ok("get_session_scratchpad", {"sessionId": "s1"})["scratchpad"] == {}
    tools.ok("update_session_scratchpad", {"sessionId": "s1", "patch": {
        "current_task": "t1", "files_in_progress": ["a.py"], "handoff_context": {
            "from_chatmode": "architect", "key_decisions": ["pg"]}}})
    body = tools.ok("update_session_scratchpad", {"sessionId": "s1", "patch": {
        "current_task": None, "files_in_progress": ["b.py"],
        "handoff_context": {"from_chatmode": None, "artifacts_created": ["x"]}}})
    assert body["scratchpad"] == {"files_in_progress": ["b.py"], "handoff_context": {
        "key_decisions": ["pg"], "artifacts_created": ["x"]}}
    assert tools.ok("get_session_scratchpad", {"sessionId": "s1"})["scratchpad"] == \
        body["scratchpad"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_scratchpad_updates_lose_nothing(tools):
    tools.ok("start_session", {"sessionId": "s1"})

    def worker(n: int) -> None:
        try:
            for i in range(10):
                events.update_scratchpad("s1", {f"k{n}-{i}": i})
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(events.get_scratchpad("s1")["scratchpad"]) == 80


def test_merge_patch_rfc7396_examples():
    assert events.merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert events.merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert events.merge_patch({"a": "b"}, {"a": None}) == {}
    assert events.merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert events.merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert events.merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}
