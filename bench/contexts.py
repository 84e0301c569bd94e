"""Benchmark of the context operations. Not a test: it prints one table.

    DATABASE_URL=postgresql://.../orch_bench REDIS_URL=redis://127.0.0.1:6379/9 \
        python -m bench.contexts --tasks 10000 --versions 100000

Loads ``--tasks`` tasks (ids ``bench-NNNNN``) and ``--versions`` versions into the
database (migrating it first), then measures p50/p99 latency at 1 and 8 concurrent
clients, at the service level and over HTTP (the production web server,
``python -m orchestrator.ops.webserver`` with two workers, started for the run), for
save_context_snapshot, get_unified_context (cache hit and miss), switch_task and
rollback_to, plus the cache hit rate of a read-mostly mix (90 % reads, 10 % saves over a
working set of 200 tasks, from a cold cache and then warm). Refuses a database that
already has tasks unless ``--force`` (then existing bench tasks are reused).
"""

from __future__ import annotations

import argparse
import random
import sys

from bench.common import (
    Result,
    ServerProcess,
    ToolClients,
    free_port,
    measure,
    print_table,
    setup_django,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--versions", type=int, default=100000,
                        help="total versions to load (at least one per task)")
    parser.add_argument("--requests", type=int, default=300,
                        help="timed calls per operation, transport and concurrency")
    parser.add_argument("--mix", type=int, default=4000, help="calls in the read-mostly mix")
    parser.add_argument("--force", action="store_true",
                        help="run against a database that already has tasks")
    return parser.parse_args()


def task_id(n: int) -> str:
    return f"bench-{n:05d}"


def load(tasks: int, versions: int, force: bool) -> None:
    from django.core.management import call_command
    from django.db import connection

    from contexts.models import TaskContext
    from foundation.core.db import qualified

    call_command("migrate", verbosity=0)
    existing = TaskContext.objects.count()
    if existing and not force:
        raise SystemExit(f"the database already has {existing} tasks; use --force to run "
                         "against it anyway (bench tasks are reused, others left alone)")
    loaded = TaskContext.objects.filter(task_id__startswith="bench-").count()
    if loaded >= tasks:
        print(f"reusing {loaded} bench tasks", file=sys.stderr)
        return
    rounds = max(0, versions // tasks - 1)
    print(f"loading {tasks} tasks and {tasks * (rounds + 1)} versions ...", file=sys.stderr)
    table = qualified("task_contexts")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (task_id, name, status, priority, current_phase, "
            "key_files, technical_decisions, keywords, immediate_context) "
            "SELECT 'bench-' || lpad(g::text, 5, '0'), 'Bench task ' || g, "
            "(ARRAY['pending','in_progress','blocked','completed'])[1 + g %% 4], g %% 100, "
            "'phase 0', jsonb_build_array('src/mod' || g || '.py'), '[]'::jsonb, "
            "jsonb_build_array('bench'), jsonb_build_object('workingOn', 'task ' || g, "
            "'lastAction', null, 'nextStep', null, 'blockers', '[]'::jsonb) "
            "FROM generate_series(0, %s) g ON CONFLICT (task_id) DO NOTHING", [tasks - 1])
        for round_no in range(rounds):
            cursor.execute(f"UPDATE {table} SET iteration = iteration + 1, "
                           "current_phase = %s WHERE task_id LIKE 'bench-%%'",
                           [f"phase {round_no + 1}"])
            print(f"  version round {round_no + 2}/{rounds + 1}", file=sys.stderr)


def operations(tasks: int, call) -> dict[str, tuple]:
    """name -> (operation(client, i), prepare(client, i) or None), through ``call``."""
    from contexts.services import cache
    from foundation.backends import redis_store

    hot = [task_id(n) for n in range(min(100, tasks))]
    offset = {"value": 0}

    def pick(i: int) -> str:
        # A fresh task per call, so rollbacks and switches really change something.
        return task_id((offset["value"] + i * 7) % tasks)

    def drop_cache(client: int, i: int) -> None:
        redis_store.delete(cache.task_cache_key(pick(i)))

    return {
        "save_context_snapshot": (lambda c, i: call("save_context_snapshot", {
            "taskId": pick(i), "updates": {"iteration": 1000 + i,
                                           "currentPhase": f"bench save {i}"}}), None),
        "get_unified_context (hit)": (lambda c, i: call("get_unified_context", {
            "taskId": hot[i % len(hot)]}), None),
        "get_unified_context (miss)": (lambda c, i: call("get_unified_context", {
            "taskId": pick(i)}), drop_cache),
        "switch_task": (lambda c, i: call("switch_task", {
            "fromTaskId": pick(i + 1), "toTaskId": pick(i),
            "currentTaskUpdates": {"iteration": i}}), None),
        "rollback_to": (lambda c, i: call("rollback_to", {
            "taskId": pick(i), "target": {"type": "version", "version": 1}}), None),
        "_offset": offset,
    }


def run_suite(label: str, call, tasks: int, requests: int, close) -> list[Result]:
    from contexts.services import cache

    for n in range(min(100, tasks)):
        cache.refresh_task_cache(task_id(n))
    ops = operations(tasks, call)
    offset = ops.pop("_offset")
    results = []
    for clients in (1, 8):
        for name, (operation, prepare) in ops.items():
            offset["value"] = random.randrange(tasks)
            call_samples = measure(operation, clients=clients, requests=requests,
                                   prepare=prepare, per_thread_close=close)
            results.append(Result(name, label, clients, call_samples))
            print(f"  {label} {name} x{clients} done", file=sys.stderr)
    return results


def service_call(tool: str, body: dict) -> dict:
    from foundation.core.tools import ToolContext, call_tool

    return call_tool(tool, body, ToolContext("command", actor="bench"))


def hit_rate(tasks: int, calls: int) -> tuple[float, float]:
    """Hit rate of the read-mostly mix from a cold cache, then of a second, warm run."""
    from contexts.services import cache
    from foundation.backends import redis_store
    from foundation.observability import metrics

    working = [task_id(n) for n in range(1000, 1000 + min(200, tasks))] if tasks > 1200 else [
        task_id(n) for n in range(min(200, tasks))]
    for task in working:  # a cold start, even when an earlier run left them cached
        redis_store.delete(cache.task_cache_key(task))
    rng = random.Random(7)

    def mix() -> float:
        hits0 = metrics.cache_hits_total._value.get()
        misses0 = metrics.cache_misses_total._value.get()
        for i in range(calls):
            target = rng.choice(working)
            if rng.random() < 0.1:
                service_call("save_context_snapshot", {"taskId": target,
                                                       "updates": {"iteration": 5000 + i}})
            else:
                service_call("get_unified_context", {"taskId": target})
        hits = metrics.cache_hits_total._value.get() - hits0
        misses = metrics.cache_misses_total._value.get() - misses0
        return hits / max(1, hits + misses)

    return mix(), mix()


def close_connection() -> None:
    from django.db import connection

    # Resolved in the calling bench thread: each thread closes its own connection.
    connection.close()


def main() -> None:
    args = parse_args()
    setup_django()
    from foundation.core.models import ApiToken

    load(args.tasks, args.versions, args.force)
    results = run_suite("service", service_call, args.tasks, args.requests, close_connection)
    _, token = ApiToken.issue(f"bench-{random.randrange(10**9)}")
    with ServerProcess(free_port()) as server:
        http = ToolClients(server.url, token)
        results += run_suite("http", http.call, args.tasks, args.requests, close_connection)
    cold, warm = hit_rate(args.tasks, args.mix)
    rows = [r.row() for r in results]
    rows.append(["cache hit rate, 90/10 mix, from cold", "service", "1", str(args.mix),
                 f"{cold * 100:.1f} %", ""])
    rows.append(["cache hit rate, 90/10 mix, warm", "service", "1", str(args.mix),
                 f"{warm * 100:.1f} %", ""])
    print(f"\n{args.tasks} tasks loaded; {args.requests} calls per row; 2-core machine")
    print_table(["operation", "transport", "clients", "n", "p50 ms", "p99 ms"], rows)


if __name__ == "__main__":
    main()
