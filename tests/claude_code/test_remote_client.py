"""A developer's machine joins the server with the agent client alone (issue 36): a fresh
virtualenv holding only the client's wheel (no Django: ``import django`` fails there),
``orchestrator-agent setup --url URL --enroll CODE --project-dir DIR`` against the server
reached through a path-prefixed reverse proxy on another loopback address, then the real
Claude Code in DIR tracked as on the server's own machine."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from claims.models import FileClaim
from contexts.models import TaskContext
from foundation.core.models import ApiToken
from foundation.core.tools import ToolContext, call_tool
from orchestrator_hook.project import identify
from sessions.models import ActiveSession, SessionHandoff
from tests.agent_runner import finish
from tests.claude_code.conftest import make_project
from tests.claude_code.orchestrated import call_tool as call_over_http
from tests.claude_code.orchestrated import our_session_id
from tests.claude_code.proxy import PrefixProxy
from tests.claude_code.test_claude_code_e2e import BUILD, build_marker, processes_running
from tests.model_standins import ClaudeStandIn, call, say
from tests.waiting import wait_for

pytestmark = pytest.mark.claude_code

ROOT = Path(__file__).resolve().parents[2]  # the server's checkout
CLIENT = ROOT / "client"
# Another loopback address than the server's 127.0.0.1.
PROXY_HOST = "127.0.0.2"
WARNING = "Session orchestrator: another agent is editing the same file."


@pytest.fixture(scope="session")
def client_venv(tmp_path_factory) -> Path:
    """A virtualenv with the client's wheel and nothing else, as `pip install` of the
    wheel a team publishes leaves it (built here from client/ as `make install` builds
    it: setuptools from the package index pip is configured with; installed with none)."""
    base = tmp_path_factory.mktemp("client-only")
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                    "-q", "-w", str(wheels), str(CLIENT)], check=True, capture_output=True)
    (wheel,) = wheels.glob("session_orchestrator_agent-*.whl")
    venv = base / "venv"
    python = getattr(sys, "_base_executable", None) or "python3"
    # Nothing of this process' environment (PYTHONPATH names the checkout).
    clean = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True,
                   env=clean)
    subprocess.run([venv / "bin" / "pip", "install", "-q", "--no-index", "--no-deps",
                    str(wheel)], check=True, capture_output=True, env=clean)
    no_django = subprocess.run([venv / "bin" / "python", "-c", "import django"],
                               capture_output=True, env=clean)
    assert no_django.returncode != 0  # the client stands alone
    return venv


def agent(venv: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``orchestrator-agent`` of the client-only venv, with no PYTHONPATH to the server."""
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([str(venv / "bin" / "orchestrator-agent"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60, env=env)


def files_setup_wrote(project: Path) -> list[Path]:
    found = [project / ".mcp.json", project / ".worktreeinclude",
             project / ".git" / "info" / "exclude"]
    found += [p for p in (project / ".claude").rglob("*") if p.is_file()]
    return [p for p in found if p.exists()]


def test_a_laptop_enrolls_through_a_prefixed_proxy_and_is_tracked_as_today(
        claude, tmp_path, orchestrator, client_venv, settings):
    project = make_project(tmp_path / "shop", "git@github.com:acme/shop.git")
    key = identify(project).key
    call_tool("create_project", {"projectId": key, "name": "shop"},
              ToolContext("command", actor="test"))
    out = StringIO()
    call_command("create_enrollment", "--project", key, stdout=out)
    code = out.getvalue().strip().splitlines()[-1]

    with PrefixProxy(PROXY_HOST, "127.0.0.1", orchestrator.port) as proxy:
        done = agent(client_venv, "setup", "--url", proxy.url, "--enroll", code,
                     "--project-dir", str(project), cwd=tmp_path)
        assert done.returncode == 0, (done.stdout, done.stderr)
        assert "issued API token 'agent:" in done.stdout
        # The code was for one machine: a second exchange is refused, nothing written.
        again = agent(client_venv, "setup", "--url", proxy.url, "--enroll", code,
                      "--project-dir", str(tmp_path), cwd=tmp_path)
        assert again.returncode == 1 and "refused" in again.stderr
        assert not (tmp_path / ".claude").exists()

        config = json.loads((project / ".claude" / "orchestrator" / "config.json").read_text())
        assert config["url"] == proxy.url and config["projectId"] == key
        token = ApiToken.objects.get(name=f"agent:{os.uname().nodename}:{project}")
        assert token.projects == [key]
        # Nothing setup wrote names the server's checkout: hooks run the client's venv.
        # (A path inside it, or the checkout itself; /tmp/ci1-pt is not inside /tmp/ci1.)
        checkout = re.compile(re.escape(str(ROOT)) + r'(?=[/"\\]|$)', re.MULTILINE)
        for path in files_setup_wrote(project):
            assert not checkout.search(path.read_text(errors="replace")), path
        hooks = json.loads((project / ".claude" / "settings.local.json").read_text())["hooks"]
        command = hooks["SessionStart"][0]["hooks"][0]["command"]
        assert command.startswith(str(client_venv / "bin" / "python")), command
        for private in (".claude/settings.local.json", ".claude/orchestrator/config.json"):
            assert (project / private).stat().st_mode & 0o777 == 0o600, private

        # The first run: edits app.py, then dies (kill -9) in a long build.
        marker = build_marker()
        steps = [call("Edit", file_path=str(project / "app.py"), old_string="'hello'",
                      new_string="'hello laptop'"),
                 call("Bash", command=f"python3 -c '{BUILD.format(seconds=120, marker=marker)}'",
                      description="build"),
                 say("never reached")]
        with ClaudeStandIn(steps) as model:
            started = time.monotonic()
            process = claude.start(project, "greet laptops", model.url)
            try:
                assert wait_for(lambda: processes_running(marker), timeout=60), (
                    finish(process, started))
                process.kill()  # SIGKILL: no SessionEnd
                process.wait(timeout=10)
                killed = time.monotonic()
            finally:
                for pid in processes_running(marker):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        mapping = json.loads((project / ".claude" / "orchestrator" / "sessions.json")
                             .read_text())
        (crashed_id,) = [entry["sessionId"] for entry in mapping.values()]
        session = ActiveSession.objects.get(session_id=crashed_id)
        # The task of the branch, made by the first session; its edit claimed app.py.
        assert (session.task_id, session.project_id) == ("shop-main", key)
        assert FileClaim.objects.filter(session_id=crashed_id, path="app.py").exists()
        # The watchdog, through the proxy, reported the kill within 30 s, with the tool
        # uses the killed run had not sent yet: keyFiles from its first edit.
        assert wait_for(lambda: ActiveSession.objects.get(session_id=crashed_id).status
                        == "crashed", timeout=30, interval=0.5)
        assert time.monotonic() - killed < 30
        assert wait_for(lambda: TaskContext.objects.get(task_id="shop-main").key_files
                        == ["app.py"], timeout=30, interval=0.5)

        # Meanwhile another task's live agent took app.py (a session on the server).
        admin = ApiToken.issue(f"other-{time.monotonic_ns()}", "admin")[1]
        call_over_http(orchestrator, admin, "create_task", {
            "taskId": "other-task", "name": "other", "projectId": key,
            "status": "in_progress"})
        other = call_over_http(orchestrator, admin, "start_session",
                               {"taskId": "other-task", "agentId": "other-agent"})
        call_over_http(orchestrator, admin, "claim_files",
                       {"sessionId": other["sessionId"], "paths": ["app.py"]})

        # The next session gets the resume prompt, is warned at its edit of app.py, ends,
        # and leaves a handoff note.
        steps = [call("Edit", file_path=str(project / "app.py"), old_string="'hello laptop'",
                      new_string="'hello again'"), say("Recovered.")]
        with ClaudeStandIn(steps) as model:
            run = claude.run(project, "carry on", model.url)
        assert run.result["result"] == "Recovered."
        assert "Recovery Required: crash" in model.scripted_requests[0].text()
        after_edit = model.scripted_requests[1].text()
        assert WARNING in after_edit and "other-task" in after_edit, after_edit[-2000:]
        resumed = our_session_id(project, run.session_id)
        assert ActiveSession.objects.get(session_id=resumed).task_id == "shop-main"
        assert SessionHandoff.objects.filter(from_session_id=resumed).exists()
        assert any(r.startswith("POST /orchestrator/mcp") for r in proxy.requests)

        # setup --check from the client alone: service, token, project, spool, watchdogs.
        check = agent(client_venv, "setup", "--check", "--project-dir", str(project))
        assert check.returncode == 0, check.stdout + check.stderr
        for line in ("ok       service: ", "ok       token: accepted; reaches " + key,
                     f"ok       project: {key}", "ok       watchdogs: ",
                     "ok       secrets: no secret in a file git would commit"):
            assert line in check.stdout, check.stdout
        # A hook that outlasts its budget (SessionEnd has 1 s, start-up included, and a
        # loaded machine behind a proxy can take longer) spools its call for the next hook:
        # a fresh spool is a note, not a problem. A stale one would fail the check above.
        assert re.search(r"^(ok       spool: empty|note     spool: \d+ call\(s\) waiting, "
                         r"the oldest 0 min old)", check.stdout, re.MULTILINE), check.stdout

    # git sees no secret.
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=project, capture_output=True, text=True, check=True).stdout
    listed = {line[3:] for line in status.splitlines()}
    assert listed == {"app.py", ".mcp.json", ".claude/.gitignore", ".worktreeinclude"}, status
    for path in listed:
        assert config["token"] not in (project / path).read_text(), path
