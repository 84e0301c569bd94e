"""A file replaced by an atomic write is let go of by the releaser's thread, not the
writer's: freeing it can wait for the device (ext4 mounted with discard)."""

from __future__ import annotations

import os
import threading

from foundation.backends import files
from tests.waiting import wait_for


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def test_a_rewrite_replaces_the_file_and_the_old_one_is_closed_by_the_releaser(tmp_path,
                                                                                 monkeypatch):
    path = tmp_path / "task.json"
    files.write_text_atomic(path, '{"version": 1}')
    first = os.stat(path).st_ino
    closed_by: list[tuple[str, int]] = []
    real_close = os.close

    def watching_close(fd: int) -> None:
        closed_by.append((threading.current_thread().name, fd))
        real_close(fd)

    releaser = files.Releaser()
    held = files._open_replaced(str(path))
    assert held is not None and os.fstat(held).st_ino == first
    # The writer's own step, as _write_text_atomic does it: the old file stays open
    # across the rename and goes to the releaser.
    files.write_text_atomic(path, '{"version": 2}')
    assert path.read_text() == '{"version": 2}\n'
    assert os.stat(path).st_ino != first
    monkeypatch.setattr(os, "close", watching_close)
    releaser.release(held)
    assert wait_for(lambda: _closed(held))
    monkeypatch.undo()
    assert [name for name, fd in closed_by if fd == held] == ["file-release"]


def test_writes_leave_no_descriptor_open(tmp_path):
    path = tmp_path / "history.json"
    before = len(os.listdir("/proc/self/fd"))
    for n in range(200):
        files.write_text_atomic(path, f'{{"n": {n}}}', fsync_now=False)
    assert path.read_text() == '{"n": 199}\n'
    assert wait_for(lambda: len(os.listdir("/proc/self/fd")) <= before)
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_a_full_releaser_closes_at_once():
    releaser = files.Releaser(limit=0)
    read_end, write_end = os.pipe()
    releaser.release(read_end)
    assert _closed(read_end)  # closed by the caller: nothing waits in the queue
    os.close(write_end)


def test_a_first_write_has_nothing_to_replace(tmp_path):
    path = tmp_path / "new" / "task.json"
    assert files._open_replaced(str(path)) is None
    files.write_text_atomic(path, "{}")
    assert path.read_text() == "{}\n"
