"""The watchdog (orchestrator_hook/watchdog.py) against a real server: a live agent is never
swept as crashed however long a tool runs, a dead one is reported within seconds with what
it was doing, SessionEnd stops it, and it stays small.

The "agent" is a Python process that runs the SessionStart hook the way Claude Code does
(``sh -c``: the hook binds the watchdog to the shell's parent, this process) and then
waits, as Claude Code does during a long tool call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from orchestrator_hook import watchdog
from sessions.models import ActiveSession, SessionEvent
from sessions.services import recovery
from tests.client.conftest import Project, fixture, hook_argv
from tests.waiting import wait_for

CLAUDE = "11111111-1111-4111-8111-111111111111"
AGENT = """
import subprocess, sys, time
subprocess.run(sys.argv[1:], input=sys.stdin.buffer.read(), stdout=subprocess.DEVNULL,
               check=True)
print("started", flush=True)
time.sleep(600)
"""


@pytest.fixture
def project(live_api, tmp_path, settings):
    url, token = live_api
    # The live server runs in this process: its start_session answers this interval, which
    # the watchdog heartbeats at while the hooks are quiet.
    settings.HEARTBEAT_INTERVAL_MS = 1000
    return Project(tmp_path / "project", url, token)


def transcript_with_a_running_build(path) -> str:
    """A transcript whose last tool call has no result yet: the build was running."""
    lines = [
        {"type": "user", "message": {"role": "user", "content": "build it and run the tests"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Building now."},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash",
             "input": {"command": "python build.py --all"}}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def start_agent(project: Project, transcript: str | None = None) -> subprocess.Popen:
    payload = fixture("session_start_startup", cwd=str(project.root))
    if transcript:
        payload["transcript_path"] = transcript
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT, *hook_argv("SessionStart")], cwd=project.root,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(project.root)})
    agent.stdin.write(json.dumps(payload))
    agent.stdin.close()
    assert agent.stdout.readline().strip() == "started"
    return agent


def watchdog_pid(project: Project) -> int | None:
    return watchdog.watching(str(project.state), CLAUDE)


def test_a_live_agent_in_a_long_tool_call_is_never_swept(project, settings):
    agent = start_agent(project)
    try:
        session_id = project.mapped(CLAUDE)["sessionId"]
        assert wait_for(lambda: watchdog_pid(project), timeout=10)
        settings.CRASH_THRESHOLD_MINUTES = 0.05  # 3 s without a heartbeat is a crash
        deadline = time.monotonic() + 10  # the "tool call": 10 s of silence from the hooks
        while time.monotonic() < deadline:
            assert session_id not in recovery.detect_crashed_sessions()
            time.sleep(0.5)
        assert ActiveSession.objects.get(session_id=session_id).status == "active"
        # Small and idle (issue 20: <= 10 MB RSS, no measurable CPU while it waits).
        pid = watchdog_pid(project)
        with open(f"/proc/{pid}/status") as status:
            rss_kb = int(next(line for line in status if line.startswith("VmRSS")).split()[1])
        assert rss_kb <= 10 * 1024, rss_kb
        ticks = os.sysconf("SC_CLK_TCK")

        def cpu_seconds() -> float:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks

        before = cpu_seconds()
        time.sleep(5)
        assert cpu_seconds() - before < 0.1  # five polls and a few heartbeats
    finally:
        agent.kill()
        agent.wait()


def test_a_killed_agent_is_reported_crashed_within_seconds_with_its_running_tool(project):
    agent = start_agent(project, transcript_with_a_running_build(project.root / "t.jsonl"))
    session_id = project.mapped(CLAUDE)["sessionId"]
    assert wait_for(lambda: watchdog_pid(project), timeout=10)
    agent.send_signal(signal.SIGKILL)
    agent.wait()
    killed = time.monotonic()
    assert wait_for(lambda: ActiveSession.objects.get(session_id=session_id).status
                    == "crashed", timeout=30), project.log()
    assert time.monotonic() - killed < 30
    report = SessionEvent.objects.get(session_id=session_id, content="crash_report").parts
    assert report["toolInFlight"] == {"tool": "Bash", "summary": "Bash python build.py --all"}
    assert report["lastRequest"] == "build it and run the tests"
    assert report["detectedBy"] == "watchdog"
    prompt = recovery.check_recovery()["sessions"][0]["resumePrompt"]
    assert "### When It Stopped" in prompt and "`Bash` python build.py --all" in prompt
    assert "(not set)" not in prompt and "(no summary recorded)" not in prompt
    assert wait_for(lambda: (project.mapped(CLAUDE) or {}).get("crashed"), timeout=10)
    assert watchdog_pid(project) is None


def test_session_end_stops_the_watchdog_without_a_crash(project):
    agent = start_agent(project)
    try:
        session_id = project.mapped(CLAUDE)["sessionId"]
        assert wait_for(lambda: watchdog_pid(project), timeout=10)
        project.hook("SessionEnd", fixture("session_end_other", cwd=str(project.root)),
                     env={"ORCHESTRATOR_WATCHDOG": "1"})
        assert wait_for(lambda: watchdog_pid(project) is None, timeout=10)
    finally:
        agent.kill()
        agent.wait()
    time.sleep(3)  # longer than a poll and the grace: no crash report follows
    assert ActiveSession.objects.get(session_id=session_id).status == "ended"
    assert not SessionEvent.objects.filter(session_id=session_id,
                                           content="crash_report").exists()
