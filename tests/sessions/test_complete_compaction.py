"""complete_compaction (seed 004 Resume Phase, issue 22 item 6): any client reports a
compaction finished; compaction_complete carries the number and full_reload."""

from __future__ import annotations

import pytest

from tests.sessions.helpers import conforms, status_of


def completions(tools, session_id: str) -> list[dict]:
    return [e["parts"] for e in tools.ok("get_recent_session_events",
                                         {"sessionId": session_id})["events"]
            if e["content"] == "compaction_complete"]


@pytest.mark.django_db
def test_completing_a_reported_compaction_ends_its_recovery(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1"})
    tools.ok("report_compaction", {"sessionId": "s1"})
    tools.ok("report_compaction", {"sessionId": "s1"})
    assert status_of("s1") == ("compacted", True, "compaction")
    done = conforms("complete_compaction", tools.ok("complete_compaction", {
        "sessionId": "s1", "summary": "kept the parser plan", "trigger": "auto"}))
    assert (done["compactionNumber"], done["fullReload"], done["alreadyCompleted"],
            done["status"]) == (2, True, False, "active")
    assert status_of("s1") == ("active", False, "compaction")
    assert tools.ok("check_recovery", {})["sessions"] == []
    (parts,) = completions(tools, "s1")
    assert {"event": "compaction_complete", "compaction_number": 2, "full_reload": True,
            "trigger": "auto", "compactSummary": "kept the parser plan"}.items() <= \
        parts.items()
    # A resent call (the hook's spool) changes nothing.
    again = tools.ok("complete_compaction", {"sessionId": "s1", "compactionNumber": 2})
    assert again["alreadyCompleted"] is True and len(completions(tools, "s1")) == 1


@pytest.mark.django_db
def test_a_client_without_report_compaction_counts_its_compactions(tools):
    tools.ok("start_session", {"sessionId": "plain"})
    first = tools.ok("complete_compaction", {"sessionId": "plain"})
    second = tools.ok("complete_compaction", {"sessionId": "plain", "fullReload": False})
    assert [(a["compactionNumber"], a["fullReload"]) for a in (first, second)] == \
        [(1, False), (2, False)]
    assert [p["full_reload"] for p in completions(tools, "plain")] == [False, False]
    assert tools.ok("report_compaction", {"sessionId": "plain"})["compactionNumber"] == 3
    assert tools.ok("complete_compaction", {"sessionId": "plain"})["compactionNumber"] == 3


@pytest.mark.django_db
def test_complete_compaction_refusals(tools):
    assert tools.call("complete_compaction", {"sessionId": "ghost"}).error_code == "E1600"
    tools.ok("start_session", {"sessionId": "s1"})
    assert tools.call("complete_compaction", {"sessionId": "s1",
                                              "compactionNumber": 5}).error_code == "E1612"
    tools.ok("end_session", {"sessionId": "s1"})
    assert tools.call("complete_compaction", {"sessionId": "s1"}).error_code == "E1602"
