"""``claude_setup --agent codex|gemini``: the setup of the other agents (issue 37).

The client owns the files' formats (``orchestrator_hook.agents.setup``); this module picks
what of Claude Code's plan every agent needs (the client's ``config.json`` with the URL,
token, project and task, its git-ignores) and adds the agent's own files, then its trust.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from orchestrator_hook import agents
from orchestrator_hook.agents import setup
from orchestrator_hook.install import MIRROR_DIR, STATE_DIR, FileChange

# Executable -> agent kind, in the order detect() prefers them.
EXECUTABLES = (("claude", agents.CLAUDE_CODE), ("codex", agents.CODEX),
               ("gemini", agents.GEMINI))


def detect() -> str:
    """The agent installed on PATH (Claude Code first); claude-code when none is."""
    for executable, kind in EXECUTABLES:
        if shutil.which(executable):
            return kind
    return agents.CLAUDE_CODE


def label(kind: str) -> str:
    return agents.label(kind)


def changes(kind: str, project_dir: Path, claude_plan: list[FileChange], *, url: str,
            runner: list[str], project_id: str | None) -> list[FileChange]:
    """Of Claude Code's plan, the client's own state (config.json, its ignores, the
    repository's exclude); then ``kind``'s hooks and MCP entry."""
    shared = {project_dir / STATE_DIR / "config.json", project_dir / STATE_DIR / ".gitignore",
              project_dir / MIRROR_DIR / ".gitignore"}
    kept = [c for c in claude_plan if c.path in shared or c.path.name == "exclude"]
    plan = setup.plan_codex if kind == agents.CODEX else setup.plan_gemini
    merged: dict[Path, FileChange] = {c.path: c for c in kept}
    for change in plan(project_dir, url=url, runner=runner, project_id=project_id):
        earlier = merged.get(change.path)
        if earlier is None:
            merged[change.path] = change
            continue
        # Both add lines to one ignore file: this change's new lines on top of the other's.
        added = [line for line in change.after.splitlines()
                 if line not in (change.before or "").splitlines()]
        merged[change.path] = FileChange(change.path, earlier.before, (
            earlier.after.rstrip("\n") + "\n" + "\n".join(
                line for line in added if line not in earlier.after.splitlines()) + "\n"))
    return list(merged.values())


def codex_binary() -> str | None:
    return os.environ.get("CODEX_BINARY") or shutil.which("codex")


def trust(kind: str, project_dir: Path) -> list[str]:
    """Handle the agent's trust; lines saying what was done or what the user must do."""
    if kind == agents.GEMINI:
        change = setup.trust_gemini(project_dir)
        if change.changed:
            change.path.parent.mkdir(parents=True, exist_ok=True)
            change.path.write_text(change.after)
        return [f"trusted folder {project_dir} in {change.path}"]
    binary = codex_binary()
    if binary is None:
        return ["codex is not on PATH: Codex runs project hooks only for a trusted project "
                "and trusted hook hashes. Run `codex exec --trust` in the project, then "
                "review and trust the orchestrator hooks with /hooks in Codex, or run this "
                "setup again with codex on PATH."]
    good, total = setup.trust_codex(binary, project_dir)
    return [f"Codex trusts the project and {good}/{total} orchestrator hooks "
            f"({setup.codex_home() / 'config.toml'})",
            f"Codex's MCP entry reads the token from ${setup.TOKEN_VARIABLE}: export it "
            "(its value is in .claude/orchestrator/config.json) before starting codex"]


def check_lines(kind: str, project_dir: Path) -> list[tuple[bool, str]]:
    lines = setup.check(kind, project_dir, binary=codex_binary())
    path = project_dir / (setup.CODEX_HOOKS if kind == agents.CODEX else setup.GEMINI_SETTINGS)
    if path.exists():
        import json

        hooks = (json.loads(path.read_text()).get("hooks") or {})
        commands = [h.get("command") for groups in hooks.values() for g in groups
                    for h in g.get("hooks", []) if setup.is_our_command(h.get("command"))]
        if commands:
            lines.append(setup.probe_command(commands[0], project_dir))
    return lines
