"""The capacity bench's arithmetic (bench/agents.py): CPU per hook call by role from
/proc times, the capacity search's steps and the repeats' medians. Pure functions and
this process's own /proc: nothing here asserts a duration."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import threading
import time

import pytest

from bench.agents import (
    GENERATOR,
    CpuMeter,
    LevelResult,
    ProcTimes,
    Stop,
    capacity_of,
    cpu_ms_per_call,
    level_agents,
    median_capacity,
    next_level,
    read_stat,
    repeat_rows,
    spread,
    thread_cpu,
    thread_group,
    thread_times,
    window_cpu,
    worker_shares,
)
from foundation.observability.threads import name_this_thread

POSTMASTER, BACKEND, OLD_BACKEND, WEB, ORPHAN = (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)


def test_window_cpu_counts_reaped_children_once():
    # The postmaster reaped a backend born in the window (2 s) and one alive at its start
    # (it had used 5 s before, 1 s in the window); a web worker is alive throughout; a
    # process whose parent went first counts up to its last sample.
    first = {POSTMASTER: ProcTimes(10.0, 50.0), BACKEND: ProcTimes(),
             OLD_BACKEND: ProcTimes(5.0, 0.0), WEB: ProcTimes(20.0, 0.0),
             ORPHAN: ProcTimes(1.0, 0.0)}
    last = {POSTMASTER: ProcTimes(10.5, 50.0 + 2.0 + 6.0), BACKEND: ProcTimes(1.5, 0.0),
            OLD_BACKEND: ProcTimes(5.8, 0.0), WEB: ProcTimes(23.0, 0.0),
            ORPHAN: ProcTimes(1.4, 0.0)}
    parent = {POSTMASTER: None, BACKEND: POSTMASTER, OLD_BACKEND: POSTMASTER,
              WEB: None, ORPHAN: (99, 99)}
    roles = {POSTMASTER: "postgres", BACKEND: "postgres", OLD_BACKEND: "postgres",
             WEB: "web", ORPHAN: "web"}
    used = window_cpu(first, last, parent, {POSTMASTER, WEB}, roles)
    assert used["postgres"] == pytest.approx(0.5 + 2.0 + 1.0)
    assert used["web"] == pytest.approx(3.0 + 0.4)


def test_window_cpu_children_of_a_killed_process_count_to_their_last_sample():
    # A stack killed with its children: its serve is a zombie (exited, not reaped), so
    # the web worker under it, gone too, was reaped by no process of ours.
    serve, worker = (6, 6), (7, 7)
    first = {serve: ProcTimes(2.0, 0.0), worker: ProcTimes(30.0, 0.0)}
    last = {serve: ProcTimes(2.1, 0.0), worker: ProcTimes(31.0, 0.0)}
    roles = {serve: "serve", worker: "web"}
    used = window_cpu(first, last, {serve: POSTMASTER, worker: serve}, {serve, POSTMASTER},
                      roles, frozenset({serve}))
    assert used == pytest.approx({"serve": 0.1, "web": 1.0})


def test_cpu_ms_per_call_groups_roles():
    seconds = {"web": 3.0, "postgres": 1.0, "arcadedb": 0.5, "celery worker": 0.25,
               "celery beat": 0.25, "redis": 0.2, "launcher": 0.05, "serve": 0.05,
               GENERATOR: 0.4}
    ms = cpu_ms_per_call(seconds, 1000)
    assert ms == pytest.approx({
        "web": 3.0, "postgres": 1.0, "graph": 0.5, "worker": 0.5, "redis": 0.2,
        "other": 0.1, "generator": 0.4,
        "server": 5.3,  # every group but the generator
        "web+pg+graph": 4.5})


def test_cpu_meter_counts_a_child_that_exits_in_the_window():
    meter = CpuMeter(None)
    # A child that burns 0.2 s of CPU and exits: reaped by this process (subprocess.run),
    # it is in this process's cutime/cstime, so the generator's role holds it.
    subprocess.run([sys.executable, "-c", (
        "import os\nwhile sum(os.times()[:2]) < 0.2:\n    sum(range(10**4))")], check=True)
    used = meter.seconds()
    # Both sides count in clock ticks; the meter's difference of two float sums can land
    # a hair under (0.19999...), never a tick under.
    assert used[GENERATOR][1] >= 0.2 - 1e-6


def test_read_stat_of_this_process():
    import os

    key, ppid, times, state = read_stat(os.getpid())
    assert key[0] == os.getpid() and ppid == os.getppid() and state == "R"
    assert times.own > 0
    assert read_stat(2**22 + 1) is None  # above pid_max: no such process


def test_next_level_steps_up_until_a_failure_and_down_until_a_hold():
    ladder = [250, 500, 1000, 1500, 2000]

    def search(start: int, holds_up_to: int) -> list[int]:
        results: dict[int, bool] = {}
        while (n := next_level(ladder, start, results)) is not None:
            results[n] = n <= holds_up_to
        return list(results)

    assert search(1000, 1500) == [1000, 1500, 2000]
    assert search(1000, 500) == [1000, 500]
    assert search(1000, 100) == [1000, 500, 250]
    assert search(1000, 5000) == [1000, 1500, 2000]
    assert search(700, 2000) == [500, 1000, 1500, 2000]  # the largest level <= start
    assert search(100, 0) == [250]  # below the ladder: its smallest
    assert search(500, 500) == [500, 1000]
    # A ladder of one level (--agents 500, to profile) runs that level alone.
    assert next_level([500], 1000, {}) == 500
    assert next_level([500], 1000, {500: True}) is None


def test_each_level_starts_tasks_of_its_own_with_the_same_choices():
    """A size run twice makes the same choices (seeded by its size) on new branches, so
    no level replays edits on tasks an earlier level made list them."""
    args = argparse.Namespace(projects=None, team=8)
    first, again = (level_agents(40, None, args, Stop()) for _ in range(2))
    assert [a.area for a in first] == [a.area for a in again]
    assert [a.project for a in first] == [a.project for a in again]
    assert {a.branch for a in first}.isdisjoint(a.branch for a in again)
    assert len({a.branch for a in first}) == 40


def result(n: int, held: bool, p99: float, server: float) -> LevelResult:
    cpu = {"web": server / 2, "postgres": server / 4, "graph": 0.0, "worker": 0.0,
           "redis": 0.0, "other": server / 4, "generator": 1.0, "server": server,
           "web+pg+graph": server * 3 / 4}
    return LevelResult(n, n / 6, 5.0, p99, (p99, "start_session"), 0, 100.0, cpu, held)


def test_repeats_report_median_and_spread():
    runs = [[result(1000, True, 40.0, 6.0), result(1500, False, 300.0, 7.0)],
            [result(1000, True, 60.0, 6.4), result(1500, True, 90.0, 6.6),
             result(2000, False, 900.0, 7.2)],
            [result(1000, False, 120.0, 6.2), result(500, True, 20.0, 5.8)]]
    assert [capacity_of(run) for run in runs] == [1000, 1500, 500]
    assert median_capacity([capacity_of(run) for run in runs]) == 1000
    assert median_capacity([500, 1000]) == 500  # of an even count, the lower one
    assert median_capacity([]) == 0
    rows = {row[0]: row for row in repeat_rows(runs)}
    assert list(rows) == ["500", "1000", "1500", "2000"]
    assert rows["1000"][1] == "2 of 3"
    assert rows["1000"][3] == "60.0 (40.0-120.0)"  # hook p99
    assert rows["1000"][8] == "6.20 (6.00-6.40)"  # server ms per call
    assert rows["2000"][3] == "900.0"  # one run: the value alone
    assert spread([]) == "-"


def test_web_cpu_by_thread_follows_the_names_the_server_gives_its_threads():
    """A thread named as the server names a tool thread is found in /proc under its pool's
    name, with the CPU it used between two readings; the process's first thread is its
    event loop."""
    go, burnt, done = threading.Event(), threading.Event(), threading.Event()

    def tool_thread() -> None:
        name_this_thread("tool_7")
        go.wait()
        until = time.thread_time() + 0.3
        while time.thread_time() < until:
            pass
        burnt.set()
        done.wait()

    worker = threading.Thread(target=tool_thread)
    worker.start()
    try:
        before = thread_times([os.getpid()])
        go.set()
        burnt.wait()
        after = thread_times([os.getpid()])
    finally:
        done.set()
        worker.join()
    key = (os.getpid(), worker.native_id)
    assert after[key][0] == "tool_7" and thread_group(key, "tool_7") == "tool"
    assert thread_group((os.getpid(), os.getpid()), "python") == "event loop (main)"
    used = thread_cpu(before, after)
    assert 0.25 <= used["tool"] <= 0.5


def test_web_cpu_by_process_shows_how_the_workers_share_it():
    """Each process's share of the threads' CPU between two readings, largest first; a
    thread born between them counts from zero; processes under 1 % are left out."""
    before = {(10, 10): ("python", 1.0), (10, 11): ("tool_0", 2.0), (20, 20): ("python", 0.5),
              (30, 30): ("python", 0.0)}
    after = {(10, 10): ("python", 2.0), (10, 11): ("tool_0", 5.0), (20, 20): ("python", 1.5),
             (20, 21): ("tool_0", 3.0), (30, 30): ("python", 0.0)}
    assert worker_shares(before, after) == [0.5, 0.5]
    assert worker_shares(after, after) == []


def test_the_end_of_a_level_wakes_every_sleeping_agent():
    """An agent asleep for an hour wakes when the level ends, told it has ended; one
    whose sleep runs out first is told it has not. No timing decides: the hour cannot
    pass within the test."""

    async def run() -> tuple[bool, bool, bool]:
        stop = Stop()
        short = await stop.sleep(0)
        sleeping = asyncio.ensure_future(stop.sleep(3600))
        await asyncio.sleep(0)  # the long sleep has begun
        stop.set()
        return short, await sleeping, await stop.sleep(3600)

    assert asyncio.run(run()) == (True, False, False)

