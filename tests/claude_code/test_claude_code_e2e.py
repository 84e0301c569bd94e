"""The real Claude Code with our hooks after ``manage.py claude_setup``, against the web
server in its own process: what the orchestrator records, what reaches the model, and
the crash, outage and parallel-agent paths."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import signal
import subprocess
import threading
import time
import urllib.error
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from conflicts.models import ContextConflict
from contexts.models import TaskContext
from orchestrator_hook import install
from sessions.models import (
    ActiveSession,
    SessionDetail,
    SessionEvent,
    SessionHandoff,
    ToolInvocation,
)
from sessions.services.recovery import detect_crashed_sessions
from tests.agent_runner import finish
from tests.claude_code.conftest import clone_project, make_project
from tests.claude_code.orchestrated import (
    call_tool,
    claude_setup,
    our_session_id,
    register_project,
    spooled,
    tool_calls,
)
from tests.model_standins import ClaudeStandIn, call, say
from tests.waiting import wait_for

pytestmark = pytest.mark.claude_code

HOOK_EVENTS = ("SessionStart", "PostToolUse", "PostToolUseFailure", "Stop", "PreCompact",
               "SessionEnd")
# Tool uses wait in the project until a Stop (or this many seconds): one round trip per
# run here, so the counts below do not depend on how fast this machine is.
NO_TIME_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "600"}
# A hook that finds the service down leaves it alone this long (orchestrator_hook.service).
HOOK_DOWN_SECONDS = 2.0


def create_task(server, token, project, task_id: str, working_on: str) -> None:
    """The task, in the project of the directory ``project`` (registered first)."""
    call_tool(server, token, "create_task", {
        "taskId": task_id, "name": f"Task {task_id}", "status": "in_progress",
        "projectId": register_project(server, token, project),
        "currentPhase": "implementation", "keyFiles": [f"docs/{task_id}.md"],
        "immediateContext": {"workingOn": working_on, "nextStep": "edit app.py"}})


def hook_tools(session_id: str) -> list[str]:
    """Tool uses the hooks reported for this session, oldest first."""
    return list(ToolInvocation.objects.filter(session_id=session_id, transport="hook")
                .order_by("id").values_list("tool", flat=True))


def test_a_run_is_recorded_and_its_context_reaches_the_model(
        claude, project, orchestrator, api_token_live):
    create_task(orchestrator, api_token_live, project, "greeting",
                "MARKER-GREETING-7 personal greetings")
    output = claude_setup(project, orchestrator, api_token_live, "greeting")
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    for event in HOOK_EVENTS:
        commands = [h["command"] for group in settings["hooks"][event] for h in group["hooks"]]
        # The launcher under this Python without site (-S), as claude_setup writes it.
        assert any(install.is_our_command(c) and shlex.split(c)[-3:] == [
            "-S", str(install.LAUNCHER), event] for c in commands), (event, output)
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["orchestrator"]
    assert server["url"].startswith(orchestrator.url)
    key = json.loads((project / ".claude" / "orchestrator" / "config.json").read_text())[
        "projectId"]
    assert key.startswith("git-root:") and server["headers"]["X-Orchestrator-Project"] == key

    app, added = project / "app.py", project / "greeting.py"
    steps = [call("Edit", file_path=str(app), old_string="'hello'", new_string="'hello you'"),
             call("Write", file_path=str(added), content="NAME = 'you'\n"),
             call("Bash", command="exit 4", description="fails on purpose"),
             call("mcp__orchestrator__get_task_context", taskId="greeting"),
             say("Greeting done.")]
    with ClaudeStandIn(steps) as model:
        run = claude.run(project, "personalise the greeting", model.url,
                         env={**NO_TIME_FLUSH, "ENABLE_TOOL_SEARCH": "false"})
    assert run.result["result"] == "Greeting done."
    # The lean tool list: what the model request carries of ours, with tool search off.
    ours = [t for t in model.scripted_requests[0].body["tools"]
            if t["name"].startswith("mcp__orchestrator__")]
    assert {t["name"] for t in ours} >= {"mcp__orchestrator__get_task_context",
                                        "mcp__orchestrator__save_task_context"}
    assert not {"mcp__orchestrator__heartbeat", "mcp__orchestrator__end_session"} & {
        t["name"] for t in ours}
    assert len(json.dumps(ours, separators=(",", ":"))) <= 8192
    session_id = our_session_id(project, run.session_id)

    session = ActiveSession.objects.get(session_id=session_id)
    assert (session.task_id, session.project_dir, session.git_branch, session.status,
            session.project_id) == ("greeting", str(project), "main", "ended", key)
    assert session.last_heartbeat > session.started_at
    assert hook_tools(session_id) == ["Edit", "Write", "Bash",
                                      "mcp__orchestrator__get_task_context"]
    failed = ToolInvocation.objects.get(session_id=session_id, transport="hook", tool="Bash")
    assert failed.success is False
    # Four tool uses, one Stop, one SessionEnd: the tool uses travel in one batch; the
    # prompt's own heartbeat (UserPromptSubmit, which also brings notices) is one more.
    assert 2 <= tool_calls(orchestrator, "record_activity") <= 3
    assert {"app.py", "greeting.py"} <= set(TaskContext.objects.get(task_id="greeting").key_files)
    handoff = SessionHandoff.objects.get(from_session_id=session_id)
    assert handoff.summary

    first = model.scripted_requests[0].text()
    assert session_id in first and "MARKER-GREETING-7" in first
    assert f"in project `{key}`" in first  # the model knows which project it works in
    # Claude Code's own MCP client reached /mcp with the bearer header claude_setup wrote.
    last = model.scripted_requests[-1].body["messages"][-1]["content"][0]
    assert not last.get("is_error") and "MARKER-GREETING-7" in json.dumps(last)


def test_a_compaction_is_recorded_and_its_context_reaches_the_model_after_it(
        claude, project, orchestrator, api_token_live):
    create_task(orchestrator, api_token_live, project, "compacting", "MARKER-COMPACT-8 the cache")
    claude_setup(project, orchestrator, api_token_live, "compacting")
    steps = [*(call("Bash", command=f"echo {n}", description="count") for n in range(3)),
             say("Counted.")]
    with ClaudeStandIn(steps, compact_summary="The user had us count to three.") as model:
        first = claude.run(project, "count to three", model.url)
        claude.run(project, "/compact", model.url, resume=first.session_id)
        # Each -p run ends its orchestrator session (SessionEnd); the resumed one is new.
        session_id = our_session_id(project, first.session_id)
        after = len(model.requests)
        claude.run(project, "go on", model.url, resume=first.session_id)
    assert [r.kind for r in model.requests] == ["agent"] * 4 + ["compaction", "agent"]
    assert SessionDetail.objects.get(session_id=session_id).compaction_count == 1
    events = SessionEvent.objects.filter(session_id=session_id, event_type="system_event")
    assert {"pre_compact", "compaction_complete"} <= set(events.values_list("content", flat=True))
    # SessionStart(compact) re-injected the task context into the compacted conversation.
    seen = model.requests[after].text()
    assert f"compaction 1 of orchestrator session {session_id}" in seen
    assert "MARKER-COMPACT-8" in seen and "The user had us count to three." in seen


BUILD = "import time; time.sleep({seconds})  # {marker}"


def build_marker() -> str:
    """A marker for one test's build alone. Waiting for "the" build by a marker every
    crash test shared could find another test's: one the previous test's cleanup scan
    missed (the shell started it just after the scan) and still sleeping, or one running
    in another worker (TEST_WORKERS). The test then killed its agent before the agent had
    even started."""
    return f"MARKER-BUILD-{uuid.uuid4().hex[:12]}"


def processes_running(marker: str) -> list[int]:
    """Pids of processes whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(int(name))
    return found


@pytest.mark.parametrize("noticed_by", ["watchdog", "beat sweep", "next SessionStart"])
def test_after_a_kill_9_the_next_run_gets_the_recovery_prompt(
        noticed_by, claude, project, orchestrator, api_token_live, settings):
    """Claude Code killed during a long build. With the watchdog (the default) the crash is
    reported within 30 s with no later SessionStart and no sweep; without it (the two
    other cases) the beat sweep or the next SessionStart notices it."""
    create_task(orchestrator, api_token_live, project, "crashy", "MARKER-CRASHY-3 the parser")
    claude_setup(project, orchestrator, api_token_live, "crashy")
    marker = build_marker()
    command = f"python3 -c '{BUILD.format(seconds=120, marker=marker)}'"
    steps = [call("Edit", file_path=str(project / "app.py"), old_string="'hello'",
                  new_string="'half done'"),
             call("Bash", command=command, description="build"), say("never reached")]
    env = {} if noticed_by == "watchdog" else {"ORCHESTRATOR_WATCHDOG": "0"}
    with ClaudeStandIn(steps) as model:
        started = time.monotonic()
        process = claude.start(project, "rewrite the greeting", model.url, env=env)
        try:
            assert wait_for(lambda: processes_running(marker), timeout=60), (
                finish(process, started))
            process.kill()  # SIGKILL: no SessionEnd, no goodbye
            process.wait(timeout=10)
            killed = time.monotonic()
        finally:
            for pid in processes_running(marker):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    mapping = json.loads((project / ".claude" / "orchestrator" / "sessions.json").read_text())
    (crashed_id,) = [entry["sessionId"] for entry in mapping.values()]

    def status() -> str:
        return ActiveSession.objects.get(session_id=crashed_id).status

    if noticed_by == "watchdog":
        assert wait_for(lambda: status() == "crashed", timeout=30, interval=0.5)
        assert time.monotonic() - killed < 30
    else:
        time.sleep(3)
        assert status() == "active"  # nothing watched it
        if noticed_by == "beat sweep":
            # The beat job's sweep with a short threshold, instead of waiting five minutes.
            settings.CRASH_THRESHOLD_MINUTES = 0.02
            assert wait_for(lambda: crashed_id in detect_crashed_sessions(), timeout=15,
                            interval=0.3)
        # Else the next SessionStart finds the recorded Claude Code process gone without a
        # SessionEnd and reports the crash itself (the pid the hook recorded was the real
        # one).

    with ClaudeStandIn([say("Recovered.")]) as model:
        run = claude.run(project, "carry on", model.url)
    assert run.result["result"] == "Recovered."
    seen = model.scripted_requests[0].text()
    assert "Recovery Required: crash" in seen and crashed_id in seen
    # What was running when it died, from the transcript (the watchdog's report, or the
    # next SessionStart's when there was none), and no "(not set)" fields.
    assert "### When It Stopped" in seen and marker in seen
    assert "(interrupted)" in seen
    assert "(not set)" not in seen and "(no summary recorded)" not in seen
    # The killed run's last tool uses, sent after it died, are in the prompt.
    assert "`Edit`" in seen
    assert hook_tools(crashed_id) == ["Edit"]
    assert our_session_id(project, run.session_id) != crashed_id
    # The new session took the crashed one's task over.
    assert ActiveSession.objects.get(session_id=crashed_id).status == "recovered"


def test_a_tool_call_longer_than_the_crash_threshold_is_no_crash(
        claude, project, orchestrator, api_token_live, settings):
    """Claude Code sends nothing while a tool runs; the watchdog keeps the session alive
    while its process lives (the server here tells it to beat every second)."""
    create_task(orchestrator, api_token_live, project, "building", "the build")
    claude_setup(project, orchestrator, api_token_live, "building")
    settings.CRASH_THRESHOLD_MINUTES = 0.05  # 3 s without a heartbeat would be a crash
    command = f"python3 -c '{BUILD.format(seconds=12, marker=build_marker())}'"
    steps = [call("Bash", command=command, description="a long build"), say("Built.")]
    swept: list[str] = []
    with ClaudeStandIn(steps) as model:
        started = time.monotonic()
        process = claude.start(project, "build it", model.url)
        while process.poll() is None and time.monotonic() - started < 90:
            swept += detect_crashed_sessions()  # the beat job, every half second
            time.sleep(0.5)
        run = finish(process, started)
    assert run.result["result"] == "Built." and run.seconds > 12
    session_id = our_session_id(project, run.session_id)
    assert session_id not in swept
    assert ActiveSession.objects.get(session_id=session_id).status == "ended"
    assert not ActiveSession.objects.filter(status="crashed").exists()


def test_a_newcomer_is_tracked_from_the_first_edit_and_commits_no_secret(
        claude, tmp_path, orchestrator, api_token_live):
    """claude_setup with no flag but the URL (a newcomer's; the suite's server is not
    `make run`, whose URL setup would find itself), no task anywhere: the first session
    makes its branch's task, its edit lands there, and git sees no secret."""
    project = make_project(tmp_path / "shop", "https://github.com/acme/shop.git")
    claude_setup(project, orchestrator, None)
    steps = [call("Edit", file_path=str(project / "app.py"), old_string="'hello'",
                  new_string="'hello newcomer'"), say("Edited.")]
    with ClaudeStandIn(steps) as model:
        run = claude.run(project, "greet newcomers", model.url)
    session = ActiveSession.objects.get(session_id=our_session_id(project, run.session_id))
    assert session.task_id == "shop-main" and session.project_id == "github.com:acme:shop"
    task = TaskContext.objects.get(task_id="shop-main")
    assert task.name == "main" and task.key_files == ["app.py"]
    assert "works on task `shop-main` (created now for this git branch" in \
        model.scripted_requests[0].text()

    config = json.loads((project / ".claude" / "orchestrator" / "config.json").read_text())
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=project, capture_output=True, text=True, check=True).stdout
    listed = {line[3:] for line in status.splitlines()}  # "?? .mcp.json" -> ".mcp.json"
    assert listed == {"app.py", ".mcp.json", ".claude/.gitignore", ".worktreeinclude"}, status
    for path in listed:
        assert config["token"] not in (project / path).read_text(), path
    for private in (".claude/settings.local.json", ".claude/orchestrator/config.json",
                    ".claude/orchestrator/sessions.json",
                    ".claude/contexts/_session_context.json"):
        assert (project / private).exists(), private
        assert subprocess.run(["git", "check-ignore", "-q", private], cwd=project).returncode \
            == 0, private
    check = StringIO()
    call_command("claude_setup", "--project-dir", str(project), "--check", stdout=check)
    assert "no secret in a file git would commit" in check.getvalue()


def test_a_worktree_claude_makes_is_the_same_project_with_its_own_task(
        claude, tmp_path, orchestrator, api_token_live):
    """`claude --worktree feat`: a fresh checkout under .claude/worktrees/ gets the hooks
    and config through .worktreeinclude; its session is in the repository's project on a
    task of its own branch, so its edit of app.py conflicts with the main checkout's."""
    project = make_project(tmp_path / "shop", "https://github.com/acme/shop.git")
    claude_setup(project, orchestrator, None)
    with ClaudeStandIn([call("Edit", file_path=str(project / "app.py"),
                             old_string="'hello'", new_string="'hello main'"),
                        say("main edited")]) as model:
        claude.run(project, "edit in main", model.url)
    worktree = project / ".claude" / "worktrees" / "feat"
    with ClaudeStandIn([call("Edit", file_path=str(worktree / "app.py"),
                             old_string="'hello'", new_string="'hello feat'"),
                        say("feat edited")]) as model:
        run = claude.run(project, "edit in a worktree", model.url,
                         extra=("--worktree", "feat"))
    assert run.result["result"] == "feat edited"
    session = ActiveSession.objects.get(session_id=our_session_id(worktree, run.session_id))
    assert (session.project_id, session.task_id) == ("github.com:acme:shop",
                                                    "shop-worktree-feat")
    assert TaskContext.objects.get(task_id="shop-worktree-feat").key_files == ["app.py"]
    token = json.loads((project / ".claude" / "orchestrator" / "config.json").read_text())[
        "token"]
    answer = call_tool(orchestrator, token, "detect_conflicts",
                       {"conflictTypes": ["file_conflict"]})
    pairs = [{c["taskAId"], c["taskBId"]} for c in answer["detected"] + answer["existing"]]
    assert {"shop-main", "shop-worktree-feat"} in pairs


def test_the_service_down_mid_run_costs_the_agent_nothing_and_the_spool_arrives_later(
        claude, project, orchestrator, api_token_live):
    create_task(orchestrator, api_token_live, project, "offline", "MARKER-OFFLINE-5")
    claude_setup(project, orchestrator, api_token_live, "offline")
    stopped_at: list[float] = []

    def stop_the_service() -> None:
        orchestrator.stop()
        stopped_at.append(time.monotonic())

    steps = [call("Edit", file_path=str(project / "app.py"), old_string="'hello'",
                  new_string="'hello offline'"),
             call("Bash", command="echo working", description="runs while the service is down",
                  before=stop_the_service),
             call("Write", file_path=str(project / "later.py"), content="x = 1\n"),
             say("Finished without the service.")]
    with ClaudeStandIn(steps) as model:
        run = claude.run(project, "work offline", model.url)
    assert run.result["result"] == "Finished without the service."
    # Between two model requests after the outage: a tool, its Pre/PostToolUse hooks and
    # Claude Code's own work (~1-3 s here). A hook waiting on the dead service until
    # Claude Code's hook timeout (10 s, claude_setup) would show as a gap over it.
    times = [*stopped_at, *(r.received_at for r in model.scripted_requests[2:])]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert len(gaps) == 2 and max(gaps) < 8, gaps
    assert spooled(project), "nothing was spooled while the service was down"
    session_id = our_session_id(project, run.session_id)
    assert ActiveSession.objects.get(session_id=session_id).status == "active"

    # A new session while the service is still down gets the context mirrored locally.
    with ClaudeStandIn([say("Offline noted.")]) as model:
        offline = claude.run(project, "what now?", model.url)
    seen = model.scripted_requests[0].text()
    assert "Session orchestrator offline" in seen and "MARKER-OFFLINE-5" in seen
    offline_id = our_session_id(project, offline.session_id)

    orchestrator.start()
    time.sleep(HOOK_DOWN_SECONDS)
    with ClaudeStandIn([say("Back online.")]) as model:
        claude.run(project, "go on", model.url, resume=run.session_id)
    assert spooled(project) == []
    assert hook_tools(session_id) == ["Edit", "Bash", "Write"]
    assert ActiveSession.objects.get(session_id=session_id).status == "ended"
    assert SessionHandoff.objects.filter(from_session_id=session_id).exists()
    # The offline session's own start and end were replayed after the first one's.
    assert ActiveSession.objects.get(session_id=offline_id).status == "ended"


def run_two_agents_on_app_py(claude, orchestrator, token, projects, tasks):
    """Two Claude Codes at once, each in its directory on its task, both editing app.py
    once both are running; returns their results."""
    both_running = threading.Barrier(len(tasks), timeout=60)
    with contextlib.ExitStack() as stack:
        runs = []
        for project, name in zip(projects, tasks, strict=True):
            create_task(orchestrator, token, project, name, f"{name} changes")
            claude_setup(project, orchestrator, token, name)
            # Each agent edits only once both are running: the sessions overlap.
            steps = [call("Edit", file_path=str(project / "app.py"), old_string="'hello'",
                          new_string=f"'hello from {name}'", before=both_running.wait),
                     say(f"{name} done.")]
            runs.append((project, stack.enter_context(ClaudeStandIn(steps))))
        assert call_tool(orchestrator, token, "detect_conflicts", {
            "taskIds": list(tasks), "conflictTypes": ["file_conflict"]})["detected"] == []
        started = time.monotonic()
        processes = [claude.start(project, "edit app.py", model.url) for project, model in runs]
        results = [finish(process, started) for process in processes]
    assert [r.result["result"] for r in results] == [f"{name} done." for name in tasks]
    return results


def test_two_agents_editing_the_same_file_on_two_tasks_make_a_file_conflict(
        claude, tmp_path, orchestrator, api_token_live):
    tasks = ("alpha", "beta")
    first = make_project(tmp_path / "alpha", "git@github.com:acme/shop.git")
    projects = (first, clone_project(first, tmp_path / "beta"))  # two clones of one repo
    run_two_agents_on_app_py(claude, orchestrator, api_token_live, projects, tasks)

    assert set(TaskContext.objects.filter(task_id__in=tasks)
               .values_list("project_id", flat=True)) == {"github.com:acme:shop"}
    # Recorded as the second edit claimed the file (live claims); the detector finds the
    # same conflict again, as known.
    answer = call_tool(orchestrator, api_token_live, "detect_conflicts",
                       {"taskIds": list(tasks), "conflictTypes": ["file_conflict"]})
    assert answer["detected"] == []
    (conflict,) = answer["existing"]
    conflict = ContextConflict.objects.get(id=conflict["id"])
    conflict = {"taskAId": conflict.task_a_id, "taskBId": conflict.task_b_id,
                "evidence": conflict.evidence}
    assert {conflict["taskAId"], conflict["taskBId"]} == {"alpha", "beta"}
    assert "app.py" in conflict["evidence"]["actualValue"]


def test_two_repositories_on_one_server_are_two_projects_that_never_conflict(
        claude, tmp_path, orchestrator, api_token_live):
    """Issue 19's done-when: two repositories set up with claude_setup (no flags but the
    URL: a newcomer's setup, tokens issued per repository) against one server."""
    shop = make_project(tmp_path / "shop", "https://github.com/acme/shop.git")
    blog = make_project(tmp_path / "blog", "git@github.com:acme/blog.git")
    tasks = ("shop-cart", "blog-post")
    run_two_agents_on_app_py(claude, orchestrator, api_token_live, (shop, blog), tasks)

    keys = {"shop-cart": "github.com:acme:shop", "blog-post": "github.com:acme:blog"}
    assert dict(TaskContext.objects.filter(task_id__in=tasks)
                .values_list("task_id", "project_id")) == keys
    for task_id, key in keys.items():
        (session,) = ActiveSession.objects.filter(task_id=task_id)
        assert session.project_id == key
        assert SessionHandoff.objects.get(from_session_id=session.session_id).project_id == key
    # Both edited app.py at once; in two repositories that is no conflict.
    answer = call_tool(orchestrator, api_token_live, "detect_conflicts",
                       {"conflictTypes": ["file_conflict"]})
    assert [c for c in answer["detected"] if {c["taskAId"], c["taskBId"]} == set(tasks)] == []

    # A newcomer's setup (no --token) issues a token limited to the repository's project.
    newcomer = make_project(tmp_path / "blog-clone", "https://github.com/acme/blog")
    output = claude_setup(newcomer, orchestrator, None)
    assert "project github.com:acme:blog (from the git remote; registered already)" in output
    token = json.loads((newcomer / ".claude" / "orchestrator" / "config.json").read_text())[
        "token"]
    own = call_tool(orchestrator, token, "get_unified_context", {"taskId": "blog-post"})
    assert own["projectId"] == "github.com:acme:blog"
    with pytest.raises(urllib.error.HTTPError) as refused:
        call_tool(orchestrator, token, "get_unified_context", {"taskId": "shop-cart"})
    assert refused.value.code == 404
    assert json.loads(refused.value.read())["error"]["code"] == "E1610"
