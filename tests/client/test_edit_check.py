"""The check before an edit (orchestrator_hook.edit_check) against a real server: two
Claude Code sessions of one repository (a clone and its worktree, on two branches and so
two tasks) editing the same file; the warning, the block, the holder's notice, an ended
session's claims, a file of one's own checked once, and the service down."""

from __future__ import annotations

import subprocess

import pytest

from claims.models import FileClaim
from conflicts.models import ContextConflict
from sessions.models import SessionEvent
from tests.client.conftest import Project, dead_url, fixture
from tests.client.test_live_sessions import CLAUDE, FAST_FLUSH, OTHER, start

PROJECT = "github.com:acme:shop"


def pre_edit(project: Project, path: str, claude: str, tool: str = "Edit",
             env: dict[str, str] | None = None):
    payload = fixture("pre_tool_use_bash", session_id=claude, tool_name=tool,
                      tool_use_id=f"toolu_{claude[:8]}_{path.replace('/', '_')}",
                      tool_input={"file_path": str(project.root / path),
                                  "old_string": "a", "new_string": "b"})
    return project.hook("PreEdit", payload, env=env)


@pytest.fixture
def clone_and_worktree(shop, tmp_path):
    main = shop("shop", branch="main")
    subprocess.run(["git", "worktree", "add", "-q", "-b", "feat", str(tmp_path / "shop-feat")],
                   cwd=main.root, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    feat = Project(tmp_path / "shop-feat", *main_config(main))
    feat.configure(*main_config(main))
    config = (main.state / "config.json").read_text()
    (feat.state / "config.json").write_text(config)
    start(main, CLAUDE)
    start(feat, OTHER)
    return main, feat


def main_config(project: Project) -> tuple[str, str]:
    import json

    config = json.loads((project.state / "config.json").read_text())
    return config["url"], config["token"]


def decision(run) -> dict:
    return (run.output or {}).get("hookSpecificOutput") or {}


@pytest.mark.django_db(transaction=True)
def test_the_second_agent_is_warned_before_its_edit_and_the_first_told_next(
        clone_and_worktree):
    main, feat = clone_and_worktree
    first = pre_edit(main, "src/shared.py", CLAUDE)
    assert first.returncode == 0 and first.output is None  # nobody else: nothing said
    second = pre_edit(feat, "src/shared.py", OTHER)
    said = decision(second)
    assert said["hookEventName"] == "PreToolUse" and "permissionDecision" not in said
    text = said["additionalContext"]
    assert "src/shared.py" in text and "shop-main" in text and "file_conflict" in text
    # The conflict exists now, before either flush.
    [conflict] = ContextConflict.objects.filter(conflict_type="file_conflict")
    assert {conflict.task_a_id, conflict.task_b_id} == {"shop-main", "shop-feat"}
    # The first agent's next hook answer that can carry context says it (its flush).
    payload = fixture("post_tool_use_edit", session_id=CLAUDE)
    payload["tool_input"]["file_path"] = str(main.root / "src/other.py")
    told = main.hook("PostToolUse", payload, env=FAST_FLUSH)
    assert decision(told)["hookEventName"] == "PostToolUse"
    assert "began editing `src/shared.py`" in decision(told)["additionalContext"]
    assert str(conflict.id) in decision(told)["additionalContext"]
    # Said once; a new prompt carries nothing more.
    prompt = main.hook("UserPromptSubmit", fixture("user_prompt_submit", session_id=CLAUDE))
    assert prompt.output is None
    # Editing it again warns no one again.
    assert pre_edit(feat, "src/shared.py", OTHER).output is None


@pytest.mark.django_db(transaction=True)
def test_a_new_prompt_carries_the_notice_when_no_flush_did(clone_and_worktree):
    main, feat = clone_and_worktree
    pre_edit(main, "app.py", CLAUDE)
    pre_edit(feat, "app.py", OTHER)
    prompt = main.hook("UserPromptSubmit", fixture("user_prompt_submit", session_id=CLAUDE))
    said = decision(prompt)
    assert said["hookEventName"] == "UserPromptSubmit"
    assert "began editing `app.py`" in said["additionalContext"]


@pytest.mark.django_db(transaction=True)
def test_block_policy_denies_the_edit_with_the_reason(clone_and_worktree, tools_live):
    main, feat = clone_and_worktree
    tools_live("update_global_context", {"projectId": PROJECT, "orchestratorContext": {
        "fileClaims": {"policy": "block", "ignore": ["*.lock"]}}})
    pre_edit(main, "src/shared.py", CLAUDE)
    pre_edit(main, "poetry.lock", CLAUDE)
    denied = decision(pre_edit(feat, "src/shared.py", OTHER, tool="Write"))
    assert denied["permissionDecision"] == "deny"
    assert "shop-main" in denied["permissionDecisionReason"]
    assert pre_edit(feat, "poetry.lock", OTHER).output is None  # ignored path
    assert not ContextConflict.objects.exists()
    assert SessionEvent.objects.filter(content="edit_blocked").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_file_of_ones_own_is_checked_once_a_shared_one_before_every_edit(
        clone_and_worktree):
    main, feat = clone_and_worktree

    def touched(path: str, task_id: str):
        return FileClaim.objects.get(path=path, task_id=task_id).touched_at

    assert pre_edit(main, "src/mine.py", CLAUDE).output is None
    first = touched("src/mine.py", "shop-main")
    again = pre_edit(main, "src/mine.py", CLAUDE)
    assert again.returncode == 0 and again.output is None
    assert touched("src/mine.py", "shop-main") == first  # no call: the claim is ours
    # claimReuseSeconds 0 (here from the environment): every edit is checked.
    pre_edit(main, "src/mine.py", CLAUDE, env={"ORCHESTRATOR_CLAIM_REUSE_SECONDS": "0"})
    assert touched("src/mine.py", "shop-main") > first

    # A file another task holds: the second agent is warned, and checked again next time.
    pre_edit(main, "src/shared.py", CLAUDE)
    assert "src/shared.py" in decision(pre_edit(feat, "src/shared.py", OTHER))[
        "additionalContext"]
    warned = touched("src/shared.py", "shop-feat")
    pre_edit(feat, "src/shared.py", OTHER)
    assert touched("src/shared.py", "shop-feat") > warned


@pytest.mark.django_db(transaction=True)
def test_an_ended_sessions_claims_warn_no_one(clone_and_worktree):
    main, feat = clone_and_worktree
    pre_edit(main, "src/shared.py", CLAUDE)
    main.hook("SessionEnd", fixture("session_end_other", session_id=CLAUDE))
    assert pre_edit(feat, "src/shared.py", OTHER).output is None


@pytest.mark.django_db(transaction=True)
def test_the_service_down_costs_the_edit_nothing(clone_and_worktree):
    main, _ = clone_and_worktree
    main.configure(dead_url(), "token")
    run = pre_edit(main, "src/shared.py", CLAUDE)
    assert run.returncode == 0 and run.stdout == ""
    assert "edit check skipped" in (main.state / "hook.log").read_text()
    # The next check skips the call at once (the down marker).
    assert pre_edit(main, "src/shared.py", CLAUDE).stdout == ""
