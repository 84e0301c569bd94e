"""The index-file writer: coalesces bursts, survives a failing write, writes synchronously
with a delay of 0."""

from __future__ import annotations

import threading

from foundation.backends.coalesce import CoalescingWriter, CoalescingWriters
from tests.waiting import wait_for


def test_a_burst_is_written_once_and_a_failed_write_does_not_stop_the_writer(settings):
    settings.INDEX_FILE_DELAY_MS = 100
    calls: list[str] = []
    fail_next = threading.Event()

    def write() -> bool:
        if fail_next.is_set():
            fail_next.clear()
            calls.append("failed")
            raise RuntimeError("backend down")
        calls.append("written")
        return True

    writer = CoalescingWriter("test-burst", write)
    for _ in range(20):
        assert writer.request() is None  # scheduled, not written by the caller
    assert wait_for(lambda: calls and not writer._stale.is_set())
    assert 1 <= len(calls) <= 2  # one rewrite per burst (two if the burst was split)

    written = len(calls)
    fail_next.set()
    writer.request()
    assert wait_for(lambda: calls[written:] == ["failed"])
    writer.request()  # the thread is still there and writes the next change
    assert wait_for(lambda: calls[written:] == ["failed", "written"])
    assert writer.flush() is False  # nothing pending


def test_an_interval_spaces_the_writes_of_a_busy_writer(settings):
    """With an interval, a write asked for while the last one is recent waits for the
    interval to pass since that one began, however short the delay."""

    settings.INDEX_FILE_DELAY_MS = 10
    settings.TEST_WRITE_INTERVAL_MS = 400
    started: list[float] = []
    # Each write records when the writer began it (what the interval is measured from): its
    # own clock would also count the moments between that start and the write, which a
    # busy machine stretches for one write and not the next.
    writer = CoalescingWriter("test-interval",
                              lambda: started.append(writer._last_start) or True,
                              interval_setting="TEST_WRITE_INTERVAL_MS")
    writer.request()
    assert wait_for(lambda: len(started) == 1)
    for count in range(1, 4):
        writer.request()
        assert wait_for(lambda written=count: len(started) == written + 1)
    assert all(later - earlier >= 0.4 for earlier, later in zip(started, started[1:],
                                                                strict=False))


def test_a_delay_of_zero_writes_in_the_caller(settings):
    settings.INDEX_FILE_DELAY_MS = 0
    writer = CoalescingWriter("test-sync", lambda: True)
    assert writer.request() is True


def test_keyed_writers_share_one_thread_and_write_each_stale_key_once(settings):
    settings.INDEX_FILE_DELAY_MS = 100
    written: list[str] = []

    def write(key: str) -> bool:
        if key == "broken":
            raise RuntimeError("disk full")
        written.append(key)
        return True

    writers = CoalescingWriters("test-keyed", write)
    before = threading.active_count()
    for _ in range(5):
        for key in ("p2", "p1", "broken", "p3"):
            assert writers.request(key) is None
    assert wait_for(lambda: sorted(written) == ["p1", "p2", "p3"])
    # One writer thread for all keys (a project each on a real server), not one per key.
    assert threading.active_count() - before == 1
    writers.request("p1")  # a failing key does not stop the thread
    assert wait_for(lambda: written.count("p1") == 2)
