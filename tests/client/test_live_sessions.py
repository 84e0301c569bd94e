"""Issue 20 against a real server: a session is tracked from its first edit with no flags
(its branch's task), the newer hook events, the right handoff on resume, a long outage
said once, and no files piling up."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from contexts.models import TaskContext
from sessions.models import ActiveSession, SessionEvent, SessionHandoff, ToolInvocation
from tests.client.conftest import Project, dead_url, fixture

FAST_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "0"}
OURS = Path(__file__).with_name("fixtures")
CLAUDE = "11111111-1111-4111-8111-111111111111"
OTHER = "22222222-2222-4222-8222-222222222222"


def our_fixture(name: str, **overrides) -> dict:
    return {**json.loads((OURS / f"{name}.json").read_text()), **overrides}


def start(project: Project, claude: str = CLAUDE):
    return project.hook("SessionStart", fixture("session_start_startup", session_id=claude))


def edit(project: Project, path: str, claude: str = CLAUDE) -> None:
    payload = fixture("post_tool_use_edit", session_id=claude)
    payload["tool_input"]["file_path"] = str(project.root / path)
    project.hook("PostToolUse", payload, env=FAST_FLUSH)


def test_the_first_session_on_a_branch_is_tracked_in_the_branchs_own_task(shop):
    clone = shop("clone")
    run = start(clone)
    session = ActiveSession.objects.get(session_id=clone.mapped(CLAUDE)["sessionId"])
    task = TaskContext.objects.get(task_id=session.task_id)
    assert (task.task_id, task.name, task.status, task.project_id) == (
        "shop-feature-login", "feature/login", "in_progress", "github.com:acme:shop")
    assert "`shop-feature-login` (created now for this git branch" in run.context
    edit(clone, "src/login.ts")
    assert TaskContext.objects.get(task_id="shop-feature-login").key_files == ["src/login.ts"]
    # The next session in this clone carries on there; another clone of the repository on
    # the same branch reuses the task; another branch gets its own.
    clone.hook("SessionEnd", fixture("session_end_other", session_id=CLAUDE))
    assert "(from the git branch)" in start(clone, OTHER).context
    assert "(this git branch's task)" in start(shop("second-clone")).context
    start(shop("third", branch="main"))
    assert set(TaskContext.objects.values_list("task_id", flat=True)) >= {
        "shop-feature-login", "shop-main"}


def test_a_directory_without_git_gets_one_task(shop):
    plain = shop("scratch-dir", branch=None)
    start(plain)
    task_id = ActiveSession.objects.get(session_id=plain.mapped(CLAUDE)["sessionId"]).task_id
    assert task_id == "scratch-dir" and TaskContext.objects.get(task_id=task_id).name == \
        "scratch-dir"


def test_a_configured_task_still_wins(shop, tools_live):
    tools_live("create_task", {"taskId": "chosen", "name": "Chosen",
                               "projectId": "github.com:acme:shop"})
    project = shop("repo")
    config = json.loads((project.state / "config.json").read_text())
    (project.state / "config.json").write_text(json.dumps({**config, "taskId": "chosen"}))
    start(project)
    assert ActiveSession.objects.get(
        session_id=project.mapped(CLAUDE)["sessionId"]).task_id == "chosen"
    assert not TaskContext.objects.filter(task_id="shop-feature-login").exists()


def test_a_subagent_counts_for_its_parent_session(shop):
    project = shop("repo")
    start(project)
    session_id = project.mapped(CLAUDE)["sessionId"]
    project.hook("SubagentStart", our_fixture("subagent_start"))
    inside = our_fixture("post_tool_use_in_subagent")
    inside["tool_input"]["file_path"] = str(project.root / "src/api.ts")
    project.hook("PostToolUse", inside, env=FAST_FLUSH)
    project.hook("SubagentStop", our_fixture("subagent_stop_2_1_331"))
    assert ActiveSession.objects.count() == 1  # not a session of its own
    use = ToolInvocation.objects.get(session_id=session_id, tool="Edit")
    assert use.summary.startswith("(subagent general-purpose) Edit")
    assert "src/api.ts" in TaskContext.objects.get(task_id="shop-feature-login").key_files
    events = dict(SessionEvent.objects.filter(session_id=session_id, event_type="system_event")
                  .values_list("content", "parts"))
    assert events["subagent_start"]["agentType"] == "general-purpose"
    assert events["subagent_stop"]["lastAnswer"] == "Done via subagent."


def test_an_api_error_ending_a_turn_is_recorded_not_a_crash(shop):
    project = shop("repo")
    start(project)
    session_id = project.mapped(CLAUDE)["sessionId"]
    project.hook("StopFailure", our_fixture("stop_failure"))
    event = SessionEvent.objects.get(session_id=session_id, content="stop_failure")
    assert event.parts["error"] == "invalid_request" and "too long" in event.parts["details"]
    assert ActiveSession.objects.get(session_id=session_id).status == "active"


def test_a_resumed_conversation_gets_its_own_previous_note(shop):
    project = shop("repo")
    start(project)
    first = project.mapped(CLAUDE)["sessionId"]
    project.hook("SessionEnd", fixture("session_end_other", session_id=CLAUDE))
    start(project, OTHER)  # another conversation ends later: the project's newest note
    project.hook("SessionEnd", fixture("session_end_other", session_id=OTHER))
    newest = SessionHandoff.objects.get(active=True)
    assert newest.from_session_id != first
    resumed = project.hook("SessionStart", fixture("session_start_resume", session_id=CLAUDE))
    assert f"Left by session {first}" in resumed.context
    assert f"Left by session {newest.from_session_id}" not in resumed.context


def test_the_handoff_note_is_readable_lines(shop, tmp_path):
    project = shop("repo")
    start(project)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in [
        {"message": {"role": "user", "content": "add a logout button"}},
        {"message": {"role": "assistant", "content": [
            {"type": "text", "text": "Added it in nav.tsx."},
            {"type": "tool_use", "id": "t1", "name": "Edit",
             "input": {"file_path": "src/nav.tsx"}}]}},
        {"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                  "content": "ok"}]}}]))
    project.hook("SessionEnd", fixture("session_end_other", session_id=CLAUDE,
                                       transcript_path=str(transcript)))
    note = SessionHandoff.objects.get(active=True).summary
    assert note.splitlines() == ["Claude Code session ended (other).",
                                 "Last request: add a logout button",
                                 "Last answer: Added it in nav.tsx.",
                                 "Last actions:", "- Edit src/nav.tsx"]


def test_a_note_left_on_another_task_is_not_called_the_previous_sessions(shop):
    project = shop("repo")
    start(project)
    project.hook("SessionEnd", fixture("session_end_other", session_id=CLAUDE))
    note = SessionHandoff.objects.get(active=True)
    run = start(project, OTHER)
    assert f"Left by session {note.from_session_id}" in run.context
    assert "previous session" not in run.context
    assert (f"Handoff note from a {note.from_agent} session of this project" if note.from_agent
            else "Handoff note from a session of this project") in run.context


def test_a_long_outage_is_said_once_in_the_offline_context(shop):
    project = shop("repo")
    project.configure(dead_url(), "whatever")
    spool = project.state / "spool"
    spool.mkdir(parents=True)
    long_ago = time.time_ns() - 10 * 60 * 10**9
    (spool / f"{long_ago:020d}-0000001-record_activity.json").write_text(
        json.dumps({"tool": "record_activity", "arguments": {"sessionId": "x"}}))
    run = start(project)
    assert "offline" in run.context and "out of reach since" in run.context


def test_activity_files_do_not_pile_up(shop):
    project = shop("repo")
    for n in range(7):
        claude = f"{n:08d}-1111-4111-8111-111111111111"
        start(project, claude)
        edit(project, "src/a.ts", claude)
        project.hook("SessionEnd", fixture("session_end_other", session_id=claude))
    left = sorted(os.listdir(project.state / "activity"))
    assert left == [], left
