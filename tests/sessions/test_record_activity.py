"""record_activity, what the Claude Code hooks flush: a heartbeat, tool history rows, edited
files merged into the task's keyFiles (and so file conflicts), refusals, round trips, MCP,
parallel flushes. (start_session's resolveTask and contextBundle: test_lifecycle.py;
report_compaction's bundle: test_compaction.py.)"""

from __future__ import annotations

import pytest
from django.db import connection

from bench.roundtrips import PostgresTrace
from conflicts.models import ContextConflict
from contexts.models import ContextVersion, TaskContext
from foundation.core.db import qualified
from sessions.models import ToolInvocation
from sessions.services import activity
from tests import mcp_client
from tests.sessions.helpers import backdate, conforms

STAMP = "2026-11-23T08:00:00Z"


def use(tool: str, *paths: str, success: bool = True, summary: str | None = None) -> dict:
    entry: dict = {"tool": tool, "success": success, "timestamp": STAMP}
    if paths:
        entry["filePaths"] = list(paths)
    if summary:
        entry["summary"] = summary
    return entry


@pytest.mark.django_db
def test_record_activity_heartbeats_records_history_and_merges_key_files(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser", "keyFiles": ["src/old.py"]})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1", "projectDir": "/repo"})
    backdate("s1", 1)
    before = TaskContext.objects.get(task_id="t1").version
    body = tools.ok("record_activity", {"sessionId": "s1", "conversationSummary": "parsing", "toolUses": [
        use("Read", "/repo/src/old.py"),
        use("Edit", "/repo/src/parser.py", summary="Edit src/parser.py"),
        use("Write", "/repo/src/parser.py", "/repo/src/old.py", "/elsewhere/x.py"),
        use("Bash", success=False)]})
    conforms("record_activity", body)
    assert body == {"success": True, "sessionId": "s1", "taskId": "t1", "recorded": 4,
                    "keyFilesAdded": ["src/parser.py", "/elsewhere/x.py"],
                    "lastHeartbeat": body["lastHeartbeat"]}
    task = TaskContext.objects.get(task_id="t1")
    assert task.key_files == ["src/old.py", "src/parser.py", "/elsewhere/x.py"]
    assert task.version == before + 1
    version = ContextVersion.objects.get(task_id="t1", version=task.version)
    assert version.change_type == "auto_save" and version.session_id == "s1"
    rows = list(ToolInvocation.objects.filter(session_id="s1").order_by("id")
                .values_list("tool", "success", "transport", "summary"))
    # start_session's own row first, then the hook's rows in order; the record_activity
    # call itself is not history (it is a heartbeat).
    assert rows == [("start_session", True, "rest", None), ("Read", True, "hook", None),
                    ("Edit", True, "hook", "Edit src/parser.py"), ("Write", True, "hook", None),
                    ("Bash", False, "hook", None)]
    recovery = tools.ok("check_recovery", {"includeHistory": True})
    assert recovery["needsRecovery"] is False  # the heartbeat moved
    # Nothing new: no new version.
    again = tools.ok("record_activity", {"sessionId": "s1",
                                         "toolUses": [use("Edit", "/repo/src/parser.py")]})
    assert again["keyFilesAdded"] == [] and again["recorded"] == 1
    assert TaskContext.objects.get(task_id="t1").version == before + 1


@pytest.mark.django_db
def test_hook_tool_uses_show_in_recovery_and_the_resume_prompt(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1", "projectDir": "/repo"})
    tools.ok("record_activity", {"sessionId": "s1", "toolUses": [
        use("Edit", "/repo/a.py", summary="Edit a.py"), use("Bash", success=False)]})
    backdate("s1", 10)
    entry = conforms("check_recovery", tools.ok("check_recovery", {
        "includeHistory": True, "projectDir": "/repo"}))["sessions"][0]
    assert [h["tool"] for h in entry["toolHistory"][:2]] == ["Bash", "Edit"]
    assert "`Edit` (ok): Edit a.py" in entry["resumePrompt"]
    assert "The last `Bash` call failed" in entry["resumePrompt"]


@pytest.mark.django_db
def test_record_activity_errors(tools):
    tools.ok("start_session", {"sessionId": "live"})
    tools.ok("start_session", {"sessionId": "done"})
    tools.ok("end_session", {"sessionId": "done"})
    tools.ok("start_session", {"sessionId": "dead"})
    backdate("dead", 10)
    tools.ok("check_recovery", {})
    cases = [
        ({"sessionId": "ghost"}, 404, "E1600"),
        ({"sessionId": "done"}, 409, "E1602"),
        ({"sessionId": "dead"}, 409, "E1603"),
        ({"sessionId": "ghost", "heartbeat": False}, 404, "E1600"),
        ({"sessionId": "done", "heartbeat": False}, 409, "E1602"),
        ({"sessionId": "live", "taskId": "nope"}, 404, "E1610"),
        ({"sessionId": "live", "taskId": "nope", "heartbeat": False}, 404, "E1610"),
        ({"sessionId": "live", "heartbeat": False, "conversationSummary": "x"}, 400, "E1612"),
        ({"sessionId": "live", "toolUses": [use("Edit")] * 201}, 400, "E1612"),
        ({"sessionId": "live", "toolUses": [{"tool": "Edit", "success": True}]}, 400, "E1612"),
        ({"sessionId": "live", "toolUses": [{**use("Edit"), "timestamp": "yesterday"}]},
         400, "E1612"),
    ]
    backdate("live", 1)
    for args, status, code in cases:
        answer = tools.call("record_activity", args)
        assert (answer.status, answer.error_code) == (status, code), (args, answer.body)
    # Refused batches wrote nothing: no rows, and the live session's heartbeat stayed put.
    assert not ToolInvocation.objects.filter(transport="hook").exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT now() - last_heartbeat > interval '50 seconds' FROM "
                       f"{qualified('active_sessions')} WHERE session_id = 'live'")
        assert cursor.fetchone()[0] is True


@pytest.mark.django_db
def test_record_activity_costs_two_database_round_trips(tools):
    """The heartbeat with the history rows in one statement, and the renewal of the
    edited file's claim (which the hook's check before the edit made)."""
    tools.ok("create_task", {"taskId": "t1", "name": "Parser", "keyFiles": ["a.py"]})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1", "projectDir": "/repo"})
    tools.ok("claim_files", {"sessionId": "s1", "paths": ["a.py"]})
    uses = [use("Edit", "/repo/a.py"), use("Read", "/repo/b"), use("Bash")] * 20
    # Prepares the statements (a statement's first run on a connection costs one more).
    activity.record_activity("s1", tool_uses=uses[:3])
    activity.record_activity("s1")  # without tool uses: the heartbeat's statement alone
    trace = PostgresTrace()  # round trips on the wire: prepared statements included
    with trace.capture():
        assert activity.record_activity("s1", tool_uses=uses)["recorded"] == 60
    assert trace.round_trips() == 2, trace.statements()
    # Notices asked for, none waiting: the heartbeat's own statement said so.
    with trace.capture():
        assert activity.record_activity("s1", notices=True)["notices"] == []
    assert trace.round_trips() == 1, trace.statements()


@pytest.mark.django_db
def test_without_heartbeat_the_heartbeat_does_not_move(tools):
    tools.ok("start_session", {"sessionId": "s1"})
    backdate("s1", 1)
    body = tools.ok("record_activity", {"sessionId": "s1", "heartbeat": False,
                                        "toolUses": [use("Bash")]})
    assert body["recorded"] == 1 and body["taskId"] is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT now() - last_heartbeat > interval '50 seconds' FROM "
                       f"{qualified('active_sessions')} WHERE session_id = 's1'")
        assert cursor.fetchone()[0] is True


@pytest.mark.django_db
def test_without_heartbeat_a_crashed_session_takes_its_late_tool_uses(tools):
    """What a killed agent's hooks left unsent arrives later; the session stays crashed and
    its resume prompt lists those tool uses."""
    tools.ok("start_session", {"sessionId": "dead"})
    backdate("dead", 10)
    tools.ok("check_recovery", {})
    body = tools.ok("record_activity", {"sessionId": "dead", "heartbeat": False,
                                        "toolUses": [use("Edit")]})
    assert body["recorded"] == 1
    report = tools.ok("check_recovery", {})
    (entry,) = [s for s in report["sessions"] if s["sessionId"] == "dead"]
    assert entry["recoveryType"] == "crash" and "`Edit`" in entry["resumePrompt"]
    assert tools.call("record_activity", {"sessionId": "dead"}).error_code == "E1603"


@pytest.mark.django_db
def test_two_sessions_on_two_tasks_editing_one_file_make_a_file_conflict(tools):
    for task in ("t1", "t2"):
        tools.ok("create_task", {"taskId": task, "name": task, "status": "in_progress"})
    # Two worktrees of one repository: relative paths meet.
    tools.ok("start_session", {"sessionId": "a", "taskId": "t1", "projectDir": "/work/wt-a"})
    tools.ok("start_session", {"sessionId": "b", "taskId": "t2", "projectDir": "/work/wt-b/"})
    tools.ok("record_activity", {"sessionId": "a", "toolUses": [use("Edit", "/work/wt-a/app.py")]})
    tools.ok("record_activity", {"sessionId": "b", "toolUses": [
        use("MultiEdit", "/work/wt-b/app.py")]})
    # Recorded by the flush itself (the file is claimed live by both sessions); the
    # detector finds it again as known.
    found = tools.ok("detect_conflicts", {"conflictTypes": ["file_conflict"]})
    assert found["detected"] == [] and len(found["existing"]) == 1, found
    conflict = ContextConflict.objects.get(conflict_type="file_conflict")
    conflict = {"conflictType": conflict.conflict_type, "taskAId": conflict.task_a_id,
                "taskBId": conflict.task_b_id, "evidence": conflict.evidence}
    assert conflict["conflictType"] == "file_conflict"
    assert {conflict["taskAId"], conflict["taskBId"]} == {"t1", "t2"}
    assert conflict["evidence"]["actualValue"] == ["app.py"]


@pytest.mark.django_db(transaction=True)
def test_record_activity_over_mcp(live_api):
    from contexts.services.tasks import create_task
    from sessions.services import lifecycle

    url, token = live_api
    create_task("t1", {"name": "Parser"})
    lifecycle.start_session(session_id="s1", task_id="t1", project_dir="/repo")
    result = mcp_client.call_tool(url, token, "record_activity", {
        "sessionId": "s1", "toolUses": [use("Write", "/repo/src/new.py")]})
    assert not result.is_error, result
    assert result.structured_content["keyFilesAdded"] == ["src/new.py"]
    assert result.structured_content["recorded"] == 1
    assert TaskContext.objects.get(task_id="t1").key_files == ["src/new.py"]
    refused = mcp_client.call_tool(url, token, "record_activity", {"sessionId": "ghost"})
    assert refused.is_error


@pytest.mark.django_db(transaction=True)
def test_parallel_flushes_on_one_task_lose_no_key_file(tools):
    import threading

    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    for n in range(6):
        tools.ok("start_session", {"sessionId": f"s{n}", "taskId": "t1", "projectDir": "/repo"})
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def flush(n: int) -> None:
        barrier.wait()
        try:
            activity.record_activity(f"s{n}", tool_uses=[
                use("Write", f"/repo/file{n}.py", "/repo/shared.py")])
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=flush, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    key_files = TaskContext.objects.get(task_id="t1").key_files
    assert sorted(key_files) == sorted([f"file{n}.py" for n in range(6)] + ["shared.py"])
    assert len(key_files) == len(set(key_files))
