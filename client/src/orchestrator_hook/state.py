"""What the client keeps in the project: ``<project>/.claude/orchestrator/``.

    config.json      url, token, taskId, budgets (written by ``manage.py claude_setup``)
    sessions.json    Claude session id -> orchestrator session id, task, pending compaction
    activity/        tool uses not sent yet, one JSON line each, per Claude session
    spool/           calls that could not be sent, replayed in file-name (= time) order
    down-until       after a failed call: the time before which hooks don't try the network
    hook.log         what went wrong (bounded); hooks never print errors to Claude

Every read-modify-write happens under an ``flock``: several hooks of one session, and
several Claude sessions of one project, run at the same time.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from orchestrator_hook import lite
from orchestrator_hook.lite import locked, read_json

# typing only for the annotations (never evaluated): importing it costs every hook.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["STATE_DIR", "ProjectState", "locked", "read_json", "write_json_atomic"]

STATE_DIR = Path(lite.STATE_DIR_NAME)
MAPPED_SESSIONS_KEPT = 200


def write_json_atomic(path: Path, data: Any, *, fsync: bool = False) -> None:
    """Temp file in the same directory, then rename: readers see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, ensure_ascii=False, indent=1)
        if fsync:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(temp, path)


class ProjectState:
    def __init__(self, project_dir: Path) -> None:
        self.project_dir = project_dir
        self.root = project_dir / STATE_DIR

    # -- log ---------------------------------------------------------------------------
    def log(self, message: str) -> None:
        lite.log(str(self.root), message)

    # -- Claude session -> orchestrator session -----------------------------------------
    @property
    def sessions_path(self) -> Path:
        return self.root / "sessions.json"

    def mapped_session(self, claude_session_id: str) -> dict[str, Any] | None:
        return lite.mapped_session(str(self.root), claude_session_id)

    def update_session(self, claude_session_id: str, **fields: Any) -> dict[str, Any]:
        with locked(self.root / "sessions.lock"):
            sessions = read_json(self.sessions_path, {})
            if not isinstance(sessions, dict):
                sessions = {}
            entry = {**(sessions.get(claude_session_id) or {}), **fields,
                     "updatedAt": time.time()}
            sessions[claude_session_id] = entry
            if len(sessions) > MAPPED_SESSIONS_KEPT:
                oldest = sorted(sessions, key=lambda k: sessions[k].get("updatedAt", 0))
                for key in oldest[: len(sessions) - MAPPED_SESSIONS_KEPT]:
                    sessions.pop(key, None)
            write_json_atomic(self.sessions_path, sessions)
        return entry

    # -- unsent tool uses ----------------------------------------------------------------
    def _activity_path(self, claude_session_id: str, suffix: str = ".jsonl") -> Path:
        return Path(lite.activity_file(self.root, claude_session_id, suffix))

    def append_activity(self, claude_session_id: str, entry: dict[str, Any]) -> None:
        lite.append_activity(self.root, claude_session_id, entry)

    def take_activity(self, claude_session_id: str) -> list[dict[str, Any]]:
        """Remove and return the session's unsent tool uses (oldest first)."""
        path = self._activity_path(claude_session_id)
        if not path.exists():
            return []
        # Alone: appenders share this lock (lite.append_activity).
        with locked(self._activity_path(claude_session_id, ".lock")):
            try:
                with open(path, encoding="utf-8") as handle:
                    lines = handle.readlines()
                os.unlink(path)
            except OSError:
                return []
        entries = []
        for line in lines:
            with contextlib.suppress(ValueError):
                entries.append(json.loads(line))
        return entries

    def sessions_with_activity(self) -> list[str]:
        folder = self.root / "activity"
        return sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []

    def forget_activity(self, claude_session_id: str) -> None:
        """A session that ended: its buffer markers (``.flushed``, ``.lock``, the
        ``.claims`` memo) go, and its buffer when empty. No hook of that session runs any
        more."""
        for suffix in (".flushed", ".lock", ".inflight", ".claims"):
            with contextlib.suppress(OSError):
                self._activity_path(claude_session_id, suffix).unlink()
        path = self._activity_path(claude_session_id)
        with contextlib.suppress(OSError):
            if path.stat().st_size == 0:
                path.unlink()

    def prune_activity(self, older_than: float = 3600.0) -> None:
        """Markers of sessions that are over (ended, crashed, or unmapped and untouched for
        ``older_than`` seconds) and have nothing left to send: they must not pile up."""
        folder = self.root / "activity"
        if not folder.is_dir():
            return
        sessions = read_json(self.sessions_path, {}) or {}
        by_key = {lite.file_safe(k): v for k, v in sessions.items() if isinstance(v, dict)} \
            if isinstance(sessions, dict) else {}
        now = time.time()
        for marker in folder.glob("*.flushed"):
            key = marker.stem
            if (folder / f"{key}.jsonl").exists():
                continue  # unsent tool uses: flush_other_sessions sends them first
            entry = by_key.get(key)
            with contextlib.suppress(OSError):
                over = (entry.get("ended") if entry
                        else now - marker.stat().st_mtime > older_than)
                if over:
                    marker.unlink()
                    (folder / f"{key}.lock").unlink(missing_ok=True)
                    (folder / f"{key}.inflight").unlink(missing_ok=True)
                    (folder / f"{key}.claims").unlink(missing_ok=True)

    def compact_inflight(self, claude_session_id: str) -> None:
        """Keep only the tool calls still running in the session's ``.inflight`` notes
        (started and ended calls go), so the file stays a few lines long."""
        running = lite.tools_in_flight(self.root, claude_session_id)
        path = self._activity_path(claude_session_id, ".inflight")
        if not path.exists():
            return
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            temp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                    for r in running[-20:]), encoding="utf-8")
            os.replace(temp, path)

    def last_flush(self, claude_session_id: str) -> float:
        return lite.last_flush(self.root, claude_session_id)

    def mark_flushed(self, claude_session_id: str) -> None:
        path = self._activity_path(claude_session_id, ".flushed")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        os.utime(path)

    # -- calls waiting for the service ---------------------------------------------------
    @property
    def spool_dir(self) -> Path:
        return self.root / "spool"

    def spool(self, tool: str, arguments: dict[str, Any]) -> None:
        # Names sort in the order the calls were made: nanoseconds, then pid for ties.
        name = f"{time.time_ns():020d}-{os.getpid():07d}-{tool}.json"
        write_json_atomic(self.spool_dir / name,
                          {"tool": tool, "arguments": arguments, "queuedAt": time.time()},
                          fsync=True)

    def spooled(self) -> list[Path]:
        return [self.spool_dir / name for name in lite.spooled_names(self.root)]

    def spooled_since(self) -> float | None:
        """When the oldest call waiting in the spool was made (its name says: ns)."""
        stamps = []
        for path in self.spooled():
            with contextlib.suppress(ValueError):
                stamps.append(int(path.name.split("-", 1)[0]) / 1e9)
        return min(stamps) if stamps else None

    def reject_spooled(self, path: Path, reason: str) -> None:
        """Keep a refused call for a person to look at, out of the replay queue."""
        rejected = self.spool_dir / "rejected"
        rejected.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.replace(path, rejected / path.name)
        self.log(f"spooled call {path.name} refused by the service: {reason}")
        kept = sorted(rejected.glob("*.json"))
        for old in kept[:-100]:
            with contextlib.suppress(OSError):
                old.unlink()

    # -- service outage memo -------------------------------------------------------------
    def service_down(self) -> bool:
        return lite.service_down(str(self.root))

    def mark_down(self, seconds: float = lite.DOWN_SECONDS) -> None:
        lite.mark_down(str(self.root), seconds)

    def mark_up(self) -> None:
        with contextlib.suppress(OSError):
            (self.root / "down-until").unlink()
