"""Setting a project up for Codex CLI or Gemini CLI: hooks, MCP entry, trust, check.

Like ``install`` for Claude Code: files are merged, never clobbered (other hooks, other
MCP servers, every other setting stay; our entries, recognised by their command or the
server's name, are replaced), and running it twice changes nothing the second time.

- Codex: hooks in ``<repo>/.codex/hooks.json`` (their commands name this machine's
  paths: git-ignored in the repository's ``info/exclude``), the MCP server in
  ``<repo>/.codex/config.toml`` (``[mcp_servers.orchestrator]``: the URL, the project
  header and ``bearer_token_env_var``, no secret). Codex runs project hooks only for a
  trusted project *and* hooks whose hash the user config trusts, and says nothing when
  either is missing: ``trust_codex`` adds the project entry and, for our hooks only, the
  ``[hooks.state."KEY"] trusted_hash`` entries with the keys and hashes Codex itself
  reports (``codex app-server``, ``hooks/list``).
- Gemini CLI: hooks and the MCP server in ``<repo>/.gemini/settings.json`` (git-ignored
  unless the repository tracks it), and the folder in ``~/.gemini/trustedFolders.json``
  (``-p`` refuses to run in an untrusted folder; hooks run only in a trusted one).
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator_hook import agents
from orchestrator_hook.agents import codex, gemini
from orchestrator_hook.install import (
    AGENT_MCP_PATH,
    MCP_SERVER_NAME,
    MIRROR_DIR,
    PROJECT_HEADER,
    STATE_DIR,
    TOKEN_VARIABLE,
    FileChange,
    _existing,
    _read_text,
    _text,
    git_common_dir,
    is_our_command,
    merge_ignore,
)

CODEX_HOOKS = Path(".codex") / "hooks.json"
CODEX_CONFIG = Path(".codex") / "config.toml"
GEMINI_SETTINGS = Path(".gemini") / "settings.json"
APP_SERVER_SECONDS = 30


def hook_command(runner: Sequence[str], kind: str, event: str) -> str:
    return shlex.join([*runner, "--agent", kind, event])


def merge_hooks(settings: dict[str, Any], runner: Sequence[str], kind: str,
                events: dict[str, int], timeout_unit: int = 1) -> dict[str, Any]:
    """``settings`` with one group per event running our command (ours replaced, the
    rest kept). ``timeout_unit``: 1 for seconds (Codex), 1000 for milliseconds (Gemini)."""
    merged = copy.deepcopy(settings)
    hooks = merged.get("hooks")
    if not isinstance(hooks, dict):
        hooks = merged["hooks"] = {}
    for event, seconds in events.items():
        groups = hooks.get(event)
        groups = [g for g in groups if not _ours(g)] if isinstance(groups, list) else []
        handler: dict[str, Any] = {"type": "command",
                                   "command": hook_command(runner, kind, event),
                                   "timeout": seconds * timeout_unit}
        if kind == agents.GEMINI:
            handler["name"] = f"orchestrator-{event}"
        hooks[event] = [*groups, {"hooks": [handler]}]
    return merged


def _ours(group: Any) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and is_our_command(h.get("command")) for h in hooks)


def _exclude_change(project_dir: Path, names: Sequence[str], why: str) -> list[FileChange]:
    common = git_common_dir(project_dir)
    if common is None or not common.is_dir():
        return []
    path = common / "info" / "exclude"
    before = _read_text(path)
    return [FileChange(path, before, merge_ignore(before, names, why))]


def tracked(project_dir: Path, path: Path) -> bool:
    try:
        done = subprocess.run(["git", "ls-files", "--error-unmatch", str(path)],
                              cwd=project_dir, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


# -- Codex -----------------------------------------------------------------------------------

def codex_mcp_section(url: str, project_id: str | None) -> str:
    lines = [f"[mcp_servers.{MCP_SERVER_NAME}]",
             f"url = {json.dumps(url.rstrip('/') + AGENT_MCP_PATH)}",
             f"bearer_token_env_var = {json.dumps(TOKEN_VARIABLE)}"]
    if project_id:
        lines.append(f"http_headers = {{ {json.dumps(PROJECT_HEADER)} = "
                     f"{json.dumps(project_id)} }}")
    return "\n".join(lines) + "\n"


def merge_toml_section(text: str | None, header: str, section: str) -> str:
    """``text`` with the table ``header`` (and its sub-tables) replaced by ``section``,
    everything else as it was (tomllib reads TOML; the standard library writes none, and
    a section is all we own)."""
    lines = (text or "").splitlines(keepends=True)
    kept: list[str] = []
    skipping = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            name = stripped.strip("[]").strip()
            skipping = name == header or name.startswith(header + ".")
        if not skipping:
            kept.append(line)
    body = "".join(kept).rstrip("\n")
    return (body + "\n\n" if body else "") + section


def plan_codex(project_dir: Path, *, url: str, runner: Sequence[str],
               project_id: str | None) -> list[FileChange]:
    hooks_path = project_dir / CODEX_HOOKS
    config_path = project_dir / CODEX_CONFIG
    hooks_before, hooks = _existing(hooks_path)
    config_before = _read_text(config_path)
    return [
        FileChange(hooks_path, hooks_before,
                   _text(merge_hooks(hooks, runner, agents.CODEX, codex.HOOK_EVENTS))),
        FileChange(config_path, config_before, merge_toml_section(
            config_before, f"mcp_servers.{MCP_SERVER_NAME}",
            codex_mcp_section(url, project_id))),
        *_exclude_change(project_dir, ["**/.codex/hooks.json"],
                         "the session orchestrator's Codex hooks (this machine's paths)"),
    ]


def codex_home(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME") or "~").expanduser() / ".codex")


def list_codex_hooks(binary: str, project_dir: Path, env: dict[str, str] | None = None,
                     ) -> list[dict[str, Any]]:
    """The hooks Codex finds for ``project_dir``, as Codex reports them (``hooks/list``
    of ``codex app-server``: key, command, currentHash, trustStatus)."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"clientInfo": {"name": "orchestrator-setup", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list",
         "params": {"cwds": [str(project_dir)]}}]
    process = subprocess.Popen([binary, "app-server"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=env, cwd=project_dir)
    try:
        assert process.stdin is not None and process.stdout is not None
        for request in requests:
            process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        for line in process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("id") == 2:
                if "error" in message:
                    raise RuntimeError(f"codex hooks/list: {message['error']}")
                return [hook for entry in message["result"]["data"]
                        for hook in entry.get("hooks", [])]
        raise RuntimeError("codex app-server ended without answering hooks/list")
    finally:
        process.kill()
        process.wait(timeout=APP_SERVER_SECONDS)


def trust_codex(binary: str, project_dir: Path, env: dict[str, str] | None = None,
                ) -> tuple[int, int]:
    """Trust the project and our hooks in Codex's user config; (ours trusted, ours).
    The project first: Codex lists no project hook of an untrusted project."""
    import tomllib

    config_path = codex_home(env) / "config.toml"

    def append(text: str, sections: list[str]) -> None:
        config_path.parent.mkdir(parents=True, exist_ok=True)
        config_path.write_text(text.rstrip("\n") + ("\n\n" if text.strip() else "")
                               + "\n".join(sections))

    text = _read_text(config_path) or ""
    data = tomllib.loads(text) if text.strip() else {}
    project = str(project_dir)
    if (data.get("projects") or {}).get(project, {}).get("trust_level") != "trusted":
        append(text, [f"[projects.{json.dumps(project)}]\ntrust_level = \"trusted\"\n"])
        text = _read_text(config_path) or ""
        data = tomllib.loads(text)
    states = ((data.get("hooks") or {}).get("state") or {})
    additions = []
    for hook in list_codex_hooks(binary, project_dir, env):
        if not is_our_command(hook.get("command")) or hook.get("trustStatus") == "trusted" \
                or not hook.get("key") or not hook.get("currentHash"):
            continue
        header = f"hooks.state.{json.dumps(hook['key'])}"
        if hook["key"] in states:  # a changed command: its old hash goes
            text = merge_toml_section(text, header, "").rstrip("\n") + "\n"
        additions.append(f"[{header}]\ntrusted_hash = {json.dumps(hook['currentHash'])}\n")
    if additions:
        append(text, additions)
    after = [h for h in list_codex_hooks(binary, project_dir, env)
             if is_our_command(h.get("command"))]
    return sum(h.get("trustStatus") == "trusted" for h in after), len(after)


# -- Gemini CLI ------------------------------------------------------------------------------

def gemini_mcp_entry(url: str, project_id: str | None) -> dict[str, Any]:
    """Gemini CLI expands ``$VARIABLE`` in settings: no secret in the file."""
    headers = {"Authorization": f"Bearer ${TOKEN_VARIABLE}"}
    if project_id:
        headers[PROJECT_HEADER] = project_id
    return {"httpUrl": url.rstrip("/") + AGENT_MCP_PATH, "headers": headers}


def plan_gemini(project_dir: Path, *, url: str, runner: Sequence[str],
                project_id: str | None) -> list[FileChange]:
    path = project_dir / GEMINI_SETTINGS
    before, settings = _existing(path)
    merged = merge_hooks(settings, runner, agents.GEMINI, gemini.HOOK_EVENTS, 1000)
    servers = merged.get("mcpServers")
    if not isinstance(servers, dict):
        servers = merged["mcpServers"] = {}
    servers[MCP_SERVER_NAME] = gemini_mcp_entry(url, project_id)
    changes = [FileChange(path, before, _text(merged))]
    if not tracked(project_dir, GEMINI_SETTINGS):  # a team's shared file stays shared
        changes += _exclude_change(project_dir, ["**/.gemini/settings.json"],
                                   "the session orchestrator's Gemini CLI hooks")
    return changes


def gemini_home(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("HOME") or "~").expanduser() / ".gemini"


def trust_gemini(project_dir: Path, env: dict[str, str] | None = None) -> FileChange:
    """The folder in ``~/.gemini/trustedFolders.json`` (merged)."""
    path = gemini_home(env) / "trustedFolders.json"
    before, folders = _existing(path)
    return FileChange(path, before, _text({**folders, str(project_dir): "TRUST_FOLDER"}))


# -- checks ----------------------------------------------------------------------------------

def check(kind: str, project_dir: Path, *, binary: str | None = None,
          env: dict[str, str] | None = None) -> list[tuple[bool, str]]:
    """(ok, line) pairs saying whether ``kind``'s hooks would fire in ``project_dir``:
    configured, trusted the way that agent requires, and our command runs."""
    results: list[tuple[bool, str]] = []
    if kind == agents.CODEX:
        if not (project_dir / CODEX_HOOKS).exists():
            return [(False, f"{CODEX_HOOKS} is missing: run setup --agent codex")]
        if binary is None:
            return [(False, "codex is not on PATH: cannot ask it which hooks it trusts")]
        import tomllib

        config = codex_home(env) / "config.toml"
        data = tomllib.loads(_read_text(config) or "")
        trusted = (data.get("projects") or {}).get(str(project_dir), {}).get(
            "trust_level") == "trusted"
        results.append((trusted, f"project trusted in {config}" if trusted else
                        f"project NOT trusted in {config}: Codex ignores .codex/ (run setup "
                        "again, or `codex exec --trust` in the project)"))
        ours = [h for h in list_codex_hooks(binary, project_dir, env)
                if is_our_command(h.get("command"))]
        good = [h for h in ours if h.get("trustStatus") == "trusted"]
        expected = len(codex.HOOK_EVENTS)
        results.append((len(good) == expected == len(ours),
                        f"Codex reports {len(good)}/{len(ours)} orchestrator hooks trusted "
                        f"(expected {expected}); untrusted hooks never run, silently"))
    elif kind == agents.GEMINI:
        settings = _existing(project_dir / GEMINI_SETTINGS)[1] if (
            project_dir / GEMINI_SETTINGS).exists() else {}
        hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
        ours = [e for e, groups in hooks.items()
                if isinstance(groups, list) and any(_ours(g) for g in groups)]
        results.append((set(gemini.HOOK_EVENTS) <= set(ours),
                        f"{len(ours)}/{len(gemini.HOOK_EVENTS)} orchestrator hooks in "
                        f"{GEMINI_SETTINGS}"))
        folders = _existing(gemini_home(env) / "trustedFolders.json")[1] if (
            gemini_home(env) / "trustedFolders.json").exists() else {}
        trusted = any(_covers(Path(folder), project_dir, rule)
                      for folder, rule in folders.items())
        results.append((trusted, "folder trusted in ~/.gemini/trustedFolders.json" if trusted
                        else "folder NOT trusted: `gemini -p` exits 55 and no hook runs "
                             "(run setup again, or trust it in Gemini CLI's /permissions)"))
    return results


def _covers(folder: Path, project_dir: Path, rule: object) -> bool:
    if rule == "TRUST_FOLDER":
        return folder == project_dir
    if rule == "TRUST_PARENT":
        return folder == project_dir.parent
    return False


def probe_command(command: str, project_dir: Path) -> tuple[bool, str]:
    """Run one of our hook commands with an event no adapter maps: it must exit 0."""
    words = shlex.split(command)
    probe = [*words[:-1], "Probe"] if words else []
    try:
        done = subprocess.run(probe, input=json.dumps({"cwd": str(project_dir)}),
                              capture_output=True, text=True, timeout=30, cwd=project_dir)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"hook command failed to run: {exc}"
    ok = done.returncode == 0
    return ok, ("hook command runs (exit 0)" if ok else
                f"hook command exit {done.returncode}: {done.stderr[-300:]}")


# -- what ``agent_setup`` (orchestrator-agent setup, manage.py claude_setup) calls -------------

# Executable -> agent kind, in the order detect() prefers them.
EXECUTABLES = (("claude", agents.CLAUDE_CODE), ("codex", agents.CODEX),
               ("gemini", agents.GEMINI))


def detect() -> str:
    """The agent installed on PATH (Claude Code first); claude-code when none is."""
    for executable, kind in EXECUTABLES:
        if shutil.which(executable):
            return kind
    return agents.CLAUDE_CODE


def agent_changes(kind: str, project_dir: Path, claude_plan: list[FileChange], *, url: str,
                  runner: Sequence[str], project_id: str | None) -> list[FileChange]:
    """Of Claude Code's plan, the client's own state (config.json, its ignores, the
    repository's exclude); then ``kind``'s hooks and MCP entry."""
    shared = {project_dir / STATE_DIR / "config.json", project_dir / STATE_DIR / ".gitignore",
              project_dir / MIRROR_DIR / ".gitignore"}
    kept = [c for c in claude_plan if c.path in shared or c.path.name == "exclude"]
    plan = plan_codex if kind == agents.CODEX else plan_gemini
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


def mcp_file(kind: str) -> str:
    """The project file holding ``kind``'s MCP entry (Codex or Gemini)."""
    return str(CODEX_CONFIG if kind == agents.CODEX else GEMINI_SETTINGS)


def codex_binary() -> str | None:
    return os.environ.get("CODEX_BINARY") or shutil.which("codex")


def trust_lines(kind: str, project_dir: Path) -> list[str]:
    """Handle the agent's trust; lines saying what was done or what the user must do."""
    if kind == agents.GEMINI:
        change = trust_gemini(project_dir)
        if change.changed:
            change.path.parent.mkdir(parents=True, exist_ok=True)
            change.path.write_text(change.after)
        # Gemini expands $ORCHESTRATOR_TOKEN in the MCP entry's header from its own
        # environment: without the export its MCP calls are refused.
        return [f"trusted folder {project_dir} in {change.path}",
                f"Gemini's MCP entry reads the token from ${TOKEN_VARIABLE}: export it "
                "(its value is in .claude/orchestrator/config.json) before starting gemini"]
    binary = codex_binary()
    if binary is None:
        return ["codex is not on PATH: Codex runs project hooks only for a trusted project "
                "and trusted hook hashes. Run `codex exec --trust` in the project, then "
                "review and trust the orchestrator hooks with /hooks in Codex, or run this "
                "setup again with codex on PATH."]
    good, total = trust_codex(binary, project_dir)
    return [f"Codex trusts the project and {good}/{total} orchestrator hooks "
            f"({codex_home() / 'config.toml'})",
            f"Codex's MCP entry reads the token from ${TOKEN_VARIABLE}: export it "
            "(its value is in .claude/orchestrator/config.json) before starting codex"]


def check_lines(kind: str, project_dir: Path) -> list[tuple[bool, str]]:
    """``check`` plus one run of our hook command."""
    lines = check(kind, project_dir, binary=codex_binary())
    path = project_dir / (CODEX_HOOKS if kind == agents.CODEX else GEMINI_SETTINGS)
    if path.exists():
        hooks = (json.loads(path.read_text()).get("hooks") or {})
        commands = [h.get("command") for groups in hooks.values() for g in groups
                    for h in g.get("hooks", []) if is_our_command(h.get("command"))]
        if commands:
            lines.append(probe_command(commands[0], project_dir))
    return lines

