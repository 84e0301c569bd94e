"""The one-statement save (autocommit, so these tests commit): same promises, fewer trips."""

from __future__ import annotations

import collections
import contextlib
import threading
import uuid
from collections.abc import Iterator

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.roundtrips import PostgresTrace
from contexts.models import ContextVersion, TaskContext
from contexts.services.save import save_task_changes
from contexts.services.tasks import create_task
from foundation.backends import redis_store
from foundation.core.errors import OrchestratorError
from graph.models import GraphOutboxEntry
from locks import services as locks
from tests.conftest import free_port

pytestmark = pytest.mark.django_db(transaction=True)


@contextlib.contextmanager
def redis_commands() -> Iterator[collections.Counter]:
    """The commands this test's Redis database receives in the block, by name, those a Lua
    script runs included (MONITOR, filtered by database: INFO's counters are the server's,
    which parallel test workers move too)."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    db = client.connection_pool.connection_kwargs.get("db", 0)
    seen: collections.Counter = collections.Counter()
    marker = f"end-{uuid.uuid4().hex}"
    with client.monitor() as monitor:
        yield seen
        client.echo(marker)  # MONITOR shows commands in order: everything before is read
        for entry in monitor.listen():
            words = entry["command"].split(" ")
            if entry["db"] != db:
                continue
            if words[0].upper() == "ECHO" and words[-1] == marker:
                break
            seen[words[0].lower()] += 1
    client.close()


def test_a_save_is_one_statement_and_no_lock_lookup(settings):
    # Tests drain the graph outbox inline (GRAPH_OUTBOX_DELAY_MS=0); a server drains it in
    # a background thread, so leave it out of the request path's count.
    settings.ENABLE_NEO4J = False
    create_task("fast-1", {"name": "Fast"})
    trace = PostgresTrace()
    with redis_commands() as commands, CaptureQueriesContext(connection) as queries, \
            trace.capture():
        result = save_task_changes("fast-1", {"currentPhase": "build"}, change_type="manual",
                                   change_summary="why", session_id="s-1")
    # A prepared statement, not Django's cursor: the first use on a connection also
    # prepares it (Parse, one more round trip), every later save is one round trip.
    assert queries.captured_queries == [] and trace.round_trips() <= 2
    assert any("\tBind\t" in line and "_pg3_" in line for line in trace.lines)
    with trace.capture():
        save_task_changes("fast-1", {"currentPhase": "test"}, session_id="s-1")
    assert trace.round_trips() == 1
    assert not any("\tParse\t" in line for line in trace.lines)
    assert result["version"] == 2 and result["savedTo"] == {
        "database": True, "redis": True, "file": True}
    # One EVAL for the task cache; no GET of context:lock:fast-1.
    assert commands["get"] == 1  # the script's own GET
    assert commands["eval"] == 1
    version = ContextVersion.objects.get(task_id="fast-1", version=2)
    assert (version.change_type, version.change_summary, version.session_id,
            version.created_by) == ("manual", "why", "s-1", "s-1")
    assert version.snapshot["current_phase"] == "build"


def test_a_hinted_lock_is_honoured_and_its_holder_may_save():
    create_task("fast-2", {"name": "Locked"})
    locks.acquire_lock("fast-2", "holder")
    with pytest.raises(OrchestratorError) as refused:
        save_task_changes("fast-2", {"currentPhase": "x"}, session_id="intruder")
    assert refused.value.code == "E1613"
    assert save_task_changes("fast-2", {"currentPhase": "x"}, session_id="holder")["version"] == 2
    assert TaskContext.objects.get(task_id="fast-2").current_phase == "x"


def test_locked_elements_still_need_the_lock():
    create_task("fast-3", {"name": "Elements", "lockedElements": ["keyFiles"]})
    with pytest.raises(OrchestratorError) as refused:
        save_task_changes("fast-3", {"keyFiles": ["a.py"]}, session_id="s")
    assert refused.value.code == "E1613"
    # Other fields of the same task save as usual.
    assert save_task_changes("fast-3", {"currentPhase": "y"}, session_id="s")["version"] == 2


def test_unknown_task_and_no_op_save():
    with pytest.raises(OrchestratorError) as missing:
        save_task_changes("fast-missing", {"currentPhase": "x"})
    assert missing.value.code == "E1610"
    create_task("fast-4", {"name": "Same"})
    save_task_changes("fast-4", {"currentPhase": "x"})
    assert save_task_changes("fast-4", {"currentPhase": "x"})["version"] == 2  # no new version
    assert ContextVersion.objects.filter(task_id="fast-4").count() == 2


def test_graph_field_says_whether_the_mirror_has_work(settings):
    settings.ENABLE_NEO4J = True
    # A graph server that is not there keeps the queue for us to look at.
    settings.NEOMODEL_DATABASE_URL = f"bolt://neo4j:x@127.0.0.1:{free_port()}"
    create_task("fast-5", {"name": "Mirrored"})
    queued = GraphOutboxEntry.objects.filter(kind="task", entity_id="fast-5").count()
    assert save_task_changes("fast-5", {"immediateContext": {"workingOn": "a"}})["graph"] \
        == "unchanged"
    assert GraphOutboxEntry.objects.filter(kind="task", entity_id="fast-5").count() == queued
    assert save_task_changes("fast-5", {"status": "in_progress"})["graph"] == "queued"
    assert GraphOutboxEntry.objects.filter(kind="task", entity_id="fast-5").count() == queued + 1
    settings.ENABLE_NEO4J = False
    assert save_task_changes("fast-5", {"status": "blocked"})["graph"] == "disabled"


def test_concurrent_saves_lose_nothing():
    """8 threads, 10 saves each, one task: 80 consecutive versions, the last one wins."""
    create_task("fast-6", {"name": "Busy"})
    errors: list[BaseException] = []

    def saver(thread: int) -> None:
        try:
            for i in range(10):
                save_task_changes("fast-6", {"immediateContext": {"workingOn": f"{thread}-{i}"}})
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=saver, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    versions = sorted(ContextVersion.objects.filter(task_id="fast-6")
                      .values_list("version", flat=True))
    assert versions == list(range(1, 82))
    assert TaskContext.objects.get(task_id="fast-6").version == 81


def test_the_active_task_refreshes_hot_cache_hot_file_and_registry():
    from contexts.services import cache
    from contexts.services.switch import switch_task
    from foundation.backends import files

    create_task("fast-7", {"name": "Active"})
    switch_task("fast-7")
    result = save_task_changes("fast-7", {"status": "in_progress", "currentPhase": "ship"})
    assert result["savedTo"] == {"database": True, "redis": True, "file": True}
    hot = redis_store.get_json(cache.hot_cache_key(settings.MCP_PROJECT_ID))
    assert (hot["taskId"], hot["version"]) == ("fast-7", result["version"])
    assert files.read_json(files.context_dir() / "_hot_context.json")["taskId"] == "fast-7"
    assert files.read_json(files.task_file("fast-7"))["version"] == result["version"]
    registry = files.read_json(files.context_dir() / "_registry.json")
    assert registry["tasks"]["fast-7"]["status"] == "in_progress"
