"""Benchmark the task graph: 10,000 tasks and 30,000 edges, both backends.

    DATABASE_URL=... [NEO4J_URI=... NEO4J_USER=... NEO4J_PASSWORD=...] \
        .venv/bin/python bench/graph.py [--force] [--tasks N] [--edges N] [--runs N]

Loads the tasks and edges into the database named by DATABASE_URL (refusing one that
already holds tasks or relationships unless --force, which DELETES them), mirrors them to
the graph server with sync_graph when ENABLE_NEO4J is on, then times get_task_graph at
depth 2 around random tasks and the readyTasks query on each backend. Targets:
depth-2 p50 <= 50 ms, readyTasks p50 <= 100 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orchestrator.settings")

import django  # noqa: E402

django.setup()

from decimal import Decimal  # noqa: E402

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench.common import machine_line  # noqa: E402
from contexts.models import TaskContext  # noqa: E402
from foundation.core.db import qualified  # noqa: E402
from graph import backend  # noqa: E402
from graph.models import TaskRelationship  # noqa: E402
from graph.services import queries  # noqa: E402
from graph.services.sync import sync_graph  # noqa: E402

STATUSES = ["pending"] * 5 + ["in_progress"] * 2 + ["completed"] * 2 + ["blocked"]
KINDS = ["blocks"] * 4 + ["depends_on"] * 3 + ["related_to"] * 2 + ["parent_of"]


def load(tasks: int, edges: int, rng: random.Random) -> None:
    with transaction.atomic():
        TaskContext.objects.bulk_create(
            (TaskContext(task_id=f"bench-{i:05}", name=f"Bench task {i}",
                         status=rng.choice(STATUSES), priority=rng.randrange(100),
                         current_phase=f"phase-{i % 7}", score=Decimal(rng.randrange(10000)) / 100,
                         agent_type=f"agent-{i % 5}")
             for i in range(tasks)), batch_size=2000)
        seen: set[tuple[int, int, str]] = set()
        while len(seen) < edges:
            # Edges point from lower to higher numbers: no cycle in any acyclic type.
            a = rng.randrange(tasks - 1)
            b = min(tasks - 1, a + 1 + int(rng.expovariate(1 / 50)))
            seen.add((a, b, rng.choice(KINDS)))
        TaskRelationship.objects.bulk_create(
            (TaskRelationship(source_task_id=f"bench-{a:05}", target_task_id=f"bench-{b:05}",
                              relationship_type=kind,
                              metadata={"reason": "bench"} if kind == "blocks" else {},
                              strength=Decimal("0.50") if kind == "depends_on" else None)
             for a, b, kind in sorted(seen)), batch_size=5000)


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--edges", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--force", action="store_true",
                        help="delete existing tasks and relationships first")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    if (TaskContext.objects.exists() or TaskRelationship.objects.exists()) and not args.force:
        print("refusing: the database already holds tasks or relationships "
              "(use --force to delete them)", file=sys.stderr)
        return 2
    if args.force:
        TaskRelationship.objects.all().delete()
        TaskContext.objects.all().delete()
        with connection.cursor() as cursor:
            # Versions outlive their task (they are immutable); a reloaded task id would
            # collide with its old version 1, so prune them with the explicit bypass.
            cursor.execute("SELECT set_config('orchestrator.allow_version_pruning', 'on', false)")
            cursor.execute(f"DELETE FROM {qualified('context_versions')}")
            cursor.execute("SELECT set_config('orchestrator.allow_version_pruning', '', false)")
    rng = random.Random(args.seed)
    started = time.perf_counter()
    load(args.tasks, args.edges, rng)
    with connection.cursor() as cursor:  # fresh planner statistics for the bulk load
        cursor.execute(f"ANALYZE {qualified('task_contexts')}")
        cursor.execute(f"ANALYZE {qualified('task_relationships')}")
    print(f"loaded {args.tasks} tasks, {args.edges} edges into Postgres "
          f"in {time.perf_counter() - started:.1f} s")

    backends = ["postgres"]
    if settings.ENABLE_NEO4J:
        started = time.perf_counter()
        report = sync_graph()
        if not report["success"]:
            print(f"graph server: {report['error']}", file=sys.stderr)
            return 1
        print(f"mirrored to the graph with sync_graph in {time.perf_counter() - started:.1f} s")
        backends.insert(0, "neo4j")

    focus = [f"bench-{rng.randrange(args.tasks):05}" for _ in range(args.runs)]
    rows = []
    for name in backends:
        settings.ENABLE_NEO4J = name == "neo4j"
        backend.reset()
        picks = iter(focus * 2)
        queries.get_task_graph(focus[0], 2)  # warm connections and caches
        sizes = [len(queries.get_task_graph(t, 2)["nodes"]) for t in focus[:10]]
        p50, p95 = timed(lambda picks=picks: queries.get_task_graph(next(picks), 2), args.runs)
        rows.append((name, f"get_task_graph depth 2 (~{statistics.mean(sizes):.0f} nodes)",
                     p50, p95, 50))
        ready = len(queries.answer(lambda r: r.ready(None))[0])
        p50, p95 = timed(lambda: queries.answer(lambda r: r.ready(None)), max(10, args.runs // 5))
        rows.append((name, f"readyTasks ({ready} tasks)", p50, p95, 100))

    print(f"\n{'backend':<9} {'query':<38} {'p50 ms':>8} {'p95 ms':>8} {'target':>7}  ok")
    for name, query, p50, p95, target in rows:
        print(f"{name:<9} {query:<38} {p50:8.1f} {p95:8.1f} {target:7d}  "
              f"{'yes' if p50 <= target else 'NO'}")
    print(machine_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
