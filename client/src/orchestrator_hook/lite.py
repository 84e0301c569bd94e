"""The cheap core of the client, shared by the full handlers and the PostToolUse fast path.

A PostToolUse inside the flush interval only appends one line to the session's activity
buffer, and it runs on every tool call: its whole process should cost little more than
Python's start-up. So this module imports ``os``, ``json``, ``fcntl`` and ``time`` and
nothing else (no ``pathlib``, ``dataclasses``, ``typing``, ``contextlib``: measured with
``python -X importtime``, each costs more than the append itself). Paths here are
strings; ``state.ProjectState`` wraps the same helpers in ``pathlib`` for the rest.
"""

from __future__ import annotations

import fcntl
import json
import os
import time

STATE_DIR_NAME = os.path.join(".claude", "orchestrator")
# A context bundle of 2,000 tokens by default: 8,000 characters, under Claude Code's
# 10,000-character limit on injected context.
DEFAULT_BUDGET_TOKENS = 2000
# A burst of tool calls costs one round trip per this many seconds.
DEFAULT_FLUSH_SECONDS = 5.0
# After a clean check before an edit (the file claimed, no one else on it, nothing
# blocked), further edits of that file by the same session skip the check this long.
# What the skipped call could have said still arrives: another agent that starts on the
# file is told it is ours (and we get a notice with the next flush), and the flush after
# each edit renews the claim, claiming it again with every warning if it was lost.
DEFAULT_CLAIM_REUSE_SECONDS = 300.0
# The check before an edit waits at most this long for the service (connecting included):
# enough for a server across a network over HTTPS, short enough that a service that
# accepts and never answers costs one edit half a second (after which the checks skip the
# network for a moment). A refused connection costs nothing. editCheckSeconds /
# ORCHESTRATOR_EDIT_CHECK_SECONDS, 0.05 to 5.
DEFAULT_EDIT_CHECK_SECONDS = 0.5
# Claude Code's, Codex's (apply_patch) and Gemini CLI's (replace, write_file): the adapters
# (orchestrator_hook.agents) put an edit's files in tool_input file_path or file_paths.
EDITING_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch",
                           "replace", "write_file"})
TOOL_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure"})


# -- files -------------------------------------------------------------------------------

def read_json(path: str | os.PathLike[str], default: object = None) -> object:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return default


class locked:  # lower case: used like the function it replaces, ``with locked(p):``
    """Hold an flock on ``path``; yields False when ``blocking`` is off and it is taken.

    A class, not ``contextlib.contextmanager``: importing contextlib costs the fast path
    more than the lock does.
    """

    def __init__(self, path: str | os.PathLike[str], *, shared: bool = False,
                 blocking: bool = True) -> None:
        self.path, self.shared, self.blocking = os.fspath(path), shared, blocking
        self.fd = -1

    def __enter__(self) -> bool:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        try:
            fcntl.flock(self.fd, mode if self.blocking else mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except BaseException:
            os.close(self.fd)
            raise
        return True

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.fd)


# -- the client's own state: the session map, the outage memo, the log -------------------
# Here with string paths for the fast paths (the check before an edit); ``state.
# ProjectState`` is the same in pathlib for the full handlers.

# After a failed call, the hooks leave the service alone this long.
DOWN_SECONDS = 2.0
LOG_LIMIT_BYTES = 256 * 1024


def mapped_session(root: str, claude_session_id: str) -> dict[str, object] | None:
    """This Claude session's entry in ``sessions.json`` (its orchestrator session)."""
    sessions = read_json(os.path.join(root, "sessions.json"), {})
    entry = sessions.get(claude_session_id) if isinstance(sessions, dict) else None
    return entry if isinstance(entry, dict) else None


def service_down(root: str) -> bool:
    try:
        with open(os.path.join(root, "down-until"), encoding="utf-8") as handle:
            return float(handle.read()) > time.time()
    except (OSError, ValueError):
        return False


def mark_down(root: str, seconds: float = DOWN_SECONDS) -> None:
    try:  # noqa: SIM105 - contextlib costs the fast paths more than this write
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "down-until"), "w", encoding="utf-8") as handle:
            handle.write(str(time.time() + seconds))
    except OSError:
        pass


def log(root: str, message: str) -> None:
    """A line in ``hook.log`` (rotated past LOG_LIMIT_BYTES); a log that cannot be written
    must not break the hook."""
    try:
        os.makedirs(root, exist_ok=True)
        path = os.path.join(root, "hook.log")
        try:
            if os.stat(path).st_size > LOG_LIMIT_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} [{os.getpid()}] {message}\n")
    except OSError:
        pass


def file_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:120] or "unknown"


def state_root(project_dir: str | os.PathLike[str]) -> str:
    return os.path.join(project_dir, STATE_DIR_NAME)


def activity_file(root: str | os.PathLike[str], claude_session_id: str, suffix: str) -> str:
    """``activity/<session>.jsonl`` holds the unsent tool uses; ``.lock`` guards it and
    the mtime of ``.flushed`` is the last flush."""
    return os.path.join(root, "activity", file_safe(claude_session_id) + suffix)


def append_activity(root: str | os.PathLike[str], claude_session_id: str,
                    entry: dict[str, object]) -> None:
    line = json.dumps(entry, ensure_ascii=False) + "\n"
    # Appenders share the lock; a flush takes it alone, so no line is lost between
    # the flush reading the file and emptying it.
    with locked(activity_file(root, claude_session_id, ".lock"), shared=True), \
            open(activity_file(root, claude_session_id, ".jsonl"), "a",
                 encoding="utf-8") as handle:
        handle.write(line)


def last_flush(root: str | os.PathLike[str], claude_session_id: str) -> float:
    try:
        return os.stat(activity_file(root, claude_session_id, ".flushed")).st_mtime
    except OSError:
        return 0.0


def claims_memo(root: str, claude_session_id: str) -> str:
    """``activity/<session>.claims``: the files the session's last clean checks claimed,
    with when ({"sessionId": ..., "paths": {path: epoch seconds}})."""
    return activity_file(root, claude_session_id, ".claims")


def _fresh_claims(root: str, claude_session_id: str, session_id: str,
                  seconds: float) -> dict[str, float]:
    """The memo's files that clean checks claimed for ``session_id`` less than ``seconds``
    ago, with when; {} for another session's memo, a torn or foreign file, or none."""
    memo = read_json(claims_memo(root, claude_session_id), {})
    held = memo.get("paths") if isinstance(memo, dict) \
        and memo.get("sessionId") == session_id else None
    now = time.time()
    return {p: t for p, t in held.items() if isinstance(t, (int, float))
            and 0 <= now - t < seconds} if isinstance(held, dict) else {}


def claimed_recently(root: str, claude_session_id: str, session_id: str,
                     paths: list[str], seconds: float) -> bool:
    """True when a clean check claimed every one of ``paths`` for ``session_id`` less than
    ``seconds`` ago (DEFAULT_CLAIM_REUSE_SECONDS)."""
    if seconds <= 0:
        return False
    fresh = _fresh_claims(root, claude_session_id, session_id, seconds)
    return all(p in fresh for p in paths)


def remember_claims(root: str, claude_session_id: str, session_id: str,
                    paths: list[str], seconds: float) -> None:
    """Note a clean check of ``paths``; entries older than ``seconds`` go. Written whole
    and renamed into place, so a check running beside it reads the old memo or the new,
    never half of one (two checks at once: one's paths may be lost, costing a check)."""
    if seconds <= 0:
        return
    kept = _fresh_claims(root, claude_session_id, session_id, seconds)
    kept.update(dict.fromkeys(paths, time.time()))
    path = claims_memo(root, claude_session_id)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"sessionId": session_id, "paths": kept}, handle)
        os.replace(temporary, path)
    except OSError:
        pass


def spooled_names(root: str | os.PathLike[str]) -> list[str]:
    """File names of the calls waiting in the spool, oldest first."""
    try:
        names = os.listdir(os.path.join(root, "spool"))
    except OSError:
        return []
    return sorted(n for n in names if n.endswith(".json") and not n.startswith("."))


# -- where the hook runs, and for what --------------------------------------------------

def project_dir_of(payload: dict[str, object]) -> object:
    return os.environ.get("CLAUDE_PROJECT_DIR") or payload.get("cwd") or os.getcwd()


def claude_session_of(payload: dict[str, object]) -> str:
    return str(payload.get("session_id") or "unknown")


def config_fields(project_dir: str | os.PathLike[str]) -> dict[str, object]:
    """``.claude/orchestrator/config.json`` with the environment on top (``config.Config``'s
    fields)."""
    data = read_json(os.path.join(state_root(project_dir), "config.json"), {})
    if not isinstance(data, dict):
        data = {}
    env = os.environ

    def number(key: str, env_key: str, default: float) -> float:
        try:
            return float(env.get(env_key) or data.get(key) or default)
        except (TypeError, ValueError):
            return default

    def seconds(key: str, env_key: str, default: float) -> float:
        """A period where 0 means off (``number`` reads 0 in the file as unset)."""
        raw = env.get(env_key)
        raw = data.get(key) if raw in (None, "") else raw
        try:
            value = float(default if raw in (None, "") else raw)
        except (TypeError, ValueError):
            return default
        return value if value >= 0 else default

    return {
        "url": env.get("ORCHESTRATOR_URL") or str(data.get("url") or ""),
        "token": env.get("ORCHESTRATOR_TOKEN") or str(data.get("token") or ""),
        "task_id": env.get("ORCHESTRATOR_TASK_ID") or data.get("taskId") or None,
        "budget_tokens": int(number("budgetTokens", "ORCHESTRATOR_BUDGET_TOKENS",
                                    DEFAULT_BUDGET_TOKENS)),
        "flush_seconds": number("flushSeconds", "ORCHESTRATOR_FLUSH_SECONDS",
                                DEFAULT_FLUSH_SECONDS),
        "claim_reuse_seconds": seconds("claimReuseSeconds", "ORCHESTRATOR_CLAIM_REUSE_SECONDS",
                                       DEFAULT_CLAIM_REUSE_SECONDS),
        "edit_check_seconds": min(5.0, max(0.05, number(
            "editCheckSeconds", "ORCHESTRATOR_EDIT_CHECK_SECONDS", DEFAULT_EDIT_CHECK_SECONDS))),
        "agent_id": str(data.get("agentId") or "claude-code"),
        "project_id": env.get("ORCHESTRATOR_PROJECT") or data.get("projectId") or None,
        "all_tools": bool(data.get("allTools")),
        # A private CA's certificates (setup --ca-file); None: the system's store.
        "ca_file": env.get("ORCHESTRATOR_CA_FILE") or data.get("caFile") or None,
    }


# -- one tool use ------------------------------------------------------------------------

def tool_use_entry(payload: dict[str, object], project_dir: str | os.PathLike[str], *,
                   success: bool) -> dict[str, object]:
    name = str(payload.get("tool_name") or "unknown")[:100]
    tool_input = payload.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    summary = describe_tool_use(name, tool_input)
    if not success and payload.get("error"):
        summary += f" failed: {str(payload.get('error'))[:200]}"
    if payload.get("agent_id"):  # a subagent's: it counts for its parent's session
        summary = f"(subagent {str(payload.get('agent_type') or payload['agent_id'])[:40]}) " \
            + summary
    entry: dict[str, object] = {"tool": name, "success": success, "timestamp": iso_now(),
                                "summary": summary[:500]}
    if name in EDITING_TOOLS:
        paths = edited_paths(tool_input, project_dir)
        if paths:
            entry["filePaths"] = paths
    return entry


def edited_paths(tool_input: object, project_dir: str | os.PathLike[str]) -> list[str]:
    """The files an editing tool's input names, as claims and keyFiles name them."""
    if not isinstance(tool_input, dict):
        return []
    named = [tool_input[key] for key in ("file_path", "notebook_path")
             if isinstance(tool_input.get(key), str) and tool_input[key]]
    many = tool_input.get("file_paths")  # a patch naming several files (agents.codex)
    if isinstance(many, list):
        named += [p for p in many if isinstance(p, str) and p]
    return [repository_relative(path, project_dir) for path in named]


def describe_tool_use(name: str, tool_input: object) -> str:
    if isinstance(tool_input, dict):
        many = tool_input.get("file_paths")
        if isinstance(many, list) and many:
            return f"{name} {clip(', '.join(str(p) for p in many), 160)}"
        for key in ("file_path", "notebook_path", "command", "pattern", "path", "url"):
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                return f"{name} {clip(value, 160)}"
    return name


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def iso_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def project_relative(path: str, project_dir: str | os.PathLike[str]) -> str:
    """Paths inside the project are stored relative to it, so two clones of one repository
    name the same file the same way (that is what file-conflict detection compares)."""
    if not os.path.isabs(path):
        return path
    try:
        relative = os.path.relpath(path, project_dir)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def repository_root(directory: str, limit: int = 40) -> str | None:
    """The nearest folder at or above ``directory`` holding ``.git`` (a folder in a clone,
    a file in a worktree or submodule), or None."""
    for _ in range(limit):
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
    return None


def repository_relative(path: str, project_dir: str | os.PathLike[str]) -> str:
    """An edited file as claims and keyFiles name it: relative to the root of the
    repository holding it, so that clones and worktrees of one repository, and sessions
    started in a subfolder, name a file the same way; outside any repository, relative
    to the project directory (``project_relative``)."""
    project_dir = os.fspath(project_dir)
    absolute = path if os.path.isabs(path) else os.path.join(project_dir, path)
    absolute = os.path.normpath(absolute)
    root = repository_root(os.path.dirname(absolute))
    if root is None:
        return project_relative(path, project_dir)
    relative = os.path.relpath(absolute, root)
    return path if relative.startswith("..") else relative


# -- the fast path -----------------------------------------------------------------------

def buffer_tool_use(event: str, payload: dict[str, object]) -> bool:
    """PostToolUse / PostToolUseFailure when all there is to do is buffer the tool use:
    append it and return True. False, with nothing done, whenever ``handlers.post_tool_use``
    has more to do (a flush is due, calls wait in the spool) or something is unusual (no
    usable config, an odd payload): the caller then runs the full handler, which also
    logs what went wrong.

    This is ``handlers.post_tool_use`` with its two checks made before the append rather
    than after: when both say "nothing to send", appending is all that handler does.
    """
    if event == "PreToolUse":
        # The edit check (PreEdit, synchronous) notes an edit's start itself.
        return payload.get("tool_name") in EDITING_TOOLS or note_tool_start(payload)
    if event not in TOOL_EVENTS:
        return False
    note_tool_done(payload)
    project_dir = project_dir_of(payload)
    if not isinstance(project_dir, str):
        return False
    config = config_fields(project_dir)
    if not (config["url"] and config["token"]):
        return False  # not set up: the full path decides (it does nothing)
    root = state_root(project_dir)
    claude_session = claude_session_of(payload)
    if time.time() - last_flush(root, claude_session) >= config["flush_seconds"]:
        return False  # a flush is due
    if spooled_names(root):
        return False  # calls wait in the spool and the service may be back: send them
    entry = tool_use_entry(payload, project_dir, success=event == "PostToolUse")
    append_activity(root, claude_session, entry)
    return True


# -- the tool call in flight ---------------------------------------------------------------
# PreToolUse runs asynchronously (install.ASYNC_EVENTS: it never delays a tool) and notes
# each call's start; PostToolUse / PostToolUseFailure note its end. Both only append a
# line to ``activity/<session>.inflight``: their order is not guaranteed, so a call is in
# flight when its start is there and its end is not. What Claude Code was running when
# it died is then known even though its transcript had not caught up yet.

def _inflight_line(payload: dict[str, object], record: dict[str, object]) -> bool:
    project_dir = project_dir_of(payload)
    tool_use_id = payload.get("tool_use_id")
    if not isinstance(project_dir, str) or not isinstance(tool_use_id, str):
        return False
    root = state_root(project_dir)
    if not os.path.isdir(root):
        return False  # not set up
    path = activity_file(root, claude_session_of(payload), ".inflight")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": tool_use_id, **record}, ensure_ascii=False) + "\n")
    return True


def note_tool_start(payload: dict[str, object]) -> bool:
    name = str(payload.get("tool_name") or "unknown")[:100]
    return _inflight_line(payload, {"tool": name, "summary": describe_tool_use(
        name, payload.get("tool_input"))[:500], "at": time.time()})


def note_tool_done(payload: dict[str, object]) -> None:
    try:  # noqa: SIM105 - contextlib costs the fast path more than this whole call
        _inflight_line(payload, {"done": True})
    except OSError:
        pass  # the buffer below matters more


def tools_in_flight(root: str | os.PathLike[str], claude_session_id: str
                    ) -> list[dict[str, object]]:
    """Started tool calls with no end noted, oldest first."""
    try:
        with open(activity_file(root, claude_session_id, ".inflight"), encoding="utf-8") as h:
            lines = h.readlines()
    except OSError:
        return []
    started: dict[str, dict[str, object]] = {}
    done: set[str] = set()
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            continue
        if record.get("done"):
            done.add(record["id"])
        else:
            started[record["id"]] = record
    return [r for key, r in started.items() if key not in done]

