"""Benchmark of conflict detection and resolution. Not a test: it prints one table.

    DATABASE_URL=postgresql://.../orch_conflicts_bench REDIS_URL=redis://127.0.0.1:6379/9 \
        python -m bench.conflicts --tasks 10000

Loads ``--tasks`` active tasks (status pending / in_progress / blocked) with 10 key files
each. Tasks come in pairs; every tenth pair shares 1 file, the next 3 and the next 5 (so
30 % of the pairs overlap, with medium and high severities), the rest have only private
files. It also leaves 100 expired locks, 1000 cached tasks of which 50 are stale, and 50
tasks with two recovery versions. Then it times:

- detect_conflicts, first run (stores every conflict) and steady state (re-detection:
  nothing new, everything in ``existing``), all types and file_conflict alone;
  target <= 500 ms;
- resolve_conflict p50/p99 at 1 and 8 concurrent resolvers (use_a on file conflicts,
  each a versioned task save, and ignore).

Refuses a database that already has tasks unless ``--force`` (then earlier bench tasks
are archived so exactly ``--tasks`` active tasks remain).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import uuid

from bench.common import Result, measure, print_table, setup_django


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=20, help="timed steady-state detections")
    parser.add_argument("--resolutions", type=int, default=400,
                        help="timed resolutions per concurrency level")
    parser.add_argument("--force", action="store_true",
                        help="run against a database that already has tasks")
    return parser.parse_args()


def load(tasks: int, force: bool) -> str:
    """Insert the bench tasks in one statement; returns the run's task id prefix."""
    from django.core.management import call_command
    from django.db import connection

    from contexts.models import TaskContext
    from foundation.core.db import qualified

    call_command("migrate", verbosity=0)
    existing = TaskContext.objects.count()
    if existing and not force:
        raise SystemExit(f"the database already has {existing} tasks; use --force to run "
                         "against it anyway (earlier bench tasks are archived)")
    prefix = f"cb{uuid.uuid4().hex[:6]}-"
    table = qualified("task_contexts")
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET status = 'archived' WHERE task_id LIKE 'cb%%-%%' "
                       "AND status <> 'archived'")
        print(f"loading {tasks} active tasks ({prefix}*) ...", file=sys.stderr)
        # shared(g) = files task g shares with its pair partner: 1, 3 or 5 for 30 % of pairs.
        cursor.execute(f"""
            WITH t AS (
              SELECT g, CASE (g / 2) %% 10 WHEN 0 THEN 1 WHEN 1 THEN 3 WHEN 2 THEN 5
                        ELSE 0 END AS shared
              FROM generate_series(0, %s) g)
            INSERT INTO {table} (task_id, name, status, priority, current_phase, key_files)
            SELECT %s || lpad(g::text, 5, '0'), 'Conflict bench task ' || g,
                   (ARRAY['pending','in_progress','blocked'])[1 + g %% 3], g %% 100, 'build',
                   (SELECT jsonb_agg(f) FROM (
                      SELECT 'src/p' || (g / 2) || '/shared' || i || '.py' AS f
                      FROM generate_series(1, shared) i
                      UNION ALL
                      SELECT 'src/t' || g || '/file' || i || '.py'
                      FROM generate_series(1, 10 - shared) i) files)
            FROM t""", [tasks - 1, prefix])
    return prefix


def seed_redis_and_versions(prefix: str, tasks: int) -> None:
    """Expired locks, cached tasks (some stale) and recovery versions."""
    from django.conf import settings

    from contexts.models import TaskContext
    from contexts.services import cache, representation
    from contexts.services.save import save_task_changes
    from foundation.backends import redis_store
    from locks.services import lock_key

    ids = [f"{prefix}{n:05d}" for n in range(tasks)]
    expired = {"lockedAt": "2020-01-01T00:00:00Z", "expiresAt": "2020-01-01T00:05:00Z"}
    redis_store.run(lambda r: r.mset({
        lock_key(t): json.dumps({"taskId": t, "sessionId": f"gone-{t}", **expired})
        for t in ids[:100]}))
    cached = {}
    for n, task in enumerate(TaskContext.objects.filter(task_id__in=ids[:1000])):
        doc = representation.task_part(task)
        if n < 50:
            doc["currentPhase"] = "stale cached phase"
        cached[cache.task_cache_key(task.task_id)] = json.dumps(doc, default=str)
    redis_store.run(lambda r: r.mset(cached))
    redis_store.run(lambda r: [r.expire(k, settings.REDIS_TASK_CONTEXT_TTL) for k in cached])
    for task_id in ids[-50:]:
        for phase in ("recovered", "recovered again"):
            save_task_changes(task_id, {"currentPhase": phase}, change_type="recovery",
                              sync_to_file=False)


def time_once(call) -> tuple[float, object]:
    started = time.perf_counter()
    value = call()
    return time.perf_counter() - started, value


def main() -> None:
    args = parse_args()
    setup_django()
    logging.getLogger("orchestrator").setLevel(logging.ERROR)
    from django.conf import settings
    from django.db import connection

    from conflicts.models import ContextConflict
    from conflicts.services.detection import detect_conflicts
    from conflicts.services.resolution import resolve_conflict

    settings.ENABLE_FILE_SYNC = False  # files are not part of what is measured here
    prefix = load(args.tasks, args.force)
    seed_redis_and_versions(prefix, args.tasks)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # what autovacuum would have done after the bulk load
    results: list[Result] = []

    first_s, first = time_once(detect_conflicts)
    summary = first["summary"]
    print(f"first run: {summary}", file=sys.stderr)
    results.append(Result("detect_conflicts (first run, stores all)", "service", 1, [first_s]))
    steady = measure(lambda c, i: detect_conflicts(), clients=1, requests=args.runs)
    results.append(Result("detect_conflicts (steady state)", "service", 1, steady))
    files_only = measure(lambda c, i: detect_conflicts(None, ["file_conflict"]), clients=1,
                         requests=args.runs)
    results.append(Result("detect_conflicts file_conflict only", "service", 1, files_only))

    pending = list(ContextConflict.objects.filter(
        conflict_type="file_conflict", resolution_status="unresolved",
        task_a_id__startswith=prefix).values_list("pk", flat=True))
    for clients in (1, 8):
        batch, pending = pending[:args.resolutions], pending[args.resolutions:]
        if len(batch) < args.resolutions:
            print(f"only {len(batch)} conflicts left for {clients} clients", file=sys.stderr)
        samples = measure(
            lambda c, i, batch=batch: resolve_conflict(
                batch[i], {"action": "use_a" if i % 2 == 0 else "ignore"},
                resolved_by="bench"),
            clients=clients, requests=len(batch), per_thread_close=lambda: connection.close())
        results.append(Result("resolve_conflict (use_a / ignore)", "service", clients,
                              samples))

    print(f"\n{args.tasks} active tasks x 10 key files; first run found "
          f"{summary['newConflicts']} conflicts ({summary['highCount']} high)")
    print_table(["operation", "transport", "clients", "n", "p50 ms", "p99 ms"],
                [r.row() for r in results])
    target = max(steady)
    print(f"steady-state detect_conflicts max {target * 1000:.1f} ms "
          f"({'meets' if target <= 0.5 else 'MISSES'} the 500 ms target)")


if __name__ == "__main__":
    main()
