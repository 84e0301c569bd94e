"""Writing the hook and MCP configuration into a project (used by ``manage.py claude_setup``).

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

from orchestrator_hook.state import STATE_DIR, read_json

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
}


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


def merge_settings(settings: dict[str, Any], runner: str | Sequence[str]) -> dict[str, Any]:
    merged = copy.deepcopy(settings)
    hooks = merged.get("hooks")
    if not isinstance(hooks, dict):
        hooks = merged["hooks"] = {}
    for event, (matcher, timeout) in HOOK_EVENTS.items():
        groups = hooks.get(event)
        groups = [g for g in groups if not is_ours(g)] if isinstance(groups, list) else []
        group: dict[str, Any] = {"hooks": [{"type": "command",
                                            "command": hook_command(runner, event),
                                            "timeout": timeout}]}
        if matcher:
            group = {"matcher": matcher, **group}
        hooks[event] = [*groups, group]
    return merged


# The header naming the project a client works in (the server's CLIENT_PROJECT_HEADER).
PROJECT_HEADER = "X-Orchestrator-Project"


def mcp_entry(url: str, token: str, transport: str, stdio_command: list[str] | None,
              stdio_env: dict[str, str] | None, project_id: str | None = None
              ) -> dict[str, Any]:
    if transport == "stdio":
        if not stdio_command:
            raise ValueError("stdio transport needs the server command")
        entry: dict[str, Any] = {"type": "stdio", "command": stdio_command[0],
                                 "args": stdio_command[1:]}
        if stdio_env:
            entry["env"] = stdio_env
        return entry
    headers = {"Authorization": f"Bearer {token}"}
    if project_id:
        headers[PROJECT_HEADER] = project_id
    return {"type": "http", "url": f"{url.rstrip('/')}/mcp", "headers": headers}


def merge_mcp(config: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(config)
    servers = merged.get("mcpServers")
    if not isinstance(servers, dict):
        servers = merged["mcpServers"] = {}
    servers[MCP_SERVER_NAME] = entry
    return merged


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


def plan(project_dir: Path, *, url: str, token: str, runner: str | Sequence[str],
         task_id: str | None = None, project_id: str | None = None,
         mcp_transport: str = "http",
         stdio_command: list[str] | None = None,
         stdio_env: dict[str, str] | None = None) -> list[FileChange]:
    """The file changes that set ``project_dir`` up; nothing is written. ``runner``: see
    ``hook_command``."""
    settings_path = project_dir / ".claude" / "settings.json"
    mcp_path = project_dir / ".mcp.json"
    config_path = project_dir / STATE_DIR / "config.json"
    ignore_path = project_dir / STATE_DIR / ".gitignore"

    settings_before, settings = _existing(settings_path)
    mcp_before, mcp = _existing(mcp_path)
    config_before, config = _existing(config_path)
    config = {**config, "url": url, "token": token}
    if project_id:
        config["projectId"] = project_id
    if task_id:
        config["taskId"] = task_id
    ignore_before = ignore_path.read_text() if ignore_path.exists() else None
    return [
        FileChange(settings_path, settings_before,
                   _text(merge_settings(settings, runner))),
        FileChange(mcp_path, mcp_before, _text(merge_mcp(
            mcp, mcp_entry(url, token, mcp_transport, stdio_command, stdio_env,
                           project_id))),
            secret=True),
        FileChange(config_path, config_before, _text(config), secret=True),
        # The client's state holds the token and the spool: never committed.
        FileChange(ignore_path, ignore_before, "*\n"),
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
