"""``python -m bench``: the save, read and heartbeat paths in one table, LangGraph beside us.

    make bench                                   # embedded servers, small sizes
    make bench BENCH_ARGS="--requests 500 --full"

or against servers of your own (a dedicated database: the bench writes to it):

    DATABASE_URL=... REDIS_URL=... NEO4J_URI=... .venv/bin/python -m bench [--full]

Slices, all on the same Postgres in the same run, ~2 KB of task context per save:
- LangGraph's ``PostgresSaver`` (``.[bench]`` extra): ``put`` and ``get_tuple``, in
  process, 1 and 8 threads (a pool of 8 autocommit connections, as its docs set it up);
- ours at the service level (the tool registry, in process) and over HTTP (the
  production web server, two workers, the bare keep-alive client of bench/common.py):
  save_context_snapshot, cached get_unified_context and heartbeat, 1 and 8 clients,
  with the graph mirror off and on;
- the save against its own floor (bench/floor.py): the work one save promises (one
  UPDATE firing the version trigger, one Redis pipeline with both keys, the two atomic
  file writes) done alone through the same drivers and servers, with and without the
  files, interleaved in blocks with our save at the service level and over HTTP, file
  sync on and off (``--only floor`` runs just this slice);
- the scaling curve: save, cached read, detect_conflicts, the crash sweep and
  get_task_graph (depth 2, Postgres reader) at 1k and 10k tasks (``--full``: 100k).

Timings on a shared or busy machine describe the machine: compare rows of one run.
"""

from __future__ import annotations

import argparse
import atexit
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.common import (
    ServerProcess,
    ToolClients,
    free_port,
    measure,
    percentile,
    print_table,
    setup_django,
)

CONTEXT = "x" * 1900  # with the JSON around it, ~2 KB of immediateContext per save
CLIENT_COUNTS = (1, 8)
SLICES = ("langgraph", "floor", "ours", "scale", "agents")


@dataclass
class Row:
    slice: str
    operation: str
    transport: str
    graph: str
    clients: int
    samples: list[float]
    wall: float
    peer: str | None = None  # the LangGraph row this one compares to
    # Measured in interleaved blocks (bench/floor.py): p50 is the median of the blocks'.
    block_p50: float | None = None

    @property
    def p50(self) -> float:
        if self.block_p50 is not None:
            return self.block_p50 * 1000
        return statistics.median(self.samples) * 1000

    def cells(self, peers: dict[tuple[str, int], Row]) -> list[str]:
        peer = peers.get((self.peer, self.clients)) if self.peer else None
        return [self.slice, self.operation, self.transport, self.graph, str(self.clients),
                str(len(self.samples)), f"{self.p50:.2f}",
                f"{percentile(self.samples, 0.99) * 1000:.2f}",
                f"{len(self.samples) / self.wall:,.0f}" if self.wall else "",
                f"{self.p50 / peer.p50:.1f}x" if peer else ""]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300,
                        help="timed calls per row (split over the clients)")
    parser.add_argument("--scale", default="1000,10000",
                        help="task counts of the scaling curve, comma separated")
    parser.add_argument("--full", action="store_true", help="add 100,000 tasks to the curve")
    parser.add_argument("--no-graph", action="store_true",
                        help="skip the graph-on rows (no Bolt server configured)")
    parser.add_argument("--only", default=",".join(SLICES),
                        help=f"slices to run, comma separated, of {','.join(SLICES)} "
                        "(default all)")
    parser.add_argument("--agents", default=None,
                        help="the agents slice's ladder of load levels (python -m bench.agents "
                        "--agents; default its own)")
    parser.add_argument("--agents-start", type=int, default=None,
                        help="the level its capacity search starts at (bench.agents --start)")
    parser.add_argument("--agents-seconds", type=float, default=60,
                        help="measured seconds per load level of the agents slice")
    parser.add_argument("--agents-repeat", type=int, default=3,
                        help="capacity searches on one server (bench.agents --repeat): the "
                        "capacity is their median")
    parser.add_argument("--blocks", type=int, default=30,
                        help="interleaved blocks of the floor slice, each of requests/blocks "
                        "calls (its rows' p50 is the median of the blocks' p50s)")
    args = parser.parse_args()
    args.only = {s.strip() for s in args.only.split(",") if s.strip()}
    if args.only - set(SLICES):
        parser.error(f"--only: unknown slice(s) {', '.join(sorted(args.only - set(SLICES)))}")
    return args


def timed(operation: Callable[[int, int], object], clients: int, requests: int,
          close: Callable[[], None] | None = None) -> tuple[list[float], float]:
    started = time.perf_counter()
    samples = measure(operation, clients=clients, requests=requests, warmup=3,
                      per_thread_close=close)
    return samples, time.perf_counter() - started


def close_connection() -> None:
    from django.db import connection

    connection.close()


def fresh_file_dirs() -> Path:
    """A new CONTEXT_DIR and RECOVERY_DIR for this run, in a directory made beside the
    configured CONTEXT_DIR (so on the same file system), for this process and the web
    servers it starts. Files left by an earlier run against another database would hold
    higher versions than this run's, and a save does not write a task file over a newer
    one: the saves would skip their task file and look cheaper than they are."""
    from django.conf import settings

    parent = Path(settings.CONTEXT_DIR).resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=".bench-files-", dir=parent))
    for name, sub in (("CONTEXT_DIR", "contexts"), ("RECOVERY_DIR", "recovery")):
        setattr(settings, name, root / sub)
        os.environ[name] = str(root / sub)
    return root


# --- LangGraph -------------------------------------------------------------------------

def langgraph_rows(requests: int) -> list[Row]:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    url = os.environ["DATABASE_URL"]
    rows = []
    with ConnectionPool(url, min_size=8, max_size=8, open=True,
                        kwargs={"autocommit": True, "prepare_threshold": 0,
                                "row_factory": dict_row}) as pool:
        saver = PostgresSaver(pool)
        saver.setup()

        def config(client: int) -> dict:
            return {"configurable": {"thread_id": f"bench-{client}", "checkpoint_ns": ""}}

        def put(client: int, i: int) -> None:
            checkpoint = empty_checkpoint()
            version = i + 10_000_000  # warm-up calls use negative i
            checkpoint["channel_values"] = {"context": f"{CONTEXT}{i}"}
            checkpoint["channel_versions"] = {"context": version}
            saver.put(config(client), checkpoint, {"source": "loop", "step": i},
                      {"context": version})

        def get(client: int, i: int) -> None:
            assert saver.get_tuple(config(client)) is not None

        for clients in CLIENT_COUNTS:
            rows.append(Row("langgraph", "put", "in-process", "-", clients,
                            *timed(put, clients, requests)))
            rows.append(Row("langgraph", "get_tuple", "in-process", "-", clients,
                            *timed(get, clients, requests)))
    return rows


# --- ours ------------------------------------------------------------------------------

def prepare_tasks() -> None:
    """Tasks bench-0..7, a session on each, and bench-0 the active task: an agent saves
    the task it works on, so a 1-client save writes both Redis keys and both files."""
    from contexts.models import TaskContext
    from contexts.services.switch import switch_task
    from contexts.services.tasks import create_task
    from sessions.services.lifecycle import start_session

    for client in range(max(CLIENT_COUNTS)):
        task_id = f"bench-{client}"
        if not TaskContext.objects.filter(task_id=task_id).exists():
            create_task(task_id, {"name": f"Bench {client}"})
        start_session(session_id=f"bench-s{client}-{random.randrange(10**9)}",
                      task_id=task_id, agent_id="bench")
    switch_task("bench-0", save_current_state=False)


def session_ids() -> list[str]:
    from sessions.models import ActiveSession

    ids = {}
    for session_id, task_id in ActiveSession.objects.filter(
            status="active", task_id__startswith="bench-").values_list("session_id", "task_id"):
        ids[task_id] = session_id
    return [ids[f"bench-{c}"] for c in range(max(CLIENT_COUNTS))]


def our_operations(call: Callable[[str, dict], object]) -> dict[str, Callable]:
    sessions = session_ids()

    def save(client: int, i: int) -> None:
        # The phase changes too, so with the graph on every save queues a mirror update.
        call("save_context_snapshot", {"taskId": f"bench-{client}", "updates": {
            "immediateContext": {"workingOn": f"{CONTEXT}{i}", "nextStep": "bench"},
            "currentPhase": f"phase {i % 50}"}})

    def read(client: int, i: int) -> None:
        call("get_unified_context", {"taskId": f"bench-{client}"})

    def heartbeat(client: int, i: int) -> None:
        call("heartbeat", {"sessionId": sessions[client]})

    return {"save_context_snapshot": save, "get_unified_context (cached)": read,
            "heartbeat": heartbeat}


PEERS = {"save_context_snapshot": "put", "get_unified_context (cached)": "get_tuple"}


def service_call(tool: str, body: dict) -> dict:
    from foundation.core.tools import ToolContext, call_tool

    return call_tool(tool, body, ToolContext("command", actor="bench"))


def settle_outbox(graph: str) -> Row | None:
    """With the graph on, every save queued a mirror update that the web processes (or
    this one) drain in the background; drain what is left now, so that the next row
    measures its own operation and not the Bolt server catching up. The drain is a row of
    its own."""
    if graph != "on":
        return None
    from graph.services.outbox import drain_outbox, pending_count

    pending, started = pending_count(), time.perf_counter()
    if not pending:
        return None
    while pending_count():
        if not drain_outbox()["success"]:
            time.sleep(0.1)
    elapsed = time.perf_counter() - started
    return Row("ours", f"graph outbox drain, {pending} rows left after saves", "service",
               graph, 1, [elapsed], elapsed)


def our_rows(requests: int, graph_modes: list[str]) -> list[Row]:
    from django.conf import settings

    from foundation.core.models import ApiToken

    _, token = ApiToken.issue(f"bench-{random.randrange(10**9)}")
    rows = []
    for graph in graph_modes:
        settings.ENABLE_NEO4J = graph == "on"
        os.environ["ENABLE_NEO4J"] = "true" if graph == "on" else "false"
        for name, operation in our_operations(service_call).items():
            for clients in CLIENT_COUNTS:
                rows.append(Row("ours", name, "service", graph, clients,
                                *timed(operation, clients, requests, close_connection),
                                peer=PEERS.get(name)))
                print(f"  service {name} graph {graph} x{clients}", file=sys.stderr)
                rows += filter(None, [settle_outbox(graph)])
        with ServerProcess(free_port()) as server:
            http = ToolClients(server.url, token)
            for name, operation in our_operations(http.call).items():
                for clients in CLIENT_COUNTS:
                    rows.append(Row("ours", name, "http", graph, clients,
                                    *timed(operation, clients, requests),
                                    peer=PEERS.get(name)))
                    print(f"  http {name} graph {graph} x{clients}", file=sys.stderr)
                    rows += filter(None, [settle_outbox(graph)])
    return rows


# --- the save against its own floor ---------------------------------------------------

FLOOR = "floor: UPDATE + Redis pipeline + 2 atomic file writes"
FLOOR_NO_FILES = "floor: UPDATE + Redis pipeline (no files)"
SAVE = "save_context_snapshot"


def save_name(file_sync: bool) -> str:
    return f"{SAVE}, file sync {'on' if file_sync else 'off'}"


def floor_rows(requests: int, blocks: int) -> list[Row]:
    """The floor (bench/floor.py) with and without files, and our save at the service
    level and over HTTP with file sync on and off, 1 client, graph off, all on task
    bench-0 (the active task), measured in interleaved blocks."""
    from django.conf import settings

    from bench.floor import Floor, interleaved, median_of_block_p50s
    from foundation.core.models import ApiToken

    _, token = ApiToken.issue(f"bench-floor-{random.randrange(10**9)}")
    settings.ENABLE_NEO4J = False
    os.environ["ENABLE_NEO4J"] = "false"
    floor, bare = Floor("bench-0", CONTEXT), Floor("bench-0", CONTEXT, files=False)
    servers = {}
    try:
        for file_sync in (True, False):  # the web server reads it from its environment
            os.environ["ENABLE_FILE_SYNC"] = "true" if file_sync else "false"
            servers[file_sync] = ServerProcess(free_port()).__enter__()
        os.environ.pop("ENABLE_FILE_SYNC")
        service = our_operations(service_call)[SAVE]
        http = {sync: our_operations(ToolClients(server.url, token).call)[SAVE]
                for sync, server in servers.items()}
        variants = {FLOOR: floor.save, FLOOR_NO_FILES: bare.save,
                    (save_name(True), "service"): service,
                    (save_name(False), "service"): service,
                    (save_name(True), "http"): http[True],
                    (save_name(False), "http"): http[False]}
        flip = {(save_name(sync), "service"): (
            lambda sync=sync: setattr(settings, "ENABLE_FILE_SYNC", sync))
            for sync in (True, False)}
        print(f"  floor and our save, {blocks} interleaved blocks", file=sys.stderr)
        measured = interleaved(
            variants, requests=requests, blocks=blocks, before=flip,
            run=lambda operation, clients, n: timed(operation, clients, n, close_connection))
    finally:
        settings.ENABLE_FILE_SYNC = True
        floor.close()
        for server in servers.values():
            server.__exit__()
    rows = []
    for name, done in measured.items():
        operation, transport = (name, "in-process") if isinstance(name, str) else name
        samples = [s for block, _ in done for s in block]
        # ops/s of one client: calls back to back, without the blocks' warm-up calls
        rows.append(Row("floor" if transport == "in-process" else "ours", operation,
                        transport, "off", 1, samples, sum(samples),
                        peer=None if transport == "in-process" else "put",
                        block_p50=median_of_block_p50s(done)))
    return rows


# --- scaling curve ---------------------------------------------------------------------

def grow_to(tasks: int) -> None:
    """Scale tasks up to ``tasks`` (ids scale-NNNNNN), a blocks chain every third task,
    and tasks/10 sessions whose heartbeat is an hour old (for the crash sweep).

    Every task lists a file of its own; two tasks in each hundred also share one, so the
    number of file conflicts grows with the task count (1 pair per 100 tasks) instead of
    with its square, as it would if a few files were listed by every task."""
    from django.db import connection

    from foundation.core.db import qualified

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {qualified('task_contexts')} "
                       "WHERE task_id LIKE 'scale-%%'")
        have = cursor.fetchone()[0]
        cursor.execute(
            f"INSERT INTO {qualified('task_contexts')} (task_id, name, status, priority, "
            "current_phase, key_files, immediate_context) "
            "SELECT 'scale-' || lpad(g::text, 6, '0'), 'Scale task ' || g, "
            "(ARRAY['pending','in_progress','blocked','completed'])[1 + g %% 4], g %% 100, "
            "'phase 0', CASE WHEN g %% 100 < 2 THEN jsonb_build_array('src/t' || g || '.py', "
            "'src/shared' || (g / 100) || '.py') ELSE jsonb_build_array('src/t' || g || '.py') END, "
            "jsonb_build_object('workingOn', 'task ' || g) "
            "FROM generate_series(%s, %s) g", [have, tasks - 1])
        cursor.execute(
            f"INSERT INTO {qualified('task_relationships')} "
            "(source_task_id, target_task_id, relationship_type) "
            "SELECT 'scale-' || lpad(g::text, 6, '0'), 'scale-' || lpad((g + 1)::text, 6, '0'), "
            "'blocks' FROM generate_series(%s, %s) g WHERE g %% 3 = 0 "
            "ON CONFLICT DO NOTHING", [have, tasks - 2])
        cursor.execute(
            f"INSERT INTO {qualified('active_sessions')} (session_id, task_id, status, "
            "last_heartbeat) SELECT 'scale-s' || g || '-' || %s, 'scale-' || "
            "lpad((g * 10)::text, 6, '0'), 'active', now() - interval '1 hour' "
            "FROM generate_series(0, %s) g", [tasks, tasks // 10 - 1])


def curve_point(size: int, requests: int) -> list[Row]:
    """The scaling rows at ``size`` tasks (already loaded)."""
    from conflicts.services.detection import detect_conflicts
    from graph.services import get_task_graph
    from sessions.services.recovery import detect_crashed_sessions

    rng = random.Random(size)

    def task() -> str:
        return f"scale-{rng.randrange(size):06d}"

    def save(client: int, i: int) -> None:
        service_call("save_context_snapshot", {"taskId": task(), "updates": {
            "immediateContext": {"workingOn": f"{CONTEXT}{i}"}}})

    hot = [f"scale-{n:06d}" for n in range(0, size, max(1, size // 50))]

    def read(client: int, i: int) -> None:
        service_call("get_unified_context", {"taskId": hot[i % len(hot)]})

    def graph(client: int, i: int) -> None:
        get_task_graph(task(), depth=2)

    at = f" @ {size:,} tasks"
    rows = [Row("scale", "save_context_snapshot" + at, "service", "off", 1,
                *timed(save, 1, requests // 2)),
            Row("scale", "get_unified_context (cached)" + at, "service", "off", 1,
                *timed(read, 1, requests // 2)),
            Row("scale", "get_task_graph depth 2" + at, "service", "off", 1,
                *timed(graph, 1, 20)),
            Row("scale", "detect_conflicts" + at, "service", "off", 1,
                *timed(lambda c, i: detect_conflicts(), 1, 3))]
    started = time.perf_counter()
    swept = len(detect_crashed_sessions())
    elapsed = time.perf_counter() - started
    rows.append(Row("scale", f"crash sweep, {swept} sessions{at}", "service", "off", 1,
                    [elapsed], elapsed))
    return rows


def scaling_rows(sizes: list[int], requests: int) -> list[Row]:
    from django.conf import settings

    settings.ENABLE_NEO4J = False  # 100k tasks are not mirrored to the graph here
    rows = []
    for size in sizes:
        print(f"  growing to {size} tasks", file=sys.stderr)
        grow_to(size)
        rows += curve_point(size, requests)
    return rows


def find(rows: list[Row], operation: str, transport: str, graph: str, clients: int) -> Row | None:
    return next((r for r in rows if (r.operation, r.transport, r.graph, r.clients)
                 == (operation, transport, graph, clients)), None)


def targets(rows: list[Row], sizes: list[int]) -> list[list[str]]:
    """The speed targets set for the write and read paths, with what this run measured:
    [target, measured, met?]."""
    checks: list[tuple[str, float | None, float, str]] = []  # name, value, bound, unit
    put = find(rows, "put", "in-process", "-", 1)
    get = find(rows, "get_tuple", "in-process", "-", 1)
    save, read = "save_context_snapshot", "get_unified_context (cached)"
    for graph in ("off", "on"):
        row = find(rows, save, "service", graph, 1)
        checks.append((f"save service p50 / LangGraph put p50, graph {graph}",
                       row and put and row.p50 / put.p50, 2.0, "x"))
        row = find(rows, save, "http", graph, 1)
        checks.append((f"save http p50, graph {graph}", row and row.p50, 3.0, "ms"))
        checks.append((f"save http p99, graph {graph}",
                       row and percentile(row.samples, 0.99) * 1000, 10.0, "ms"))
        row = find(rows, read, "service", graph, 1)
        checks.append((f"cached read service p50 / LangGraph get_tuple p50, graph {graph}",
                       row and get and row.p50 / get.p50, 1.0, "x"))
        row = find(rows, read, "http", graph, 1)
        checks.append((f"cached read http p50, graph {graph}", row and row.p50, 1.5, "ms"))
        for name, floor in ((save, 1000), ("heartbeat", 3000), (read, 3000)):
            row = find(rows, name, "http", graph, 8)
            checks.append((f"{name} http, 8 clients, graph {graph} (ops/s, at least)",
                           row and -len(row.samples) / row.wall, -floor, "/s"))
    if len(sizes) > 1:
        small, large = f" @ {sizes[0]:,} tasks", f" @ {sizes[-1]:,} tasks"
        for name in (save, read):
            a, b = (find(rows, name + at, "service", "off", 1) for at in (small, large))
            checks.append((f"{name} p50 at {sizes[-1]:,} / at {sizes[0]:,} tasks",
                           a and b and b.p50 / a.p50, 1.5, "x"))
    conflicts = find(rows, f"detect_conflicts @ {sizes[-1]:,} tasks", "service", "off", 1)
    checks.append((f"detect_conflicts at {sizes[-1]:,} tasks",
                   conflicts and conflicts.p50 / 1000, 2.0, "s"))
    floors = {True: find(rows, FLOOR, "in-process", "off", 1),
              False: find(rows, FLOOR_NO_FILES, "in-process", "off", 1)}
    for file_sync, floor in floors.items():
        against = "floor" if file_sync else "floor without files"
        for transport, bound in (("service", 1.3), ("http", 2.5)):
            row = find(rows, save_name(file_sync), transport, "off", 1)
            checks.append((f"save {transport} p50 / {against} p50, file sync "
                           f"{'on' if file_sync else 'off'}",
                           row and floor and row.p50 / floor.p50, bound, "x"))
    table = []
    for name, value, bound, unit in checks:
        if value is None:
            table.append([name, "not measured", ""])
            continue
        shown, limit = (-value, -bound) if value < 0 else (value, bound)
        table.append([name, f"{shown:,.2f} {unit} (target {limit:,.2f})",
                      "yes" if value <= bound else "NO"])
    return table


def main() -> None:
    args = parse_args()
    setup_django()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    # Removed at exit, after the writers that flush at exit (registered later, run earlier).
    atexit.register(shutil.rmtree, fresh_file_dirs(), ignore_errors=True)
    run(args)


def run(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.scale.split(",") if s] + ([100_000] if args.full else [])
    rows = []
    if "langgraph" in args.only:
        print("LangGraph PostgresSaver ...", file=sys.stderr)
        rows += langgraph_rows(args.requests)
    prepare_tasks()
    if "floor" in args.only:
        print("the save's floor ...", file=sys.stderr)
        rows += floor_rows(args.requests, args.blocks)
    if "ours" in args.only:
        graph_modes = ["off"] if args.no_graph else ["off", "on"]
        print("ours ...", file=sys.stderr)
        rows += our_rows(args.requests, graph_modes)
    if "scale" in args.only:
        rows += scaling_rows(sizes, args.requests)
    else:
        sizes = sizes[:1]
    peers = {(r.operation, r.clients): r for r in rows if r.slice == "langgraph"}
    print(f"\n~2 KB context per save/put; {args.requests} timed calls per row "
          "(split over the clients); ratio = our p50 / LangGraph p50 at the same clients")
    print_table(["slice", "operation", "transport", "graph", "clients", "n", "p50 ms",
                 "p99 ms", "ops/s", "vs LangGraph"], [r.cells(peers) for r in rows])
    if "floor" in args.only:
        print("floor slice: 1 client, graph off, task bench-0 (the active task); its rows were "
              f"measured in {args.blocks} interleaved blocks and their p50 is the median of "
              "the blocks' p50s")
    print("\nTargets (issues 11 and 24), this run:")
    print_table(["target", "measured", "met"], targets(rows, sizes))
    if "agents" in args.only:
        # Last: its stacks start their own servers, and it ends with the capacity line.
        from bench import agents

        checkpoint()
        print("\nAgents against the `make run` stack, one server and two (bench.agents) ...",
              flush=True)
        agents.main([*(["--agents", args.agents] if args.agents else []),
                     *(["--start", str(args.agents_start)] if args.agents_start else []),
                     "--seconds", str(args.agents_seconds),
                     "--repeat", str(args.agents_repeat)])


def checkpoint() -> None:
    """Write the earlier slices' pages out of Postgres's buffers (``CHECKPOINT``) before
    the agents slice, so that its stacks do not share the disk with that write-back; each
    level then syncs the machine's files (bench.agents.write_back)."""
    from django.db import DatabaseError, connection

    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
    except DatabaseError as exc:  # not a superuser: the write-back is left to Postgres
        print(f"CHECKPOINT refused ({exc}); the agents slice runs without it",
              file=sys.stderr)
        return
    print(f"CHECKPOINT before the agents slice: {time.perf_counter() - started:.1f} s",
          file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
