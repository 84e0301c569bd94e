"""File backups of what Postgres holds, under CONTEXT_DIR and RECOVERY_DIR: atomic JSON
writes and ids that are safe as file names."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import queue
import re
import tempfile
import threading
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path
from typing import Any

from django.conf import settings

from foundation.backends.coalesce import CoalescingWriter
from foundation.core.errors import OrchestratorError
from foundation.core.projects import namespace
from foundation.observability import tracing
from foundation.observability.threads import ThreadPerProcess, name_this_thread

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$")


def check_safe_id(value: str, field: str = "taskId") -> str:
    """Refuse ids that could escape a directory or not fit a file name (E1612)."""
    if not isinstance(value, str) or not SAFE_ID.match(value) or ".." in value:
        raise OrchestratorError(
            "E1612",
            f"{field} must be 1-255 characters of letters, digits, '.', '_', ':' or '-', "
            "starting with a letter or digit, and must not contain '..'",
            {"field": field, "value": value if isinstance(value, str) else repr(value)},
        )
    return value


def write_json_atomic(path: Path, data: Any, *, compact: bool = False,
                      fsync_now: bool = True) -> None:
    """Write to a temp file in the same directory, fsync, then rename over the target.

    ``compact`` drops the indentation (for large files such as a 10,000-task registry).
    ``fsync_now`` False leaves the fsync to ``sync_writer`` (see ``write_text_atomic``).
    """
    text = (json.dumps(data, separators=(",", ":"), default=str) if compact
            else dumps_indented(data))
    write_text_atomic(path, text, fsync_now=fsync_now)


_encode_str = json.encoder.encode_basestring_ascii  # the C function when CPython has it
_INFINITY = float("inf")


def _encode_leaf(value: Any) -> str:
    """What ``json.dumps(value, default=str)`` gives a value that is not a list, tuple or
    dict, as its (indenting) Python encoder writes it."""
    if isinstance(value, str):
        return _encode_str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value == _INFINITY:
            return "Infinity"
        if value == -_INFINITY:
            return "-Infinity"
        return float.__repr__(value)
    return _encode_str(str(value))  # default=str


def dumps_indented(data: Any) -> str:
    """``json.dumps(data, indent=2, default=str)``, the same text, several times faster.

    CPython uses its C encoder only without ``indent``: with it, every token of the
    document goes through a chain of Python generators. Here each container is laid out
    with one Python step per value, and keys and strings (most of a task's bytes) go to
    the C function that escapes them.
    """
    try:
        return _indented(data, "")
    except TypeError:  # a key that is not a string (json.dumps converts or refuses it)
        return json.dumps(data, indent=2, default=str)


_ITEM = "{}{}: {}".format


def _indented(value: Any, margin: str) -> str:
    if isinstance(value, str):
        return _encode_str(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = margin + "  "
        texts = [_encode_str(item) if type(item) is str else _indented(item, inner)
                 for item in value.values()]
        items = map(_ITEM, repeat(inner), map(_encode_str, value), texts)
        return "{\n" + ",\n".join(items) + "\n" + margin + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        inner = margin + "  "
        texts = [_encode_str(item) if type(item) is str else _indented(item, inner)
                 for item in value]
        return "[\n" + inner + (",\n" + inner).join(texts) + "\n" + margin + "]"
    return _encode_leaf(value)


def write_text_atomic(path: Path, text: str, *, fsync_now: bool = True) -> None:
    """``write_json_atomic`` for JSON text that is already serialised.

    Readers see the old or the new file, never a mix, and once the rename is done the new
    one survives any process being killed: the kernel holds it. Only a power loss or a
    kernel crash can lose what is not yet fsynced. ``fsync_now`` False (the per-save
    backups) hands the fsync to ``sync_writer``, which syncs every file written in a
    burst, and their directories, at most INDEX_FILE_DELAY_MS later.
    """
    with tracing.backend_span("file_write", "file", **{"file.path": str(path)}):
        _write_text_atomic(path, text, fsync_now=fsync_now)


def _write_text_atomic(path: Path, text: str, *, fsync_now: bool) -> None:
    # Plain strings: on this path (every save, twice) pathlib's joins cost more than the
    # system calls.
    target = os.fspath(path)
    directory, name = _split(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    except FileNotFoundError:  # the first file of its directory: made here, not checked each time
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    replaced = None
    try:
        try:
            data = memoryview(f"{text}\n".encode())
            while data:
                data = data[os.write(fd, data):]
            if fsync_now:
                os.fsync(fd)
        finally:
            os.close(fd)
        replaced = _open_replaced(target)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if replaced is not None:
            os.close(replaced)
        raise
    if replaced is not None:
        releaser.release(replaced)
    if not fsync_now:
        with _unsynced_lock:
            _unsynced.add(target)
        sync_writer.request()


def _split(target: str) -> tuple[str, str]:
    """(directory, name) of a file's path, as ``os.path.split`` (in Python) finds them."""
    directory, slash, name = target.rpartition("/")
    return directory or slash or ".", name


def _open_replaced(target: str) -> int | None:
    """A descriptor of the file a rename is about to replace (None when there is none)."""
    try:
        return os.open(target, os.O_RDONLY)
    except OSError:
        return None


class Releaser:
    """Lets go of replaced files on a thread of its own.

    A file replaced by a rename is freed when the last reference to it goes, by the
    thread that drops it. On a file system that discards freed blocks at once (ext4
    mounted with ``discard``) freeing waits for the device, and behind a busy disk's
    flushes that was 10-600 ms inside the tool thread answering a call, for every agent
    whose call came next. So the writer holds the old file open across the rename and
    hands the descriptor here; this thread closes it, and the wait is its own. Bounded:
    with ``limit`` descriptors already waiting the caller closes its own, as before.
    """

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._held: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._thread = ThreadPerProcess("file-release")

    def release(self, fd: int) -> None:
        if self._held.qsize() >= self._limit:
            os.close(fd)
            return
        self._thread.start(self._run)
        self._held.put(fd)

    def _run(self) -> None:
        name_this_thread("w-file-release")
        while True:
            fd = self._held.get()
            with contextlib.suppress(OSError):
                os.close(fd)


releaser = Releaser()

_unsynced: set[str] = set()
_unsynced_lock = threading.Lock()


def _fsync(target: str) -> None:
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_pending_files() -> bool:
    """fsync the files written with ``fsync_now=False`` since the last call, then their
    directories (which makes the renames durable too)."""
    with _unsynced_lock:
        paths = list(_unsynced)
        _unsynced.clear()
    for path in paths:
        with contextlib.suppress(FileNotFoundError):  # replaced or removed since
            _fsync(path)
    for directory in {os.path.dirname(path) or "." for path in paths}:
        with contextlib.suppress(FileNotFoundError):
            _fsync(directory)
    return True


sync_writer = CoalescingWriter("file-fsync", sync_pending_files)


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an advisory lock for ``path`` across threads and processes (flock on a small
    hidden lock file beside it), so that read-compare-write sequences on it do not
    interleave. The lock file is named by a hash: ``.<name>.lock`` could exceed NAME_MAX.
    """
    directory, name = _split(os.fspath(path))
    lock = f"{directory.rstrip('/')}/.{hashlib.sha1(name.encode()).hexdigest()[:20]}.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except FileNotFoundError:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read_json(path: Path) -> Any | None:
    try:
        # Plain reads of bytes (json decodes them): a save reads its task file each time,
        # and a file object with its buffer and text layer cost more than the reading.
        fd = os.open(path, os.O_RDONLY)
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
        finally:
            os.close(fd)
        return json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None


# The default project's files keep the spec's layout right under CONTEXT_DIR and
# RECOVERY_DIR; every other project has the same layout under projects/<projectId>/.
PROJECTS_SUBDIR = "projects"


def context_dir(project_id: str | None = None) -> Path:
    """The context file root of ``project_id`` (None: the default project's)."""
    return _context_path(settings.CONTEXT_DIR, namespace(project_id) if project_id else None)


def recovery_dir(project_id: str | None = None) -> Path:
    """The recovery file root of ``project_id`` (None: the default project's)."""
    root = Path(settings.RECOVERY_DIR)
    space = namespace(project_id) if project_id else None
    return root / PROJECTS_SUBDIR / space if space else root


def task_file(task_id: str, project_id: str | None = None) -> Path:
    return _context_path(settings.CONTEXT_DIR, namespace(project_id) if project_id else None,
                         "task-agents", f"{check_safe_id(task_id)}.json")


def hot_context_file(project_id: str | None = None) -> Path:
    """``_hot_context.json`` of ``project_id``: the project's active task and its hot context."""
    return _context_path(settings.CONTEXT_DIR, namespace(project_id) if project_id else None,
                         "_hot_context.json")


@functools.lru_cache(maxsize=4096)
def _context_path(root: str | os.PathLike, space: str | None, *parts: str) -> Path:
    """``root`` [/projects/<space>] /parts..., remembered: a save asks for the same few
    paths each time, and each pathlib join parses its parts again."""
    path = Path(root)
    if space:
        path = path / PROJECTS_SUBDIR / space
    return path.joinpath(*parts) if parts else path


def writable(directory: Path) -> bool:
    """Health probe: can we create a file in ``directory``?"""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
            return True
    except OSError:
        return False
