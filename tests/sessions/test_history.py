"""Automatic tool history over REST and MCP, mirrored to RECOVERY_DIR/.tool-history.json."""

from __future__ import annotations

import threading

import httpx
import pytest

from foundation.backends import files
from sessions.models import ToolInvocation
from sessions.services import history
from tests import mcp_client
from tests.waiting import wait_for


def test_tool_calls_with_a_session_id_are_recorded_over_rest_and_mcp(live_api, settings):
    url, token = live_api
    headers = {"Authorization": f"Bearer {token}"}

    def rest(tool, payload):
        return httpx.post(f"{url}/api/v1/tools/{tool}/", json=payload, headers=headers,
                          timeout=30)

    assert rest("start_session", {"sessionId": "s-h"}).status_code == 200
    assert rest("heartbeat", {"sessionId": "s-h"}).status_code == 200
    assert rest("append_session_event", {"sessionId": "s-h", "type": "bogus", "role": "user",
                                         "content": "x"}).status_code == 400
    via_mcp = mcp_client.call_tool(url, token, "append_session_event", {
        "sessionId": "s-h", "type": "user_message", "role": "user", "content": "hi"})
    assert not via_mcp.is_error
    rest("get_session_scratchpad", {"sessionId": "unknown-session"})
    rows = list(ToolInvocation.objects.order_by("id").values_list("tool", "success",
                                                                  "transport", "session_id"))
    assert rows == [("start_session", True, "rest", "s-h"),
                    ("append_session_event", False, "rest", "s-h"),
                    ("append_session_event", True, "mcp", "s-h")]
    mirror = files.read_json(files.recovery_dir() / ".tool-history.json")
    assert [(e["tool"], e["success"]) for e in mirror["entries"]] == \
        [("start_session", True), ("append_session_event", False),
         ("append_session_event", True)]
    report = rest("check_recovery", {"includeHistory": True}).json()
    assert report["needsRecovery"] is False


def test_the_mirror_is_rewritten_by_a_background_writer_after_a_burst(live_api, settings):
    """With a delay, calls only mark the mirror stale; one rewrite covers the burst."""
    settings.HISTORY_MIRROR_DELAY_MS = 100
    url, token = live_api
    headers = {"Authorization": f"Bearer {token}"}
    mirror_path = files.recovery_dir() / ".tool-history.json"
    assert httpx.post(f"{url}/api/v1/tools/start_session/", json={"sessionId": "s-burst"},
                      headers=headers, timeout=30).status_code == 200
    for i in range(5):
        response = httpx.post(f"{url}/api/v1/tools/append_session_event/", headers=headers,
                              timeout=30, json={"sessionId": "s-burst", "type": "user_message",
                                                "role": "user", "content": f"m{i}"})
        assert response.status_code == 200
    def mirror() -> dict:
        return files.read_json(mirror_path) or {"entries": []}

    wait_for(lambda: len(mirror()["entries"]) == 6)
    assert [e["tool"] for e in mirror()["entries"]] == \
        ["start_session"] + ["append_session_event"] * 5
    # Written by the process's background writer: with a delay set, no call writes it.
    assert any(t.name == "index-writer-tool-history"
               for t in threading.enumerate())
    history.mirror_writers.flush()  # nothing left to land in the next test's directory


@pytest.mark.django_db
def test_each_project_mirrors_its_own_calls_tool_calls_and_hook_reports_alike(tools):
    """Both writers copy the session's project onto the row; a project's mirror reads its
    last calls by it (toolinv_project_recent), never another project's."""
    for key in ("web", "api"):
        tools.ok("create_project", {"projectId": key, "name": key})
        tools.ok("start_session", {"sessionId": f"s-{key}", "projectId": key})
        tools.ok("record_activity", {"sessionId": f"s-{key}", "toolUses": [
            {"tool": "Bash", "success": True, "timestamp": "2030-01-01T00:00:00Z"}]})
    assert set(ToolInvocation.objects.values_list("session_id", "project_id")) == \
        {("s-web", "web"), ("s-api", "api")}
    for key in ("web", "api"):
        assert history.write_mirror(key)  # on commit, which this test's transaction is not
        mirror = files.read_json(files.recovery_dir(key) / ".tool-history.json")
        assert [(e["sessionId"], e["tool"]) for e in mirror["entries"]] == \
            [(f"s-{key}", "start_session"), (f"s-{key}", "Bash")]
        # Postgres writes the file: its timestamps are the API's (ISO 8601, UTC, Z).
        bash = mirror["entries"][1]
        assert bash["timestamp"] == "2030-01-01T00:00:00Z" and bash["success"] is True
        assert mirror["version"] == 1
    # As the database's own history gives them, to a session known only from the file.
    assert history.history_from_file("web", "s-web", 5) == \
        history.recent_history("s-web", 5)
