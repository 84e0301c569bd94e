"""Count the work one save and one cached read do, per backend (evidence for bench/PROFILE.md).

    .venv/bin/python -m orchestrator.ops.launcher --temp -- .venv/bin/python -m bench.roundtrips

Timings on a shared machine are noise; counts are not. For one save_context_snapshot of
the active task and one cached get_unified_context this prints:

- Postgres: every protocol round trip, read from libpq's own trace of the connection
  (so the BEGIN and COMMIT psycopg sends around ``transaction.atomic`` are counted too);
- Redis: the commands the server executed (``INFO commandstats`` before and after) and
  the round trips the client made (each ``send_packed_command`` is one);
- files: flock, open for writing, fsync, rename;
- graph: Bolt transactions and statements sent.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from bench.common import setup_django


class PostgresTrace:
    """Protocol messages the client sent, from libpq's trace of the Django connection."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        from django.db import connection

        connection.ensure_connection()
        pgconn = connection.connection.pgconn
        with tempfile.TemporaryFile("w+") as trace:
            pgconn.trace(trace.fileno())
            try:
                yield
            finally:
                pgconn.untrace()
                trace.seek(0)
                self.lines = trace.read().splitlines()

    def statements(self) -> list[str]:
        """One entry per statement sent (simple Query or extended Parse/Bind/Execute)."""
        sent = []
        for line in self.lines:
            parts = line.split("\t")
            if len(parts) > 3 and parts[1] in ("F", "B"):
                if parts[1] == "F" and parts[3] in ("Query", "Parse"):
                    sent.append(" ".join(parts[4:]))
            elif sent and parts[1:2] != ["B"]:  # a statement's text spans several lines
                sent[-1] += " " + line
        return [" ".join(statement.split())[:120] for statement in sent]

    def round_trips(self) -> int:
        """Sync or simple Query messages: each waits for ReadyForQuery."""
        return sum(1 for line in self.lines
                   if "\tF\t" in line and ("\tSync" in line or "\tQuery" in line))


def redis_commandstats() -> Counter:
    from foundation.backends import redis_store

    stats = redis_store.run(lambda r: r.info("commandstats"))
    return Counter({name.removeprefix("cmdstat_"): value["calls"]
                    for name, value in stats.items()})


@contextlib.contextmanager
def counting(calls: Counter) -> Iterator[None]:
    """Count file and graph operations by wrapping the functions that do them."""
    import redis.connection

    from graph import backend
    from graph.readers import cypher as cypher_reader

    originals: list[tuple[Any, str, Callable]] = []

    def wrap(owner: Any, name: str, label: str,
             count: Callable[..., int] = lambda *a, **k: 1) -> None:
        original = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[label] += count(*args, **kwargs)
            return original(*args, **kwargs)

        originals.append((owner, name, original))
        setattr(owner, name, counted)

    wrap(fcntl, "flock", "file: flock")
    wrap(os, "fsync", "file: fsync")
    wrap(os, "replace", "file: rename")
    wrap(tempfile, "mkstemp", "file: temp file created")
    wrap(redis.connection.AbstractConnection, "send_packed_command", "redis: round trips")
    wrap(backend, "write", "graph: Bolt write transactions")
    wrap(backend, "write", "graph: Cypher statements", lambda statements: len(statements))
    wrap(backend, "cypher", "graph: Cypher queries")
    wrap(cypher_reader, "cypher", "graph: Cypher queries")
    try:
        yield
    finally:
        for owner, name, original in reversed(originals):
            setattr(owner, name, original)


def profile(label: str, operation: Callable[[], Any]) -> None:
    calls: Counter = Counter()
    trace = PostgresTrace()
    before = redis_commandstats()
    with counting(calls), trace.capture():
        operation()
    after = redis_commandstats()
    after.subtract(before)
    after["info"] -= 1  # our own INFO before the operation
    print(f"\n## {label}\n")
    print(f"- Postgres round trips: {trace.round_trips()}")
    for statement in trace.statements():
        print(f"  - `{statement}`")
    print(f"- Redis commands executed: {dict(+after)}")
    for name, count in sorted(calls.items()):
        print(f"- {name}: {count}")


def main() -> None:
    setup_django()
    from django.conf import settings
    from django.core.management import call_command

    from contexts.services.save import save_task_changes
    from contexts.services.switch import switch_task
    from contexts.services.tasks import create_task
    from contexts.services.unified import get_unified_context
    from graph.services.outbox import drain_outbox

    call_command("migrate", verbosity=0)
    settings.CONTEXT_DIR = tempfile.mkdtemp(prefix="roundtrips-")
    settings.INDEX_FILE_DELAY_MS = 250
    task_id = f"profile-{os.getpid()}"
    create_task(task_id, {"name": "Profiled task"})
    switch_task(task_id)
    note = "x" * 1800  # ~2 KB of task context, as in the measurements
    for i in range(3):  # warm connections, caches and prepared paths
        save_task_changes(task_id, {"immediateContext": {"workingOn": f"{note}{i}"}})
        get_unified_context(task_id)
    drain_outbox()  # what create/switch queued: a lagging mirror sends reads to Postgres
    profile("save_context_snapshot (active task, ~2 KB immediateContext)",
            lambda: save_task_changes(task_id, {"immediateContext": {"workingOn": note}},
                                      session_id=None))
    profile("get_unified_context (cache hit, default arguments)",
            lambda: get_unified_context(task_id))
    profile("get_unified_context (cache hit, includeRelationships=false)",
            lambda: get_unified_context(task_id, include_relationships=False))


if __name__ == "__main__":
    main()
