"""Writing the hook and MCP configuration into a project (``orchestrator-agent setup``,
``agent_setup``, and ``manage.py claude_setup`` through it).

Merging, never clobbering: other hooks, other MCP servers and every other setting stay
as they are; our own entries (recognised by their command: the launcher's path, or the
``orchestrator-hook`` executable that older setups wrote; and the MCP server's name) are
replaced. Running it twice changes nothing the second time.

Each hook runs ``<python> -S <package>/launch.py EVENT`` (see ``launch.py``: no ``site``,
a third of the start-up time), the command quoted for ``sh -c`` as Claude Code runs it.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator_hook.context import MIRROR_FILE
from orchestrator_hook.state import STATE_DIR, read_json

MIRROR_DIR = MIRROR_FILE.parent

HOOK_EXECUTABLE = "orchestrator-hook"
LAUNCHER = Path(__file__).resolve().with_name("launch.py")
# In every command that runs the launcher, whatever the path before it and its quoting.
LAUNCHER_MARK = f"{LAUNCHER.parent.name}/{LAUNCHER.name}"
MCP_SERVER_NAME = "orchestrator"
# event -> (matcher, timeout in seconds). A tool event matches every tool ("*"). The
# SessionEnd timeout also raises Claude Code's shared SessionEnd budget from 1.5 s to 3 s.
HOOK_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 15),
    "PostToolUse": ("*", 10),
    "PostToolUseFailure": ("*", 10),
    "Stop": (None, 10),
    "PreCompact": (None, 10),
    "PostCompact": (None, 10),
    "SessionEnd": (None, 3),
    # A subagent's tool uses count for its parent's session (they carry its session id);
    # these two only record that it ran. StopFailure: a turn ended by an API error.
    "SubagentStart": (None, 5),
    "SubagentStop": (None, 5),
    "StopFailure": (None, 5),
    # Notes the start of each tool call (lite.note_tool_start): what was running when
    # Claude Code died. Asynchronous: it never delays the tool.
    "PreToolUse": ("*", 5),
    # Heartbeat and the session's notices (another agent began editing one of its
    # files), put next to the prompt.
    "UserPromptSubmit": (None, 5),
}
ASYNC_EVENTS = frozenset({"PreToolUse"})
# A second, synchronous group: the check before an edit (edit_check), which claims the
# file and may warn the model or refuse the edit. Its command names its own event word.
EDIT_CHECK_EVENT = "PreEdit"
EDIT_CHECK_GROUPS: dict[str, tuple[str, int]] = {
    "PreToolUse": ("Edit|Write|MultiEdit|NotebookEdit", 5)}
# Not registered: WorktreeCreate and WorktreeRemove *replace* Claude Code's own worktree
# handling (the hook must create the worktree and print its path). A worktree gets the
# hooks and the client's config through .worktreeinclude instead, and its sessions land
# in the repository's project (orchestrator_hook.project).


@dataclass(frozen=True)
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist yet
    after: str
    secret: bool = False  # holds the token: written readable by its owner only

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self, mask: str | None = None) -> str:
        def lines(text: str | None) -> list[str]:
            text = text or ""
            if mask:
                text = text.replace(mask, mask[:6] + "…")
            return text.splitlines(keepends=True)

        return "".join(difflib.unified_diff(
            lines(self.before), lines(self.after),
            fromfile=f"{self.path} (before)" if self.before is not None else "/dev/null",
            tofile=str(self.path)))


def launcher_runner(python: str) -> list[str]:
    """The words before the event in the hook command: ``python`` without ``site``, then
    the launcher."""
    return [python, "-S", str(LAUNCHER)]


def hook_command(runner: str | Sequence[str], event: str) -> str:
    """The shell command of one hook. ``runner``: the words before the event
    (``launcher_runner``), or one executable such as the ``orchestrator-hook`` script."""
    words = [runner] if isinstance(runner, str) else list(runner)
    return shlex.join([*words, event])


def is_our_command(command: Any) -> bool:
    """This setup's command, or an older one (``.../orchestrator-hook EVENT``)."""
    command = str(command or "")
    return LAUNCHER_MARK in command or HOOK_EXECUTABLE in command


def is_ours(group: Any) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and is_our_command(h.get("command")) for h in hooks)


def without_our_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with the hooks an older setup wrote there removed (they now live in
    .claude/settings.local.json: their commands name this machine's paths)."""
    cleaned = copy.deepcopy(settings)
    hooks = cleaned.get("hooks")
    if not isinstance(hooks, dict):
        return cleaned
    for event in list(hooks):
        groups = hooks[event]
        if isinstance(groups, list):
            kept = [g for g in groups if not is_ours(g)]
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    return cleaned


def merge_settings(settings: dict[str, Any], runner: str | Sequence[str]) -> dict[str, Any]:
    merged = copy.deepcopy(settings)
    hooks = merged.get("hooks")
    if not isinstance(hooks, dict):
        hooks = merged["hooks"] = {}
    for event, (matcher, timeout) in HOOK_EVENTS.items():
        groups = hooks.get(event)
        groups = [g for g in groups if not is_ours(g)] if isinstance(groups, list) else []
        handler: dict[str, Any] = {"type": "command", "command": hook_command(runner, event),
                                   "timeout": timeout}
        if event in ASYNC_EVENTS:
            handler["async"] = True
        group: dict[str, Any] = {"hooks": [handler]}
        if matcher:
            group = {"matcher": matcher, **group}
        extra = []
        if event in EDIT_CHECK_GROUPS:
            edit_matcher, edit_timeout = EDIT_CHECK_GROUPS[event]
            extra.append({"matcher": edit_matcher, "hooks": [{
                "type": "command", "command": hook_command(runner, EDIT_CHECK_EVENT),
                "timeout": edit_timeout}]})
        hooks[event] = [*groups, group, *extra]
    return merged


# The header naming the project a client works in (the server's CLIENT_PROJECT_HEADER).
PROJECT_HEADER = "X-Orchestrator-Project"
# Secrets stay out of files git would commit: .mcp.json names these variables, whose
# values live in .claude/settings.local.json ("env"), which Claude Code applies to the
# session and expands in .mcp.json (PROTOCOL.md 6), and which setup git-ignores.
TOKEN_VARIABLE = "ORCHESTRATOR_TOKEN"
STDIO_VARIABLE_PREFIX = "ORCHESTRATOR_STDIO_"
# The MCP endpoint with the tools a model should call itself; /mcp lists every tool.
AGENT_MCP_PATH = "/mcp/agent"
FULL_MCP_PATH = "/mcp"
# What the client writes that holds state or secrets, ignored by git (.claude/.gitignore
# is merged, never replaced; the state folders carry their own "*").
CLAUDE_IGNORED = ("settings.local.json", "worktrees/")
# A worktree Claude Code makes (`claude --worktree`, isolated subagents) is a fresh
# checkout: these git-ignored files are copied into it (.worktreeinclude), so its sessions
# run the hooks and reach the same project.
WORKTREE_INCLUDED = (".claude/settings.local.json", ".claude/orchestrator/config.json")
SECRET_WORDS = ("token", "secret", "password", "passwd", "key", "authorization", "cookie")


def mcp_entry(url: str, transport: str, stdio_command: list[str] | None,
              stdio_env: dict[str, str] | None, project_id: str | None = None, *,
              all_tools: bool = False) -> dict[str, Any]:
    """Our MCP server entry: no secret in it, only ``${VARIABLE}`` references."""
    if transport == "stdio":
        if not stdio_command:
            raise ValueError("stdio transport needs the server command")
        args = list(stdio_command[1:]) + ([] if all_tools else ["--agent-tools"])
        entry: dict[str, Any] = {"type": "stdio", "command": stdio_command[0], "args": args}
        if stdio_env:
            entry["env"] = {name: f"${{{STDIO_VARIABLE_PREFIX}{name}}}" for name in stdio_env}
        return entry
    headers = {"Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}"}
    if project_id:
        headers[PROJECT_HEADER] = project_id
    path = FULL_MCP_PATH if all_tools else AGENT_MCP_PATH
    return {"type": "http", "url": f"{url.rstrip('/')}{path}", "headers": headers}


def merge_mcp(config: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(config)
    servers = merged.get("mcpServers")
    if not isinstance(servers, dict):
        servers = merged["mcpServers"] = {}
    servers[MCP_SERVER_NAME] = entry
    return merged


def merge_local_settings(settings: dict[str, Any], variables: dict[str, str]
                         ) -> dict[str, Any]:
    """``.claude/settings.local.json`` with our variables in its ``env`` (the rest kept)."""
    merged = copy.deepcopy(settings)
    env = merged.get("env")
    if not isinstance(env, dict):
        env = merged["env"] = {}
    env.update(variables)
    return merged


def merge_ignore(text: str | None, names: Sequence[str],
                 why: str = "local state and secrets") -> str:
    """A .gitignore-style list with ``names`` in it (lines already there are kept)."""
    lines = (text or "").splitlines()
    missing = [name for name in names if name not in {line.strip() for line in lines}]
    if not missing:
        return text if text is not None else ""
    header = [] if lines else [f"# Written by manage.py claude_setup: {why}."]
    return "\n".join([*lines, *header, *missing]) + "\n"


def literal_secrets(config: dict[str, Any]) -> list[str]:
    """Where an .mcp.json holds a secret in plain text (a header or env value that looks
    like one and is not a ``${VARIABLE}``): ``server: headers.Authorization`` entries."""
    found = []
    servers = config.get("mcpServers") if isinstance(config, dict) else None
    for name, entry in (servers or {}).items() if isinstance(servers, dict) else []:
        if not isinstance(entry, dict):
            continue
        for section in ("headers", "env"):
            values = entry.get(section)
            for key, value in (values or {}).items() if isinstance(values, dict) else []:
                if not isinstance(value, str) or not value.strip() or "${" in value:
                    continue
                lowered = key.lower()
                if any(word in lowered for word in SECRET_WORDS) or (
                        lowered.endswith("_url") and "@" in value and ":" in
                        value.split("@", 1)[0].split("//", 1)[-1]):
                    found.append(f"{name}: {section}.{key}")
    return found


def _text(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _existing(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text and its JSON object; a file that is not a JSON object is refused
    rather than overwritten."""
    if not path.exists():
        return None, {}
    text = path.read_text(encoding="utf-8")
    data = read_json(path) if text.strip() else {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object; fix or move it, then run again")
    return text, data


# The same files ignored by the repository itself (<git common dir>/info/exclude, shared
# by every worktree): a worktree checked out before .claude/.gitignore was committed
# (`claude --worktree` right after setup) gets the token files through .worktreeinclude
# but not that .gitignore, and `git add -A` there would commit them.
REPOSITORY_EXCLUDED = ("**/.claude/settings.local.json", "**/.claude/orchestrator/",
                       "**/.claude/contexts/", "**/.claude/worktrees/")


def git_common_dir(project_dir: Path) -> Path | None:
    """The repository's common git directory (``.git`` of the main checkout, also for a
    worktree), or None outside git."""
    from orchestrator_hook.lite import repository_root

    root = repository_root(str(project_dir))
    if root is None:
        return None
    dot_git = Path(root) / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        gitdir = Path(root) / dot_git.read_text(encoding="utf-8").strip().removeprefix(
            "gitdir:").strip()
        common = gitdir / "commondir"
        return (gitdir / common.read_text(encoding="utf-8").strip()).resolve() \
            if common.exists() else gitdir.resolve()
    except OSError:
        return None


def _read_text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def plan(project_dir: Path, *, url: str, token: str, runner: str | Sequence[str],
         task_id: str | None = None, project_id: str | None = None,
         mcp_transport: str = "http", all_tools: bool = False,
         stdio_command: list[str] | None = None,
         stdio_env: dict[str, str] | None = None,
         ca_file: str | None = None) -> list[FileChange]:
    """The file changes that set ``project_dir`` up; nothing is written. ``runner``: see
    ``hook_command``."""
    settings_path = project_dir / ".claude" / "settings.json"
    local_path = project_dir / ".claude" / "settings.local.json"
    claude_ignore_path = project_dir / ".claude" / ".gitignore"
    worktree_include_path = project_dir / ".worktreeinclude"
    mcp_path = project_dir / ".mcp.json"
    config_path = project_dir / STATE_DIR / "config.json"
    ignore_path = project_dir / STATE_DIR / ".gitignore"
    mirror_ignore_path = project_dir / MIRROR_DIR / ".gitignore"

    settings_before, settings = _existing(settings_path)
    local_before, local = _existing(local_path)
    mcp_before, mcp = _existing(mcp_path)
    config_before, config = _existing(config_path)
    config = {**config, "url": url, "token": token}
    config.pop("allTools", None)
    if all_tools:
        config["allTools"] = True
    if project_id:
        config["projectId"] = project_id
    if task_id:
        config["taskId"] = task_id
    if ca_file:
        config["caFile"] = ca_file
    variables = {TOKEN_VARIABLE: token}
    if mcp_transport == "stdio":
        variables.update({f"{STDIO_VARIABLE_PREFIX}{name}": value
                          for name, value in (stdio_env or {}).items()})
    claude_ignore_before = _read_text(claude_ignore_path)
    include_before = _read_text(worktree_include_path)
    common = git_common_dir(project_dir)
    exclude_changes = []
    if common is not None and common.is_dir():
        exclude_path = common / "info" / "exclude"
        exclude_before = _read_text(exclude_path)
        exclude_changes.append(FileChange(exclude_path, exclude_before, merge_ignore(
            exclude_before, REPOSITORY_EXCLUDED,
            "the session orchestrator client's state and secrets, in every worktree")))
    # The hooks' commands and the token are this machine's: both go in the personal,
    # git-ignored settings file; the shared one only loses what an older setup put there.
    local = merge_settings(merge_local_settings(local, variables), runner)
    changes = []
    if settings_before is not None:
        changes.append(FileChange(settings_path, settings_before,
                                  settings_before if without_our_hooks(settings) == settings
                                  else _text(without_our_hooks(settings))))
    return [
        *changes,
        FileChange(local_path, local_before, _text(local), secret=True),
        FileChange(claude_ignore_path, claude_ignore_before,
                   merge_ignore(claude_ignore_before, CLAUDE_IGNORED)),
        FileChange(worktree_include_path, include_before,
                   merge_ignore(include_before, WORKTREE_INCLUDED,
                                "copied into the worktrees Claude Code makes")),
        FileChange(mcp_path, mcp_before, _text(merge_mcp(
            mcp, mcp_entry(url, mcp_transport, stdio_command, stdio_env, project_id,
                           all_tools=all_tools)))),
        FileChange(config_path, config_before, _text(config), secret=True),
        # The client's state holds the token and the spool: never committed.
        FileChange(ignore_path, _read_text(ignore_path), "*\n"),
        # The local copy of the last context injected (context.MIRROR_FILE): state.
        FileChange(mirror_ignore_path, _read_text(mirror_ignore_path), "*\n"),
        *exclude_changes,
    ]


def apply(changes: list[FileChange]) -> None:
    for change in changes:
        if change.changed:
            write_text_atomic(change.path, change.after, private=change.secret)


def write_text_atomic(path: Path, text: str, *, private: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.setup.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def configured_token(project_dir: Path) -> str | None:
    data = read_json(project_dir / STATE_DIR / "config.json", {})
    token = data.get("token") if isinstance(data, dict) else None
    return token if isinstance(token, str) and token else None
