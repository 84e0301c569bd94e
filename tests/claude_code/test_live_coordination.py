"""Live file claims with the real Claude Code: two agents of one repository on two tasks,
the second editing a file the first (still running) is editing. The check before an edit
(the synchronous PreToolUse hook, ``launch.py PreEdit``) warns the second agent's model
or, under the project's block policy, refuses its edit; the first agent hears of it in
its next PostToolUse; ended and crashed sessions hold nothing; with the service down the
edit goes on."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from claims.models import FileClaim
from conflicts.models import ContextConflict
from contexts.models import TaskContext
from sessions.models import ActiveSession
from tests.agent_runner import finish
from tests.claude_code.conftest import clone_project, make_project
from tests.claude_code.orchestrated import (
    call_tool,
    claude_setup,
    our_session_id,
    register_project,
    state_dir,
)
from tests.claude_code.test_claude_code_e2e import create_task, processes_running
from tests.model_standins import ClaudeStandIn, Step, call, say
from tests.waiting import wait_for

pytestmark = pytest.mark.claude_code

ORIGINAL = "def greet():\n    return 'hello'\n"
WARNING = "Session orchestrator: another agent is editing the same file."
REFUSED = "Edit refused by the project's file policy (block)"
# The first agent flushes at every PostToolUse, so the notice reaches its very next request.
EVERY_TOOL_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "0"}
# The second agent's tool uses wait for its Stop: what is stored by the time of its next
# model request comes from the check before the edit, not from an activity flush.
NO_TIME_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "600"}


def hold_command(go: Path, marker: str, seconds: int = 60) -> str:
    """A Bash command that runs until ``go`` exists (at most ``seconds``): the agent stays
    live in the middle of a tool call (plain ``sleep N`` is refused by Claude Code)."""
    return (f"python3 -c 'import os, time; deadline = time.time() + {seconds}; "
            f"[time.sleep(0.1) for _ in iter(lambda: os.path.exists(\"{go}\") "
            f"or time.time() > deadline, True)]'  # {marker}")


def edit_app(project: Path, task: str, **step: object) -> Step:
    return call("Edit", file_path=str(project / "app.py"), old_string="'hello'",
                new_string=f"'hello from {task}'", **step)


def only_session(project: Path) -> str:
    """The orchestrator session of the one Claude Code run made in ``project`` so far."""
    mapping = json.loads((state_dir(project) / "sessions.json").read_text())
    (entry,) = mapping.values()
    return entry["sessionId"]


def two_clones(tmp_path, server, token, tasks=("alpha", "beta")):
    """Two clones of one repository (one project), each set up on its own task."""
    first = make_project(tmp_path / tasks[0], "git@github.com:acme/shop.git")
    second = clone_project(first, tmp_path / tasks[1])
    for project, task in zip((first, second), tasks, strict=True):
        create_task(server, token, project, task, f"{task} changes")
        claude_setup(project, server, token, task)
    return first, second, register_project(server, token, first)


def set_policy(server, token, project_id: str, policy: str) -> None:
    call_tool(server, token, "update_global_context", {
        "projectId": project_id,
        "orchestratorContext": {"fileClaims": {"policy": policy, "ignore": []}}})


def tool_results(request) -> list[dict]:
    """The tool_result blocks of the last user message of a recorded model request."""
    content = request.body["messages"][-1]["content"]
    return [part for part in content if isinstance(part, dict)
            and part.get("type") == "tool_result"]


def kill_holds(marker: str) -> None:
    for pid in processes_running(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def first_agent_holding_app_py(claude, project: Path, task: str, tmp_path: Path):
    """Claude Code on ``project`` edits app.py, then runs a Bash command that lasts until
    the test lets it go (``release()``): yields (model, process, session id, release)
    once the edit's claim is stored and the command runs."""
    go, marker = tmp_path / f"go-{task}", f"MARKER-HOLD-{uuid.uuid4().hex[:12]}"
    steps = [edit_app(project, task),
             call("Bash", command=hold_command(go, marker), description="long build"),
             say(f"{task} done.")]
    with ClaudeStandIn(steps) as model:
        started = time.monotonic()
        process = claude.start(project, "edit app.py, then build", model.url,
                               env=EVERY_TOOL_FLUSH)
        try:
            assert wait_for(lambda: processes_running(marker) or process.poll() is not None,
                            timeout=60, interval=0.1)
            assert process.poll() is None, finish(process, started)
            session_id = only_session(project)
            assert FileClaim.objects.filter(session_id=session_id, path="app.py",
                                            released_at__isnull=True).exists()
            yield model, process, session_id, go.touch
        finally:
            go.touch()
            if process.poll() is None:
                with contextlib.suppress(AssertionError):
                    finish(process, started, timeout=60)
            kill_holds(marker)


def test_the_second_agent_is_warned_at_once_and_the_first_told_in_its_next_request(
        claude, tmp_path, orchestrator, api_token_live):
    first, second, _ = two_clones(tmp_path, orchestrator, api_token_live)
    seen_at_b_edit: dict[str, object] = {}
    checked = threading.Event()

    def record_what_is_stored() -> None:
        """B's next model request, right after its edit: what the service stored already
        (B's tool uses are not flushed yet: NO_TIME_FLUSH)."""
        try:
            seen_at_b_edit["conflicts"] = list(ContextConflict.objects.filter(
                conflict_type="file_conflict").values("task_a_id", "task_b_id",
                                                      "detected_by"))
        finally:
            connection.close()  # this thread's own (the stand-in's request thread)
            checked.set()

    with first_agent_holding_app_py(claude, first, "alpha", tmp_path) as (
            model_a, process_a, alpha_session, release):
        b_steps = [edit_app(second, "beta"),
                   Step(text="beta done.", before=record_what_is_stored)]
        with ClaudeStandIn(b_steps) as model_b:
            run_b = claude.run(second, "edit app.py", model_b.url, env=NO_TIME_FLUSH)
        assert checked.is_set()
        assert process_a.poll() is None  # A was live all along B's run
        release()
        run_a = finish(process_a, time.monotonic(), timeout=60)
    assert run_a.result["result"] == "alpha done."
    assert run_b.result["result"] == "beta done."
    beta_session = our_session_id(second, run_b.session_id)

    # B's model read the warning right after its edit, naming the file and A's session
    # and task; the edit itself went through (policy warn).
    after_edit = model_b.scripted_requests[1].text()
    assert WARNING in after_edit
    assert "- `app.py`: " in after_edit, after_edit[-3000:]
    assert f"session `{alpha_session}` on task `alpha`" in after_edit, after_edit[-3000:]
    assert "Recorded as a file_conflict with `alpha`" in after_edit
    assert WARNING not in model_b.scripted_requests[0].text()
    assert (second / "app.py").read_text() == "def greet():\n    return 'hello from beta'\n"

    # The file_conflict was stored by the claim itself, before any flush of B's.
    (conflict,) = seen_at_b_edit["conflicts"]
    assert {conflict["task_a_id"], conflict["task_b_id"]} == {"alpha", "beta"}
    assert conflict["detected_by"] == f"claims:{beta_session}"

    # A's request after its long command carries the notice (PostToolUse flush).
    requests_a = model_a.scripted_requests
    assert len(requests_a) == 3
    assert "began editing `app.py`" not in requests_a[1].text()
    notice = requests_a[2].text()
    assert "another agent began editing `app.py`, which this session is editing" in notice
    assert f"session `{beta_session}` on task `beta`" in notice
    # Said once: B's warning is not repeated by its own later flush.
    assert ContextConflict.objects.filter(conflict_type="file_conflict").count() == 1


def test_under_the_block_policy_the_second_agents_edit_is_refused(
        claude, tmp_path, orchestrator, api_token_live):
    first, second, project_id = two_clones(tmp_path, orchestrator, api_token_live)
    set_policy(orchestrator, api_token_live, project_id, "block")
    with first_agent_holding_app_py(claude, first, "alpha", tmp_path) as (
            model_a, process_a, alpha_session, release):
        b_steps = [edit_app(second, "beta"), say("beta gave up.")]
        with ClaudeStandIn(b_steps) as model_b:
            run_b = claude.run(second, "edit app.py", model_b.url, env=NO_TIME_FLUSH)
        assert process_a.poll() is None
        release()
        run_a = finish(process_a, time.monotonic(), timeout=60)
    assert run_b.result["result"] == "beta gave up."
    assert run_a.result["result"] == "alpha done."
    beta_session = our_session_id(second, run_b.session_id)

    # The refusal is the Edit's tool result, an error, with the reason naming A.
    (result,) = tool_results(model_b.scripted_requests[1])
    assert result.get("is_error") is True, result
    text = json.dumps(result)
    assert REFUSED in text and f"session `{alpha_session}` on task `alpha`" in text, text
    # The edit did not happen; A's did.
    assert (second / "app.py").read_text() == ORIGINAL
    assert (first / "app.py").read_text() == "def greet():\n    return 'hello from alpha'\n"
    # Nothing claimed for B, the refused edit is no edit of its task (no keyFiles entry,
    # no conflict), and A was told nothing (no overlap happened).
    assert not FileClaim.objects.filter(session_id=beta_session, path="app.py").exists()
    assert "app.py" not in TaskContext.objects.get(task_id="beta").key_files
    assert not ContextConflict.objects.filter(conflict_type="file_conflict").exists()
    assert "began editing" not in model_a.scripted_requests[2].text()


@pytest.mark.parametrize("first_ends_by", ["exit", "kill -9"])
def test_an_ended_or_crashed_sessions_claims_warn_no_one(
        first_ends_by, claude, tmp_path, orchestrator, api_token_live):
    first, second, project_id = two_clones(tmp_path, orchestrator, api_token_live)
    # Block: a claim that still counted would refuse B's edit outright.
    set_policy(orchestrator, api_token_live, project_id, "block")
    if first_ends_by == "exit":
        with ClaudeStandIn([edit_app(first, "alpha"), say("alpha done.")]) as model:
            run_a = claude.run(first, "edit app.py", model.url)
        alpha_session = our_session_id(first, run_a.session_id)
        assert ActiveSession.objects.get(session_id=alpha_session).status == "ended"
    else:
        with first_agent_holding_app_py(claude, first, "alpha", tmp_path) as (
                _, process_a, alpha_session, _):
            process_a.kill()  # SIGKILL: no SessionEnd; the watchdog reports the crash
            process_a.wait(timeout=10)
        assert wait_for(lambda: ActiveSession.objects.get(
            session_id=alpha_session).status == "crashed", timeout=30, interval=0.3)
    # A's claim row is still there (never released): its session's state is what counts.
    assert FileClaim.objects.filter(session_id=alpha_session, path="app.py").exists()

    with ClaudeStandIn([edit_app(second, "beta"), say("beta done.")]) as model_b:
        run_b = claude.run(second, "edit app.py", model_b.url, env=NO_TIME_FLUSH)
    assert run_b.result["result"] == "beta done."
    seen = model_b.scripted_requests[1].text()
    assert WARNING not in seen and REFUSED not in seen
    assert (second / "app.py").read_text() == "def greet():\n    return 'hello from beta'\n"
    assert not ContextConflict.objects.filter(detected_by__startswith="claims:").exists()


def test_with_the_service_down_a_refused_edit_goes_on(
        claude, tmp_path, orchestrator, api_token_live):
    """A live holder under the block policy (a session started over the API), then the
    service stops before the edit: the check allows it and says nothing."""
    first, second, project_id = two_clones(tmp_path, orchestrator, api_token_live)
    set_policy(orchestrator, api_token_live, project_id, "block")
    holder = call_tool(orchestrator, api_token_live, "start_session", {
        "taskId": "alpha", "projectDir": str(first)})["sessionId"]
    claimed = call_tool(orchestrator, api_token_live, "claim_files",
                        {"sessionId": holder, "paths": ["app.py"]})
    assert claimed["claimed"] == ["app.py"] and not claimed["blocked"]

    steps = [edit_app(second, "beta", before=orchestrator.stop), say("beta done offline.")]
    try:
        with ClaudeStandIn(steps) as model:
            run = claude.run(second, "edit app.py", model.url)
        assert run.result["result"] == "beta done offline."
        assert (second / "app.py").read_text() == \
            "def greet():\n    return 'hello from beta'\n"
        (result,) = tool_results(model.scripted_requests[1])
        assert not result.get("is_error"), result
        seen = model.scripted_requests[1].text()
        assert WARNING not in seen and REFUSED not in seen
        assert "PreEdit edit check skipped: service unavailable" in (
            state_dir(second) / "hook.log").read_text()
    finally:
        orchestrator.start()
