"""Benchmark of the session operations. Not a test: it prints one table.

    DATABASE_URL=postgresql://.../orch_bench REDIS_URL=redis://127.0.0.1:6379/9 \
        python -m bench.sessions [--url http://127.0.0.1:8000]

Heartbeats over HTTP with 8 clients (throughput and p50/p99) against ``--url`` (a server
started with the same environment) or, without it, against ``python -m
orchestrator.ops.webserver`` (two workers, as ``make run``) started for the run; append_event
at the service level and over HTTP with 8 clients (a session each, then all on one
session); record_activity (a hook flush of 5 tool uses) over HTTP, 1 and 8 clients;
recent events (30 turns); one crash sweep over ``--sweep`` stale sessions.
Bench sessions are named ``bench-...`` and removed afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Callable

from bench.common import (
    ServerProcess,
    ToolClients,
    free_port,
    measure,
    percentile,
    print_table,
    setup_django,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="base URL of a running server (default: start one)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--heartbeats", type=int, default=8000)
    parser.add_argument("--requests", type=int, default=1000,
                        help="timed calls of append_event and recent events")
    parser.add_argument("--sweep", type=int, default=10000)
    return parser.parse_args()


def cleanup() -> None:
    from django.db import connection

    from foundation.core.db import qualified
    from sessions.models import SessionDetail, SessionEvent, ToolInvocation

    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {qualified('active_sessions')} "
                       "WHERE session_id LIKE 'bench-%%'")
        cursor.execute("SELECT set_config('orchestrator.allow_version_pruning', 'on', false)")
        for model in (SessionEvent, ToolInvocation, SessionDetail):
            cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE session_id LIKE 'bench-%%'")
        for table in ("context_versions", "task_contexts"):  # the sweep's and hooks' tasks
            cursor.execute(f"DELETE FROM {qualified(table)} "
                           "WHERE task_id LIKE 'bench-sweep-task-%%' OR task_id = 'bench-ra'")
        cursor.execute("SELECT set_config('orchestrator.allow_version_pruning', '', false)")


def bench_heartbeats(url: str, token: str, clients: int, total: int) -> list[str]:
    from sessions.services import lifecycle

    for c in range(clients):
        lifecycle.start_session(session_id=f"bench-hb-{c}")
    http = ToolClients(url, token)
    bodies = [json.dumps({"sessionId": f"bench-hb-{c}"}).encode() for c in range(clients)]

    def beat(client: int, i: int) -> None:
        http.post("heartbeat", bodies[client])

    measure(beat, clients=clients, requests=clients * 20)  # warm-up: connections, caches
    started = time.perf_counter()
    samples = measure(beat, clients=clients, requests=total)
    elapsed = time.perf_counter() - started
    return row("heartbeat (HTTP)", clients, samples, f"{len(samples) / elapsed:,.0f}/s",
               "≥1,500/s, p99 ≤ 10")


def row(name: str, clients: int, samples: list[float], throughput: str, target: str):
    ms = [s * 1000 for s in samples]
    return [name, str(clients), str(len(ms)), f"{percentile(ms, 0.5):.2f}",
            f"{percentile(ms, 0.99):.2f}", throughput, target]


def bench_events(url: str, token: str, requests: int) -> list[list[str]]:
    from django.db import connection

    from sessions.services import events, lifecycle

    kinds = [("user_message", "user"), ("model_message", "assistant"),
             ("tool_call", "tool"), ("tool_result", "tool")]
    for name in ["bench-ev", "bench-ev-shared", *(f"bench-ev-{c}" for c in range(8))]:
        lifecycle.start_session(session_id=name)

    def append(client: int, i: int) -> None:
        kind, role = kinds[i % 4]
        events.append_event("bench-ev", kind, role, f"event {i} " + "x" * 200, {"i": i})

    started = time.perf_counter()
    appends = measure(append, clients=1, requests=requests)
    rate = f"{requests / (time.perf_counter() - started):,.0f}/s"
    http = ToolClients(url, token)

    def append_http(session_of: Callable[[int], str]) -> Callable[[int, int], None]:
        def call(client: int, i: int) -> None:
            kind, role = kinds[i % 4]
            http.post("append_session_event", json.dumps({
                "sessionId": session_of(client), "type": kind, "role": role,
                "content": f"event {i} " + "x" * 200, "parts": {"i": i}}).encode())
        return call

    # Each agent appends to its own session: the everyday case, alone and under load.
    own = append_http(lambda client: f"bench-ev-{client}")
    alone = measure(own, clients=1, requests=requests, warmup=5)
    started = time.perf_counter()
    own_samples = measure(own, clients=8, requests=requests, warmup=5)
    own_rate = f"{requests / (time.perf_counter() - started):,.0f}/s"
    # Eight writers on one session queue on its row lock: the worst case.
    shared = measure(append_http(lambda client: "bench-ev-shared"), clients=8,
                     requests=requests, warmup=5)

    def recent(client: int, i: int) -> None:
        window = events.recent_events("bench-ev", max_turns=30)["events"]
        assert sum(e["type"] == "user_message" for e in window) == 30

    reads = measure(recent, clients=1, requests=requests)
    connection.close()
    # Under load on 2 cores the tail is CPU queueing; shown, not a target of its own.
    return [row("append_event (service)", 1, appends, rate, "p99 ≤ 10"),
            row("append_event (HTTP)", 1, alone, "", "p99 ≤ 10"),
            row("append_event (HTTP), a session each", 8, own_samples, own_rate, "(load)"),
            row("append_event (HTTP), one shared session", 8, shared, "", "(load)"),
            row("recent events, 30 turns (service)", 1, reads, "", "p99 ≤ 20")]


def bench_record_activity(url: str, token: str, requests: int) -> list[list[str]]:
    """A hook flush: heartbeat + 5 tool-history rows + the keyFiles check of one edit."""
    from contexts.services.tasks import create_task
    from sessions.services import lifecycle

    create_task("bench-ra", {"name": "Hook bench"})
    for c in range(8):
        lifecycle.start_session(session_id=f"bench-ra-{c}", task_id="bench-ra",
                                project_dir="/bench")
    http = ToolClients(url, token)
    stamp = "2026-01-01T00:00:00Z"
    bodies = [json.dumps({"sessionId": f"bench-ra-{c}", "toolUses": [
        {"tool": "Read", "success": True, "timestamp": stamp, "filePaths": ["/bench/a.py"]},
        {"tool": "Edit", "success": True, "timestamp": stamp, "filePaths": ["/bench/a.py"],
         "summary": "Edit a.py"},
        {"tool": "Bash", "success": False, "timestamp": stamp},
        {"tool": "Grep", "success": True, "timestamp": stamp},
        {"tool": "Write", "success": True, "timestamp": stamp,
         "filePaths": [f"/bench/out{c}.py"]}]}).encode() for c in range(8)]

    def flush(client: int, i: int) -> None:
        http.post("record_activity", bodies[client])

    alone = measure(flush, clients=1, requests=requests, warmup=10)
    started = time.perf_counter()
    loaded = measure(flush, clients=8, requests=requests, warmup=10)
    rate = f"{requests / (time.perf_counter() - started):,.0f}/s"
    return [row("record_activity (HTTP), 5 tool uses", 1, alone, "", "(hook flush)"),
            row("record_activity (HTTP), 5 tool uses", 8, loaded, rate, "(load)")]


def bench_sweep(count: int, runs: int = 5) -> list[list[str]]:
    """Sweeps of ``count`` stale sessions, ``runs`` times each: sessions without a task,
    then sessions working on tasks, whose snapshot copies the task's whole row."""
    from django.db import connection

    from foundation.core.db import qualified
    from sessions.services import recovery

    table = qualified("active_sessions")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {qualified('task_contexts')} (task_id, name, status, key_files, "
            "immediate_context) SELECT 'bench-sweep-task-' || g, 'Sweep task ' || g, "
            "'in_progress', jsonb_build_array('src/a' || g || '.py', 'src/b' || g || '.py'), "
            "jsonb_build_object('workingOn', 'step ' || g, 'nextStep', 'more') "
            "FROM generate_series(1, 100) g ON CONFLICT (task_id) DO NOTHING")
    rows = []
    for label, task in (("no task", "NULL"),
                        ("on 100 tasks", "'bench-sweep-task-' || (1 + g %% 100)")):
        samples = []
        for _ in range(runs):
            with connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {table} WHERE session_id LIKE 'bench-sweep-%%'")
                cursor.execute(
                    f"INSERT INTO {table} (session_id, task_id, last_heartbeat) "
                    f"SELECT 'bench-sweep-' || g, {task}, now() - interval '1 hour' "
                    "FROM generate_series(1, %s) g", [count])
                # Earlier runs leave dead tuples behind; measure the steady state.
                cursor.execute(f"VACUUM ANALYZE {table}")
            started = time.perf_counter()
            flipped = recovery.detect_crashed_sessions()
            samples.append(time.perf_counter() - started)
            assert len(flipped) >= count, len(flipped)
        rows.append(row(f"crash sweep of {count:,} sessions, {label}", 1, samples,
                        f"max {max(samples) * 1000:.0f} ms", "p50 ≤ 200"))
    return rows


def main() -> None:
    args = parse_args()
    setup_django()
    import logging

    from django.core.management import call_command

    from foundation.core.models import ApiToken

    # The sweep logs one WARN line per crashed session; keep the table readable.
    logging.getLogger("orchestrator.sessions").setLevel(logging.ERROR)
    call_command("migrate", verbosity=0)
    cleanup()
    _, token = ApiToken.issue(f"bench-{time.time_ns()}")
    rows = []
    try:
        server = contextlib.nullcontext() if args.url else ServerProcess(free_port())
        with server as live:
            url = args.url or live.url
            rows.append(bench_heartbeats(url, token, args.clients, args.heartbeats))
            rows.extend(bench_events(url, token, args.requests))
            rows.extend(bench_record_activity(url, token, args.requests))
        rows.extend(bench_sweep(args.sweep))
    finally:
        cleanup()
    print_table(["operation", "clients", "calls", "p50 ms", "p99 ms", "throughput", "target"],
                rows)


if __name__ == "__main__":
    main()
