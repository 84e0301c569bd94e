"""Two servers as one: two complete stacks (web + Celery worker + beat, as ``make run``
starts them) on two ports, sharing one Postgres, Redis and Bolt graph server.

One test, because the stacks take seconds to start and the per-test Redis flush would
wipe the beat lock and schedule between tests. In order:

- only one beat sends, every job about once per period (jobs every second);
- the graph outbox, fed by saves through both web servers at once, is drained with every
  row applied once, and the mirror equals Postgres;
- N stale sessions detected by both stacks at once (their crash sweeps, and
  check_recovery through both web servers) are each flipped once;
- a session started through one server heartbeats through the other;
- the leader beat killed with -9: the other beat leads within the lock period and the
  jobs go on.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from contexts.models import TaskContext
from foundation.core.db import qualified
from foundation.core.jobruns import known_jobs
from foundation.core.models import JobRun
from graph import backend
from graph.models import GraphOutboxEntry
from graph.services.outbox import drain_outbox
from orchestrator.celery import app as celery_app
from sessions.models import ActiveSession
from tests import processes
from tests.conftest import free_port
from tests.e2e.test_beat import EVERY_SECOND
from tests.graph.test_outbox import assert_graph_equals_postgres
from tests.sessions.helpers import status_of
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LOCK_TIMEOUT = 3  # BEAT_LOCK_TIMEOUT_SECONDS of both stacks; their loop is 0.5 s
LOOP = LOCK_TIMEOUT / 6
WINDOW = 8.0  # seconds of both stacks running side by side before the leader is killed
STALE = 30  # sessions detected at once (check_recovery takes at most 50 ids)
TASKS = 6
SAVES = 48
P = "session_orchestration_"


class Stack:
    """Where one stack serves, and its log (web, worker and beat) read back as JSON lines;
    the other lines are Celery's banners."""

    def __init__(self, name: str, port: int, log: Path) -> None:
        self.name, self.port, self.log = name, port, log
        self.base = f"http://127.0.0.1:{port}"

    def lines(self) -> list[dict[str, Any]]:
        found = []
        for raw in self.log.read_text().splitlines():
            if raw.startswith("{"):
                try:
                    found.append(json.loads(raw))
                except ValueError:
                    continue
        return found

    def messages(self, text: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if text in line.get("message", "")]

    def leads(self) -> bool:
        return bool(self.messages("beat: Acquired lock"))

    def tail(self) -> str:
        return f"--- {self.name} ---\n" + self.log.read_text()[-3000:]


def stamp(line: dict[str, Any]) -> float:
    return datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp()


def call(base: str, token: str, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    # A new connection per call, so both web workers of a server may answer.
    answer = httpx.post(f"{base}/api/v1/tools/{tool}/", json=body, timeout=30,
                        headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, (tool, answer.status_code, answer.text)
    return answer.json()


def counted(metrics_dir: Path, name: str, **labels: str) -> float:
    """A counter added up over every process of both stacks (their shared metrics dir)."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(metrics_dir))
    return registry.get_sample_value(name, labels) or 0.0


def outbox_rows_queued() -> int:
    """How many outbox rows were ever queued (the id sequence; nothing here rolls back)."""
    table = GraphOutboxEntry._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(pg_sequence_last_value("
                       "pg_get_serial_sequence(%s, 'id')::regclass), 0)", [table])
        return cursor.fetchone()[0]


def send_lines(stack: Stack, before: float = float("inf")) -> dict[str, list[float]]:
    """When this stack's beat sent each task, by task name."""
    sent: dict[str, list[float]] = {}
    for line in stack.messages("Sending due task"):
        if stamp(line) < before:
            task = line["message"].rsplit("(", 1)[1].rstrip(")")
            sent.setdefault(task, []).append(stamp(line))
    return sent


def run_starts(since: float, until: float) -> dict[str, list[float]]:
    starts: dict[str, list[float]] = {}
    for name, started in JobRun.objects.order_by("started_at").values_list(
            "job_name", "started_at"):
        moment = started.timestamp()
        if since <= moment < until:
            starts.setdefault(name, []).append(moment)
    return starts


def shortest_gap(moments: list[float]) -> float:
    return min((later - earlier for earlier, later in zip(moments, moments[1:], strict=False)),
               default=float("inf"))


def backdate_all(session_ids: list[str], minutes: float) -> None:
    """One statement: every session goes stale at the same instant."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {qualified('active_sessions')} SET last_heartbeat = now() - "
            "make_interval(secs => %s) WHERE session_id = ANY(%s)", [minutes * 60, session_ids])


def crashed_lines(stacks: list[Stack]) -> Counter:
    flipped: Counter = Counter()
    for stack in stacks:
        for line in stack.messages("Session crashed"):
            flipped[line.get("session_id") or line.get("context", {}).get("sessionId")] += 1
    return flipped


def wait(predicate: Callable[[], object], timeout: float, *stacks: Stack) -> None:
    assert wait_for(predicate, timeout=timeout, interval=0.1), \
        "\n".join(stack.tail() for stack in stacks)


def test_two_stacks_behave_as_one(tools, api_token, tmp_path, settings):
    assert settings.ENABLE_NEO4J, "this test needs the Bolt graph server"
    backend.reset()
    backend.cypher("MATCH (n) DETACH DELETE n")
    backend.ensure_schema()
    for number in range(TASKS):
        tools.ok("create_task", {"taskId": f"two-{number}", "name": f"Two {number}"})
    stale_ids = [f"stale-{number:02d}" for number in range(STALE)]
    for session_id in stale_ids:
        tools.ok("start_session", {"sessionId": session_id})
    assert drain_outbox()["success"]
    queued_before = outbox_rows_queued()

    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    env = processes.service_env(
        tmp_path, **EVERY_SECOND, BEAT_LOCK_TIMEOUT_SECONDS=str(LOCK_TIMEOUT),
        CRASH_THRESHOLD_MINUTES="2", PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
    env.pop("GRAPH_OUTBOX_DELAY_MS", None)  # web processes drain in the background (1 s)
    stacks = [Stack(name, free_port(), tmp_path / f"{name}.log") for name in ("a", "b")]

    def commands(stack: Stack) -> dict[str, list[str]]:
        return {"web": processes.web(stack.port, workers=1),
                "worker": processes.celery_worker(),
                "beat": processes.celery_beat("INFO")}

    started = time.monotonic()
    with processes.running(commands(stacks[0]), env, stacks[0].log) as procs_a, \
            processes.running(commands(stacks[1]), env, stacks[1].log) as procs_b:
        for stack in stacks:
            processes.wait_until_serving(stack.base, stack.log)
        wait(lambda: any(stack.leads() for stack in stacks), 30, *stacks)
        [leader] = [stack for stack in stacks if stack.leads()]
        [standby] = [stack for stack in stacks if stack is not leader]
        procs = {stacks[0].name: procs_a, stacks[1].name: procs_b}
        window_start = time.time()

        # The outbox: saves through both web servers at once.
        def save(number: int) -> dict[str, Any]:
            base = stacks[number % 2].base
            return call(base, api_token, "save_context_snapshot", {
                "taskId": f"two-{number % TASKS}",
                "updates": {"currentPhase": f"phase-{number}",
                            "status": ("in_progress", "blocked", "pending")[number % 3]}})

        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(save, range(SAVES)))
        assert {a["graph"] for a in answers} <= {"queued", "unchanged"}, answers

        # A session started through one server heartbeats through the other.
        first, second = stacks
        call(first.base, api_token, "start_session", {"sessionId": "roaming",
                                                      "taskId": "two-0"})
        beat = call(second.base, api_token, "heartbeat", {"sessionId": "roaming",
                                                          "taskId": "two-1"})
        assert beat["success"] and beat["sessionId"] == "roaming", beat
        assert ActiveSession.objects.get(session_id="roaming").task_id == "two-1"
        ended = call(first.base, api_token, "end_session", {"sessionId": "roaming"})
        assert ended["status"] == "ended", ended

        time.sleep(max(0.0, window_start + WINDOW - time.time()))
        window_end = time.time()  # the sweeps sent below are extra runs of "crash sweep"

        # Crash detection: every stale session at once, by both stacks' sweeps (beat's,
        # plus sweeps sent to both workers) and check_recovery through both web servers.
        backdate_all(stale_ids, 10)
        for _ in range(4):
            celery_app.send_task("sessions.detect_crashed_sessions")
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda n: call(stacks[n % 2].base, api_token, "check_recovery",
                                         {"crashedSessionIds": stale_ids}), range(4)))
        wait(lambda: all(status_of(s)[0] == "crashed" for s in stale_ids), 15, *stacks)

        # The leader killed with -9: its lock is left to expire.
        procs[leader.name]["beat"].send_signal(signal.SIGKILL)
        killed_at = time.time()
        wait(standby.leads, LOCK_TIMEOUT + 10, *stacks)
        took_over_at = stamp(standby.messages("beat: Acquired lock")[0])
        resumed: dict[str, float] = {}

        def every_job_ran_again() -> bool:
            resumed.update({job: min(moments) for job, moments in
                            run_starts(took_over_at, float("inf")).items()})
            return set(resumed) >= set(known_jobs()) and set(send_lines(standby)) >= {
                job.task for job in known_jobs().values()}

        wait(every_job_ran_again, 20, *stacks)

        # The outbox drained by both stacks (background drains after each save, beat's).
        wait(lambda: not GraphOutboxEntry.objects.exists(), 20, *stacks)
        queued = outbox_rows_queued() - queued_before
        applied = {via: counted(metrics_dir, P + "graph_outbox_applied_total", via=via)
                   for via in ("drain", "sync")}
        crashed_counted = counted(metrics_dir, P + "sessions_total", status="crashed")
    elapsed = time.monotonic() - started
    logs = "\n".join(stack.tail() for stack in stacks)

    # One beat sent, each job about once a second.
    sent = send_lines(leader, before=killed_at)
    assert set(sent) >= {job.task for job in known_jobs().values()} | {"graph.drain_outbox"}, logs
    assert not send_lines(standby, before=killed_at), logs
    for task, moments in sent.items():
        assert shortest_gap(moments) > 0.8, (task, moments)
    for stack in stacks:
        assert not stack.messages("already sent by another beat"), logs
    window = window_end - window_start
    for job, moments in run_starts(window_start, window_end).items():
        # A run starts when a worker is free, not on the beat's second (gaps of 0.5 s were
        # seen here), so: about one run per period, never two. Two beats sending would
        # double the count and start both copies at once, on the two workers (a few ms
        # apart); one run held back by the worker and the next on time can be under 0.1 s
        # apart (0.2 s seen with the pause-resume and held-save jobs also due every second
        # here, 87 ms once for the hot sync). The sends above are the direct check.
        assert window / 3 <= len(moments) <= window + 1.5, (job, len(moments), window)
        assert shortest_gap(moments) > 0.03, (job, moments)

    # The leader's lock expired before the standby took it: LOCK_TIMEOUT after its last
    # renewal (at most one loop before the kill), seen by the standby within one loop.
    failover = took_over_at - killed_at
    print(f"\nfailover after kill -9: {failover:.2f}s; jobs again after "
          f"{max(resumed.values()) - killed_at:.2f}s; whole test {elapsed:.1f}s")
    assert LOCK_TIMEOUT - 1.5 < failover < LOCK_TIMEOUT + LOOP + 2, (failover, logs)

    # Every queued outbox row applied once (by a drain, or covered by a full sync), and
    # the mirror equals Postgres: each task's phase is its last save's.
    assert queued > 0, queued
    assert applied["drain"] + applied["sync"] == queued, (queued, applied)
    phases = dict(backend.cypher("MATCH (t:Task) WHERE t.taskId STARTS WITH 'two-' "
                                 "RETURN t.taskId, t.phase"))
    assert phases == dict(TaskContext.objects.filter(task_id__startswith="two-")
                          .values_list("task_id", "current_phase"))
    assert_graph_equals_postgres()

    # Each stale session flipped once: one "Session crashed" line and one count each.
    flipped = crashed_lines(stacks)
    assert flipped == Counter({session_id: 1 for session_id in stale_ids}), flipped
    assert crashed_counted == STALE
    assert all(status_of(s) == ("crashed", True, "crash") for s in stale_ids)
    assert status_of("roaming")[0] == "ended"
