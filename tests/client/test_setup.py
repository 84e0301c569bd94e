"""manage.py claude_setup: merges, never clobbers, is idempotent, and dry-runs."""

from __future__ import annotations

import json
import shlex
import stat
import subprocess
import sys
import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from foundation.core.models import ApiToken, Project, hash_token
from orchestrator_hook import __version__, install
from tests.client.conftest import HOOK, fixture

pytestmark = pytest.mark.django_db


def setup(project, *args: str) -> str:
    out = StringIO()
    call_command("claude_setup", "--project-dir", str(project), *args, stdout=out,
                 stderr=StringIO())
    return out.getvalue()


def read(path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    return root


def test_writes_hooks_mcp_and_config_with_an_issued_token(project):
    out = setup(project, "--url", "http://127.0.0.1:8123", "--task", "feature-x")
    # The hooks name this machine's paths: they go in the personal, git-ignored settings
    # (no shared settings.json is created).
    assert not (project / ".claude" / "settings.json").exists()
    settings = read(project / ".claude" / "settings.local.json")
    assert set(settings["hooks"]) == {"SessionStart", "PostToolUse", "PostToolUseFailure",
                                      "Stop", "PreCompact", "PostCompact", "SessionEnd",
                                      "SubagentStart", "SubagentStop", "StopFailure",
                                      "PreToolUse", "UserPromptSubmit"}
    # PreToolUse notes what is running: asynchronous, it never delays a tool; edits get
    # a second, synchronous group: the check before an edit (it may refuse it).
    noting, checking = settings["hooks"]["PreToolUse"]
    assert noting["hooks"][0]["async"] is True and noting["matcher"] == "*"
    assert checking["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    assert "async" not in checking["hooks"][0]
    assert shlex.split(checking["hooks"][0]["command"])[-1] == "PreEdit"
    command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    assert shlex.split(command) == [sys.executable, "-S", str(install.LAUNCHER), "PostToolUse"]
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "*"
    config = read(project / ".claude" / "orchestrator" / "config.json")
    assert config["url"] == "http://127.0.0.1:8123" and config["taskId"] == "feature-x"
    # No git here: the directory is the project, registered, and the token limited to it.
    key = "dir:" + str(project).strip("/").replace("/", ":")
    assert config["projectId"] == key and Project.objects.filter(pk=key).exists()
    token = ApiToken.objects.get(token_hash=hash_token(config["token"]))
    assert token.name == f"claude-code:{project}" and token.projects == [key]
    # .mcp.json holds no secret: it names a variable Claude Code expands from the
    # git-ignored .claude/settings.local.json; the model gets the agent's tools.
    server = read(project / ".mcp.json")["mcpServers"]["orchestrator"]
    assert server == {"type": "http", "url": "http://127.0.0.1:8123/mcp/agent",
                      "headers": {"Authorization": "Bearer ${ORCHESTRATOR_TOKEN}",
                                  "X-Orchestrator-Project": key}}
    assert config["token"] not in (project / ".mcp.json").read_text()
    assert settings["env"] == {"ORCHESTRATOR_TOKEN": config["token"]}
    # Files holding the token are readable by their owner only, and never committed.
    for secret in (project / ".claude" / "orchestrator" / "config.json",
                   project / ".claude" / "settings.local.json"):
        assert not secret.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH)
    assert (project / ".claude" / "orchestrator" / ".gitignore").read_text() == "*\n"
    assert (project / ".claude" / "contexts" / ".gitignore").read_text() == "*\n"
    assert "settings.local.json" in (project / ".claude" / ".gitignore").read_text()
    # A worktree Claude Code makes gets the hooks and the client's config.
    assert (project / ".worktreeinclude").read_text().splitlines()[1:] == [
        ".claude/settings.local.json", ".claude/orchestrator/config.json"]
    assert "created" in out and "warning" not in out


def test_keeps_everything_else_and_is_idempotent(project):
    theirs = {"model": "opus", "hooks": {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(theirs))
    (project / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"other": {"type": "stdio", "command": "x"}}}))
    setup(project, "--token", "tok-1")
    assert read(project / ".claude" / "settings.json") == theirs  # ours are not added there
    local = read(project / ".claude" / "settings.local.json")
    assert len(local["hooks"]["PostToolUse"]) == 1
    assert set(read(project / ".mcp.json")["mcpServers"]) == {"other", "orchestrator"}

    before = {p: p.read_text() for p in project.rglob("*") if p.is_file()}
    out = setup(project)  # no token given: the configured one is reused, nothing issued
    after = {p: p.read_text() for p in project.rglob("*") if p.is_file()}
    assert before == after
    assert "issued" not in out and out.count("unchanged") == 8


def test_dry_run_prints_a_diff_and_writes_nothing(project):
    out = setup(project, "--token", "secret-token-123", "--dry-run")
    assert "+++ " in out and "launch.py SessionStart" in out
    assert "secret-token-123" not in out  # masked
    assert "nothing written" in out
    assert not (project / ".claude" / "settings.json").exists()
    assert not (project / ".mcp.json").exists()
    assert ApiToken.objects.count() == 0


def test_stdio_transport_runs_the_management_command(project):
    setup(project, "--token", "t", "--mcp-transport", "stdio")
    server = read(project / ".mcp.json")["mcpServers"]["orchestrator"]
    key = read(project / ".claude" / "orchestrator" / "config.json")["projectId"]
    assert server["type"] == "stdio"
    assert server["args"][-4:] == ["mcp_stdio", "--project", key, "--agent-tools"]
    # The database credentials the stdio server needs live in settings.local.json too.
    assert all(value.startswith("${ORCHESTRATOR_STDIO_") for value in server.get("env", {})
               .values())


def test_a_settings_file_that_is_not_an_object_is_refused(project):
    (project / ".claude" / "settings.json").write_text("[1, 2]")
    with pytest.raises(CommandError, match="not a JSON object"):
        setup(project, "--token", "t")
    assert (project / ".claude" / "settings.json").read_text() == "[1, 2]"


def test_an_unknown_project_dir_is_an_error(tmp_path):
    with pytest.raises(CommandError, match="not a directory"):
        setup(tmp_path / "missing", "--token", "t")


def test_a_taken_token_name_is_an_error(project):
    ApiToken.issue("mine")
    with pytest.raises(CommandError, match="already exists"):
        setup(project, "--token-name", "mine")


def our_commands(settings: dict, event: str) -> list[str]:
    return [h["command"] for group in settings["hooks"][event] for h in group["hooks"]
            if install.is_our_command(h["command"])]


def test_the_command_it_writes_runs_the_hook_without_site(project):
    setup(project, "--url", "http://127.0.0.1:9", "--token", "t")
    command = our_commands(read(project / ".claude" / "settings.local.json"), "PostToolUse")[0]
    # Inside the flush interval, nothing spooled: the tool use is only buffered.
    session = "11111111-1111-4111-8111-111111111111"
    activity = project / ".claude" / "orchestrator" / "activity"
    activity.mkdir(parents=True)
    (activity / f"{session}.flushed").touch()
    payload = {**fixture("post_tool_use_edit"), "cwd": str(project)}
    done = subprocess.run(["sh", "-c", command], input=json.dumps(payload), text=True,
                          capture_output=True, timeout=30, cwd=project,
                          env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(project),
                               "PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0 and done.stdout == "", done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "orchestrator_hook.lite" in imported
    assert not imported & {"site", "pathlib", "dataclasses", "typing"}, imported
    (line,) = (activity / f"{session}.jsonl").read_text().splitlines()
    assert json.loads(line)["tool"] == "Edit"


def test_an_older_setup_is_replaced_not_duplicated(project):
    old = {"hooks": {event: [{"hooks": [{"type": "command", "timeout": 10,
                                          "command": f"/old/venv/bin/orchestrator-hook {event}"}]}]
                     for event in install.HOOK_EVENTS}}
    old["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify-send done"}]})
    (project / ".claude" / "settings.json").write_text(json.dumps(old))
    setup(project, "--token", "t")
    # The older setup's entries leave the shared settings (theirs stay); ours are in the
    # personal settings, once each.
    assert read(project / ".claude" / "settings.json") == {"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
    settings = read(project / ".claude" / "settings.local.json")
    for event in install.HOOK_EVENTS:
        command, *edit_check = our_commands(settings, event)
        assert shlex.split(command)[1:] == ["-S", str(install.LAUNCHER), event]
        assert [shlex.split(c)[-1] for c in edit_check] == (
            ["PreEdit"] if event in install.EDIT_CHECK_GROUPS else [])


def test_hook_command_still_chooses_an_executable(project):
    setup(project, "--token", "t", "--hook-command", HOOK)
    settings = read(project / ".claude" / "settings.local.json")
    assert our_commands(settings, "SessionEnd") == [shlex.join([HOOK, "SessionEnd"])]
    setup(project)  # back to the launcher: replaced, not added
    (command,) = our_commands(read(project / ".claude" / "settings.local.json"),
                              "SessionEnd")
    assert str(install.LAUNCHER) in command


def test_a_missing_hook_command_is_an_error(project, tmp_path):
    with pytest.raises(CommandError, match="does not exist"):
        setup(project, "--token", "t", "--hook-command", str(tmp_path / "nope"))


def test_commands_are_quoted_for_the_shell(tmp_path):
    odd = tmp_path / "it's a \"dir\" $HOME"
    odd.mkdir()
    (odd / "python").symlink_to(sys.executable)
    (odd / "orchestrator_hook").symlink_to(install.LAUNCHER.parent)
    runner = [str(odd / "python"), "-S", str(odd / "orchestrator_hook" / "launch.py")]
    assert install.is_our_command(install.hook_command(runner, "Stop"))
    done = subprocess.run(["sh", "-c", install.hook_command(runner, "--version")],
                          capture_output=True, text=True, timeout=30)
    assert done.stdout == f"orchestrator-hook {__version__}\n", done.stderr


def test_setup_finds_the_service_make_run_recorded(project, tmp_path, monkeypatch):
    import os

    from orchestrator.ops.serve import forget_service, record_service

    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("ORCHESTRATOR_DATA_DIR", str(data))
    monkeypatch.delenv("PORT", raising=False)
    record_service(data, "http://127.0.0.1:8765")  # this process stands in for make run
    assert json.loads((data / "service.json").read_text())["pid"] == os.getpid()
    out = setup(project, "--token", "t")
    assert read(project / ".claude" / "orchestrator" / "config.json")["url"] == \
        "http://127.0.0.1:8765"
    assert "where `make run` serves" in out
    forget_service(data)
    monkeypatch.setenv("PORT", "8123")
    setup(project, "--token", "t")
    assert read(project / ".claude" / "orchestrator" / "config.json")["url"] == \
        "http://127.0.0.1:8123"


def test_a_literal_token_in_an_existing_mcp_json_is_warned_about(project):
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "orchestrator": {"type": "http", "url": "http://x/mcp",
                         "headers": {"Authorization": "Bearer orch_leaked"}},
        "db": {"type": "stdio", "command": "x",
               "env": {"DATABASE_URL": "postgresql://me:secret@db/app"}},
        "fine": {"type": "http", "url": "http://y", "headers": {"Authorization":
                                                                "Bearer ${TOKEN}"}}}}))
    err = StringIO()
    call_command("claude_setup", "--project-dir", str(project), "--token", "t",
                 stdout=StringIO(), stderr=err)
    warning = err.getvalue()
    assert "orchestrator: headers.Authorization" in warning
    assert "db: env.DATABASE_URL" in warning and "fine" not in warning
    assert "rewritten without its token" in warning
    assert "orch_leaked" not in (project / ".mcp.json").read_text()  # ours is rewritten


def test_check_reports_the_service_token_spool_and_secrets(project, live_api):
    url, token = live_api
    setup(project, "--url", url, "--token", token)
    out = StringIO()
    call_command("claude_setup", "--project-dir", str(project), "--check", stdout=out)
    report = out.getvalue()
    assert "ok       service" in report and "ok       token: accepted" in report
    assert "ok       spool: empty" in report and "all good" in report
    spool = project / ".claude" / "orchestrator" / "spool"
    spool.mkdir()
    old = time.time_ns() - 20 * 60 * 10**9
    (spool / f"{old:020d}-0000001-heartbeat.json").write_text("{}")
    import os

    os.utime(spool / f"{old:020d}-0000001-heartbeat.json", (old / 1e9, old / 1e9))
    with pytest.raises(CommandError, match="1 problem"):
        call_command("claude_setup", "--project-dir", str(project), "--check",
                     stdout=(out := StringIO()))
    assert "PROBLEM  spool: 1 call(s) waiting, the oldest 20 min old" in out.getvalue()


def test_check_of_a_directory_not_set_up(tmp_path):
    with pytest.raises(CommandError, match="problem"):
        call_command("claude_setup", "--project-dir", str(tmp_path), "--check",
                     stdout=StringIO())
