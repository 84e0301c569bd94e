"""The text a SessionStart hook injects, and the local copy it falls back to offline."""

from __future__ import annotations

import os
import time
from pathlib import Path

from orchestrator_hook.config import MAX_CONTEXT_CHARS
from orchestrator_hook.state import read_json, write_json_atomic

# typing only for the annotations (never evaluated): importing it costs every hook.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The client's copy of the last context it injected, beside the server's file backups.
MIRROR_FILE = Path(".claude") / "contexts" / "_session_context.json"
# The whole injected text when it is longer than Claude Code shows (git-ignored beside
# the mirror): the injected part says where it is.
FULL_CONTEXT_FILE = Path(".claude") / "contexts" / "_session_context.md"
TRUNCATED = "\n…(truncated)\n"


def compose(sections: list[tuple[str, str]], limit: int = MAX_CONTEXT_CHARS,
            project_dir: Path | None = None) -> str:
    """Join (title, body) sections in priority order within ``limit`` characters.

    When too long, the lowest-priority sections are cut first (the context bundle comes
    last, and it is already tiered by the service: COLD, then WARM were dropped there;
    HOT, the hard rules and the critical keys never are). With ``project_dir`` nothing is
    lost: the whole text goes to ``FULL_CONTEXT_FILE`` there, and the injected text
    starts by saying where it is and that the model must read it.
    """
    parts = [(f"## {title}\n" if title else "") + body.strip() for title, body in sections
             if body and body.strip()]
    whole = "\n\n".join(parts)
    if project_dir is not None and len(whole) > limit:
        path = (project_dir / FULL_CONTEXT_FILE).absolute()
        try:
            _write_text(path, whole + "\n")
        except OSError:
            pass  # not written: the cut text below is still the best there is
        else:
            notice = (f"**This context is {len(whole)} characters long, more than Claude Code "
                      f"shows: the whole of it (critical context and hard rules included) is "
                      f"in `{path}`. Read that file now, before anything else: the text "
                      f"below is cut.**")
            return notice + "\n\n" + _fit(parts, limit - len(notice) - 2)
    return _fit(parts, limit)


def _write_text(path: Path, text: str) -> None:
    """Temp file beside it, then rename: a reader sees the old or the new text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def _fit(parts: list[str], limit: int) -> str:
    parts = list(parts)
    total = sum(len(p) for p in parts) + 2 * max(0, len(parts) - 1)
    while total > limit and parts:
        over = total - limit
        last = parts[-1]
        if len(last) - over > 200:
            parts[-1] = last[: len(last) - over - len(TRUNCATED)] + TRUNCATED
        else:
            parts.pop()
        total = sum(len(p) for p in parts) + 2 * max(0, len(parts) - 1)
    return "\n\n".join(parts)[:limit]


def handoff_heading(handoff: Any) -> str:
    """The note is the project's, left by whichever session of it ended last: maybe another
    task's, maybe another agent's. So the heading names who left it, not "the previous
    session" (which reads as this task's)."""
    agent = handoff.get("fromAgent") if isinstance(handoff, dict) else None
    return f"Handoff note from a {agent} session of this project" if agent \
        else "Handoff note from a session of this project"


def handoff_text(handoff: Any) -> str:
    if not isinstance(handoff, dict) or not handoff.get("summary"):
        return ""
    lines = [f"Left by session {handoff.get('fromSessionId')} at {handoff.get('createdAt')}:",
             str(handoff.get("summary"))]
    items = handoff.get("openItems") or []
    if items:
        lines.append("Open items:")
        lines.extend(f"- {item}" for item in items)
    return "\n".join(lines)


def recovery_text(report: Any, *, own_session: str | None = None) -> str:
    """Resume prompts of this project's crashed sessions, and its orphaned tasks."""
    if not isinstance(report, dict):
        return ""
    chunks = []
    for entry in report.get("sessions") or []:
        if not isinstance(entry, dict) or entry.get("sessionId") == own_session:
            continue
        if entry.get("recoveryType") == "compaction":  # another live session's, not ours
            continue
        chunks.append(str(entry.get("resumePrompt") or "").strip())
    orphans = [o for o in report.get("orphanedTasks") or [] if isinstance(o, dict)]
    if orphans:
        chunks.append("Orphaned tasks (their only session crashed): " + ", ".join(
            f"{o.get('taskId')} ({o.get('name')}, session {o.get('crashedSessionId')})"
            for o in orphans))
    return "\n\n".join(c for c in chunks if c)


def bundle_text(bundle: Any) -> str:
    return str(bundle.get("text") or "") if isinstance(bundle, dict) else ""


def save_mirror(project_dir: Path, **content: Any) -> None:
    write_json_atomic(project_dir / MIRROR_FILE,
                      {"version": 1, "savedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                              time.gmtime()), **content})


def load_mirror(project_dir: Path) -> dict[str, Any] | None:
    data = read_json(project_dir / MIRROR_FILE)
    return data if isinstance(data, dict) else None
