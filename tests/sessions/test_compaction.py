"""report_compaction (seed 004): the count, a full plan reload due every second compaction,
the compacted session in check_recovery, the context bundle it carries; refusals."""

from __future__ import annotations

import pytest

from foundation.backends import files
from tests.sessions.helpers import conforms, status_of


@pytest.mark.django_db
def test_compaction_counts_and_full_reload_every_second_time(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1"})
    first = tools.ok("report_compaction", {"sessionId": "s1", "trigger": "auto",
                                           "conversationSummary": "phase one done"})
    assert (first["compactionNumber"], first["fullReloadDue"]) == (1, False)
    assert "## Recovery Required: compaction" in first["resumePrompt"]
    assert "the next one requires a full plan reload" in first["resumePrompt"]
    assert status_of("s1") == ("compacted", True, "compaction")
    tools.ok("heartbeat", {"sessionId": "s1"})  # the process lives on
    second = tools.ok("report_compaction", {"sessionId": "s1", "trigger": "manual"})
    assert (second["compactionNumber"], second["fullReloadDue"]) == (2, True)
    assert "Full plan reload due (compaction #2)" in second["resumePrompt"]
    report = tools.ok("check_recovery", {})
    entry = report["sessions"][0]
    assert (entry["recoveryType"], entry["compactionCount"], entry["fullReloadDue"]) == \
        ("compaction", 2, True)
    from sessions.models import ActiveSession
    snapshot = ActiveSession.objects.get(session_id="s1").context_snapshot
    assert snapshot["compactionNumber"] == 2 and snapshot["task"]["task_id"] == "t1"
    assert snapshot["conversationSummary"] == "phase one done"
    tools.ok("check_recovery", {"markRecovered": "s1"})
    assert status_of("s1") == ("active", False, "compaction")
    third = tools.ok("report_compaction", {"sessionId": "s1"})
    assert (third["compactionNumber"], third["fullReloadDue"]) == (3, False)
    events = tools.ok("get_recent_session_events", {"sessionId": "s1"})["events"]
    assert [e["parts"]["compactionNumber"] for e in events] == [1, 2, 3]
    state = files.read_json(files.recovery_dir() / ".session-state.json")
    assert state["compactionCount"] == 3


@pytest.mark.django_db
def test_compaction_refusals(tools):
    assert tools.call("report_compaction", {"sessionId": "ghost"}).error_code == "E1600"
    tools.ok("start_session", {"sessionId": "s-end"})
    tools.ok("end_session", {"sessionId": "s-end"})
    assert tools.call("report_compaction", {"sessionId": "s-end"}).error_code == "E1602"


@pytest.mark.django_db
def test_report_compaction_bundle_is_full_every_second_compaction(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser", "description": "long " * 50,
                             "keywords": ["parser"]})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1"})
    first = conforms("report_compaction", tools.ok("report_compaction", {
        "sessionId": "s1", "contextBudgetTokens": 2000}))
    assert first["fullReloadDue"] is False
    assert first["contextBundle"]["tiers"] == ["hot"]
    assert "### WARM" not in first["contextBundle"]["text"]
    second = tools.ok("report_compaction", {"sessionId": "s1", "contextBudgetTokens": 2000})
    assert second["fullReloadDue"] is True
    assert second["contextBundle"]["tiers"] == ["hot", "warm", "cold"]
    assert "**Keywords**: parser" in second["contextBundle"]["text"]
    third = tools.ok("report_compaction", {"sessionId": "s1"})
    assert "contextBundle" not in third
