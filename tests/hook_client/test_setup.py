"""manage.py claude_setup: merges, never clobbers, is idempotent, and dry-runs."""

from __future__ import annotations

import json
import stat
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from orchestrator.models import ApiToken, hash_token

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
    settings = read(project / ".claude" / "settings.json")
    assert set(settings["hooks"]) == {"SessionStart", "PostToolUse", "PostToolUseFailure",
                                      "Stop", "PreCompact", "PostCompact", "SessionEnd"}
    command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    assert command.endswith("orchestrator-hook PostToolUse")
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "*"
    config = read(project / ".claude" / "orchestrator" / "config.json")
    assert config["url"] == "http://127.0.0.1:8123" and config["taskId"] == "feature-x"
    token = ApiToken.objects.get(token_hash=hash_token(config["token"]))
    assert token.name == f"claude-code:{project}"
    server = read(project / ".mcp.json")["mcpServers"]["orchestrator"]
    assert server == {"type": "http", "url": "http://127.0.0.1:8123/mcp",
                      "headers": {"Authorization": f"Bearer {config['token']}"}}
    # Files holding the token are readable by their owner only, and never committed.
    mode = (project / ".claude" / "orchestrator" / "config.json").stat().st_mode
    assert not mode & (stat.S_IRGRP | stat.S_IROTH)
    assert (project / ".claude" / "orchestrator" / ".gitignore").read_text() == "*\n"
    assert "created" in out and "warning" not in out


def test_keeps_everything_else_and_is_idempotent(project):
    theirs = {"model": "opus", "hooks": {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(theirs))
    (project / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"other": {"type": "stdio", "command": "x"}}}))
    setup(project, "--token", "tok-1")
    settings = read(project / ".claude" / "settings.json")
    assert settings["model"] == "opus"
    assert settings["hooks"]["Notification"] == theirs["hooks"]["Notification"]
    assert settings["hooks"]["PostToolUse"][0] == theirs["hooks"]["PostToolUse"][0]
    assert len(settings["hooks"]["PostToolUse"]) == 2
    assert set(read(project / ".mcp.json")["mcpServers"]) == {"other", "orchestrator"}

    before = {p: p.read_text() for p in project.rglob("*") if p.is_file()}
    out = setup(project)  # no token given: the configured one is reused, nothing issued
    after = {p: p.read_text() for p in project.rglob("*") if p.is_file()}
    assert before == after
    assert "issued" not in out and out.count("unchanged") == 4


def test_dry_run_prints_a_diff_and_writes_nothing(project):
    out = setup(project, "--token", "secret-token-123", "--dry-run")
    assert "+++ " in out and "orchestrator-hook SessionStart" in out
    assert "secret-token-123" not in out  # masked
    assert "nothing written" in out
    assert not (project / ".claude" / "settings.json").exists()
    assert not (project / ".mcp.json").exists()
    assert ApiToken.objects.count() == 0


def test_stdio_transport_runs_the_management_command(project):
    setup(project, "--token", "t", "--mcp-transport", "stdio")
    server = read(project / ".mcp.json")["mcpServers"]["orchestrator"]
    assert server["type"] == "stdio" and server["args"][-1] == "mcp_stdio"


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
