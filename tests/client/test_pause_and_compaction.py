"""The Claude Code client and issue 22: a usage limit reported by StopFailure pauses the
session and the next prompt resumes it; PostCompact completes the compaction
(complete_compaction) so the session is no longer listed as compacted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator_hook.handlers import limit_resets_at, usage_limited
from sessions.models import ActiveSession, SessionDetail, SessionEvent
from tests.client.conftest import fixture
from tests.client.test_live import live_project  # noqa: F401  (the fixture)

CLAUDE = "11111111-1111-4111-8111-111111111111"


def stop_failure(**overrides: Any) -> dict[str, Any]:
    """This client's own StopFailure fixture (tests/client/fixtures)."""
    path = Path(__file__).resolve().parent / "fixtures" / "stop_failure.json"
    return {**json.loads(path.read_text()), **overrides}


@pytest.mark.parametrize("payload, limited", [
    ({"error": "rate_limit"}, True),
    ({"error_type": "rate_limit", "error": "429", "error_message": "Rate limit exceeded"},
     True),
    ({"error": "unknown", "error_details": "Claude usage limit reached|1893474000"}, True),
    ({"error": "invalid_request", "error_details": "prompt is too long"}, False),
    ({"error": "server_error", "error_details": "rate limit of the proxy"}, False),
    ({"error": "unknown", "error_details": "socket hang up"}, False),
])
def test_usage_limits_are_recognised(payload, limited):
    assert usage_limited(payload) is limited


def test_the_reset_time_is_read_where_claude_code_gives_it():
    assert limit_resets_at({"error_details": "Claude usage limit reached|1893474000"}) == \
        "2030-01-01T05:00:00Z"
    assert limit_resets_at({"resets_at": 1893474000}) == "2030-01-01T05:00:00Z"
    assert limit_resets_at({"error_message": "resets at 2030-01-01T05:00:00+00:00"}) == \
        "2030-01-01T05:00:00+00:00"
    assert limit_resets_at({"error_details": "Your limit resets 3pm"}) is None


def test_the_stop_failure_fixture_is_no_usage_limit():
    assert usage_limited(stop_failure()) is False


def test_a_usage_limit_pauses_the_session_and_the_next_prompt_resumes_it(live_project):  # noqa: F811
    live_project.hook("SessionStart", fixture("session_start_startup"))
    session_id = live_project.mapped(CLAUDE)["sessionId"]
    live_project.hook("StopFailure", stop_failure(
        error="rate_limit",
        error_details="Claude usage limit reached|1893474000",
        last_assistant_message="Claude usage limit reached"))
    detail = SessionDetail.objects.get(session_id=session_id)
    assert (detail.pause_reason, detail.pause_resets_at.isoformat()) == \
        ("usage_limit", "2030-01-01T05:00:00+00:00")
    assert ActiveSession.objects.get(session_id=session_id).status == "active"

    live_project.hook("UserPromptSubmit", fixture("user_prompt_submit"))
    detail.refresh_from_db()
    assert (detail.paused_at, detail.resume_count) == (None, 1)
    contents = list(SessionEvent.objects.filter(session_id=session_id)
                    .values_list("content", flat=True))
    assert contents[-3:] == ["stop_failure", "session_pause", "session_resume"]


def test_post_compact_completes_the_compaction(live_project):  # noqa: F811
    live_project.hook("SessionStart", fixture("session_start_startup"))
    session_id = live_project.mapped(CLAUDE)["sessionId"]
    live_project.hook("PreCompact", fixture("pre_compact_auto"))
    reloaded = live_project.hook("SessionStart", fixture("session_start_compact"))
    assert ActiveSession.objects.get(session_id=session_id).status == "compacted"
    # Seed 004's summary counters reach the model with the re-injected context (Claude
    # Code discards PostCompact's output), and PostCompact's answer reaches the hook log.
    assert "RESUMED - Compaction #1 complete\n\nCompleted: 0/1 tasks\n" \
        "Restoring: 0 in-progress tasks\nPending audit: 0 tasks" in reloaded.context
    live_project.hook("PostCompact", fixture("post_compact_auto"))
    assert "RESUMED - Compaction #1 complete: Completed: 0/1 tasks, Restoring: 0 " \
        "in-progress tasks, Pending audit: 0 tasks" in live_project.log()
    session = ActiveSession.objects.get(session_id=session_id)
    assert (session.status, session.recovery_needed) == ("active", False)
    (parts,) = SessionEvent.objects.filter(session_id=session_id,
                                           content="compaction_complete").values_list(
        "parts", flat=True)
    assert (parts["compaction_number"], parts["full_reload"]) == (1, False)
    assert SessionDetail.objects.get(session_id=session_id).compactions_completed == 1
