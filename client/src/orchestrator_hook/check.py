"""``orchestrator-agent setup --check`` (and ``manage.py claude_setup --check``): is a
directory set up for Claude Code working?

It looks from where the hooks stand, with the client alone (no server code): the URL,
token and project in the directory's config, the service they reach (``/healthz``, then
``list_projects`` through the hook client's own transport, so a refused token or
project shows as the hooks would see it), the calls waiting in the spool, the watchdogs
keeping sessions alive, and whether any file holding a secret or client state could be
committed.
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator_hook import install, watchdog
from orchestrator_hook.config import load_config
from orchestrator_hook.context import MIRROR_FILE
from orchestrator_hook.state import STATE_DIR, ProjectState, read_json
from orchestrator_hook.transport import Client, ServiceUnavailable, ToolRefused

# Calls older than this in the spool mean the service has been out of reach for a while.
STALE_SPOOL_SECONDS = 300
# Files the client writes that hold state or secrets: none may be committable.
PRIVATE_FILES = (STATE_DIR / "config.json", Path(".claude") / "settings.local.json",
                 MIRROR_FILE, STATE_DIR / "sessions.json")


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    problems: int = 0

    def ok(self, what: str, detail: str) -> None:
        self.lines.append(f"ok       {what}: {detail}")

    def problem(self, what: str, detail: str) -> None:
        self.problems += 1
        self.lines.append(f"PROBLEM  {what}: {detail}")

    def note(self, what: str, detail: str) -> None:
        self.lines.append(f"note     {what}: {detail}")


def check(project_dir: Path, claude_hooks: bool = True) -> Report:
    """``claude_hooks`` False: another agent's check (``agent_setup``) looks at its own
    hooks instead of Claude Code's."""
    report = Report()
    config = load_config(project_dir)
    if not config.usable:
        report.problem("setup", f"no URL or token in {project_dir / STATE_DIR / 'config.json'}: "
                                "run orchestrator-agent setup --project-dir first")
        return report
    report.ok("setup", f"{config.url}, project {config.project_id or '(the server default)'}, "
                       f"token {config.token[:12]}…")
    if claude_hooks:
        _check_hooks(project_dir, report)
    if _check_service(config.url, report, config.ca_file):
        _check_token(config, report)
    _check_spool(ProjectState(project_dir), report)
    _check_watchdogs(ProjectState(project_dir), report)
    _check_secrets(project_dir, report)
    return report


def _check_hooks(project_dir: Path, report: Report) -> None:
    settings = read_json(project_dir / ".claude" / "settings.local.json", {}) or {}
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    missing = [event for event in install.HOOK_EVENTS
               if not any(install.is_ours(group) for group in
                          ((hooks or {}).get(event) or []) if isinstance(hooks, dict))]
    if missing:
        report.problem("hooks", f"not installed for {', '.join(missing)}: run setup again")
    else:
        report.ok("hooks", f"installed for {len(install.HOOK_EVENTS)} events")


def _check_service(url: str, report: Report, ca_file: str | None = None) -> bool:
    from orchestrator_hook.transport import tls_context

    context = tls_context(ca_file) if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=5, context=context) as response:
            report.ok("service", f"{url} answers /healthz {response.status}")
            return True
    except urllib.error.HTTPError as exc:
        report.problem("service", f"{url} answers /healthz {exc.code} (degraded)")
        return True
    except (OSError, ValueError) as exc:
        report.problem("service", f"{url} does not answer ({exc}); hooks spool until it does")
        return False


def _check_token(config, report: Report) -> None:
    client = Client(config.url, config.token, connect_timeout=5, project=config.project_id,
                    ca_file=config.ca_file)
    try:
        answer = client.call("list_projects", {}, timeout=10)
    except ToolRefused as exc:
        report.problem("token", f"refused: {exc.code} {exc.message}")
        return
    except ServiceUnavailable as exc:
        report.problem("token", f"could not be checked: {exc}")
        return
    listed = {p.get("projectId") for p in answer.get("projects") or [] if isinstance(p, dict)}
    if config.project_id and config.project_id not in listed:
        report.problem("project", f"{config.project_id} is not registered on the server, or "
                                  "the token cannot reach it: run setup again")
    else:
        report.ok("token", f"accepted; reaches {', '.join(sorted(filter(None, listed)))}")
        if config.project_id:
            report.ok("project", f"{config.project_id} is registered and reachable")


def _check_spool(state: ProjectState, report: Report) -> None:
    spooled = state.spooled()
    rejected = list((state.spool_dir / "rejected").glob("*.json")) \
        if (state.spool_dir / "rejected").is_dir() else []
    if rejected:
        report.note("spool", f"{len(rejected)} call(s) the service refused are kept in "
                             f"{state.spool_dir / 'rejected'}")
    if not spooled:
        report.ok("spool", "empty: every call reached the service")
        return
    age = time.time() - min(p.stat().st_mtime for p in spooled)
    detail = f"{len(spooled)} call(s) waiting, the oldest {age / 60:.0f} min old"
    if age > STALE_SPOOL_SECONDS:
        report.problem("spool", detail + ": the service has been out of reach")
    else:
        report.note("spool", detail)


def _check_watchdogs(state: ProjectState, report: Report) -> None:
    alive = watchdog.running(state.root)
    report.ok("watchdogs", f"{len(alive)} running (one per live Claude Code session)")


def _check_secrets(project_dir: Path, report: Report) -> None:
    found = install.literal_secrets(read_json(project_dir / ".mcp.json", {}) or {})
    if found:
        report.problem("secrets", f".mcp.json holds secrets in plain text: {'; '.join(found)}")
    if not _in_git(project_dir):
        report.note("git", "not a git repository: nothing can be committed by accident")
        return
    exposed = [str(name) for name in PRIVATE_FILES
               if (project_dir / name).exists() and not ignored_by_git(project_dir, name)]
    if exposed:
        report.problem("secrets", f"not ignored by git: {', '.join(exposed)}")
    elif not found:
        report.ok("secrets", "no secret in a file git would commit")


def _git(project_dir: Path, *args: str) -> int:
    try:
        return subprocess.run(["git", "-C", str(project_dir), *args], capture_output=True,
                              timeout=10, check=False).returncode
    except (OSError, subprocess.SubprocessError):
        return 128


def _in_git(project_dir: Path) -> bool:
    return _git(project_dir, "rev-parse", "--git-dir") == 0


def ignored_by_git(project_dir: Path, path: Path | str) -> bool:
    return _git(project_dir, "check-ignore", "-q", str(path)) == 0


def tracked_by_git(project_dir: Path, path: Path | str) -> bool:
    return _git(project_dir, "ls-files", "--error-unmatch", str(path)) == 0
