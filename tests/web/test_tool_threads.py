"""The web worker's tool threads (orchestrator.web.tool_threads)."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from orchestrator.web.tool_threads import ToolThreads


def test_calls_run_in_the_named_threads_and_a_failure_is_logged_not_fatal(caplog):
    pool = ToolThreads(2, "tt")
    ran: list[str] = []
    done = threading.Event()

    def fails() -> None:
        raise RuntimeError("boom")

    try:
        with caplog.at_level(logging.ERROR, logger="orchestrator.web.tool_threads"):
            pool.call(fails)
            for n in range(10):
                pool.call(lambda n=n: ran.append(threading.current_thread().name))
            pool.call(done.set)
            assert done.wait(10)
    finally:
        pool.shutdown()
    assert len(ran) == 10 and set(ran) <= {"tt_0", "tt_1"}
    assert "a call failed" in caplog.text and "boom" in caplog.text


def test_submit_gives_a_future_for_run_in_executor():
    pool = ToolThreads(2, "tt")

    def fails() -> None:
        raise ValueError("refused")

    async def both() -> tuple[int, BaseException]:
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(pool, sum, [1, 2, 3])
        with pytest.raises(ValueError) as raised:
            await loop.run_in_executor(pool, fails)
        return result, raised.value

    try:
        result, error = asyncio.run(both())
    finally:
        pool.shutdown()
    assert result == 6 and str(error) == "refused"


def test_shutdown_finishes_what_is_queued_and_a_new_use_starts_threads_again():
    pool = ToolThreads(1, "tt")
    gate, ran = threading.Event(), []
    pool.call(gate.wait, 10)
    for n in range(5):
        pool.call(ran.append, n)
    gate.set()
    pool.shutdown(wait=True)
    assert ran == [0, 1, 2, 3, 4]
    assert pool.submit(sum, [4, 5]).result(10) == 9
    pool.shutdown()
