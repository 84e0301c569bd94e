"""Saves that survive a Postgres outage (spec 6.4.1, issue 40 item 4).

The fault is real: the production web server runs against a Postgres server of this
test's own, which is stopped (a fast shutdown) and started again on the same port. A save
sent while it is down is held in RECOVERY_DIR/.pending-saves.json (202, pending) and is in
Postgres exactly once after the restart, before the save that came after it. In-process:
the replay of a file that was already replayed applies nothing twice, a save the service
refuses is set aside, and threads and processes holding saves at once lose none.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command

from contexts.models import ContextVersion, TaskContext
from contexts.services import pending
from foundation.backends import files
from foundation.core.auth import TOKEN_CACHE_SECONDS
from foundation.core.models import JobRun, ReplayedCall
from foundation.core.tools import ToolContext
from orchestrator.ops import embedded
from tests.conftest import free_port
from tests.contexts.test_kill_durability import wait_for

ROOT = Path(__file__).resolve().parents[2]


def post(port: int, token: str, tool: str, body: dict) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", f"/api/v1/tools/{tool}/", json.dumps(body),
                 {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def phases(url: str, task_id: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT version, snapshot->>'current_phase' FROM mcp_contexts.context_versions "
            "WHERE task_id = %s ORDER BY version", [task_id]).fetchall()
    return [(v, p) for v, p in rows]


def start(server: embedded.Postgres) -> None:
    try:
        server.start()
    except embedded.StartError as exc:
        raise AssertionError(f"postgres did not start: {exc}\n"
                             + "\n".join(server.log_tail(30))) from exc


@pytest.fixture
def own_postgres():
    """A Postgres server of this test alone (the embedded one the launcher uses),
    migrated; stopped at the end. In a short directory: its socket stays in its data dir,
    so the restarted server has the same address."""
    root = Path(tempfile.mkdtemp(prefix="pg-outage-"))
    (root / "logs").mkdir()
    server = embedded.Postgres(root, False, embedded.Registry(root / "registry.json"),
                               threading.Event())
    start(server)
    try:
        env = {**os.environ, "DATABASE_URL": server.url(), "ENABLE_NEO4J": "false"}
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT,
                       env=env, check=True, capture_output=True)
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_a_save_while_postgres_is_stopped_is_in_postgres_once_after_it_restarts(
        own_postgres, tmp_path):
    url = own_postgres.url()
    env = {**os.environ, "DATABASE_URL": url, "ENABLE_NEO4J": "false",
           "CONTEXT_DIR": str(tmp_path / "c"), "RECOVERY_DIR": str(tmp_path / "r"),
           "LOG_LEVEL": "WARNING"}
    made = subprocess.run([sys.executable, "manage.py", "create_api_token", "outage"],
                          cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    token = made.stdout.strip().splitlines()[-1]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.ops.webserver", "--port", str(port),
         "--workers", "1"], cwd=ROOT, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    held_file = tmp_path / "r" / ".pending-saves.json"
    try:
        wait_for(port, server)
        assert post(port, token, "create_task", {"taskId": "t1", "name": "Parser"})[0] == 200
        assert post(port, token, "save_context_snapshot", {
            "taskId": "t1", "updates": {"currentPhase": "before"}})[0] == 200

        last_use = time.monotonic()
        own_postgres.stop()  # a real server, stopped
        # An outage longer than the token cache: the token is still taken (auth.py).
        time.sleep(max(0.0, TOKEN_CACHE_SECONDS + 0.5 - (time.monotonic() - last_use)))
        status, held = post(port, token, "save_context_snapshot", {
            "taskId": "t1", "updates": {"currentPhase": "during the outage"},
            "changeSummary": "held"})
        assert status == 202, held
        assert (held["success"], held["pending"], held["version"]) == (True, True, None)
        assert held["savedTo"] == {"database": False, "redis": False, "file": True}
        (entry,) = files.read_json(held_file)["saves"]
        assert entry["id"] == held["pendingSaveId"]
        assert entry["arguments"]["updates"] == {"currentPhase": "during the outage"}
        copy = tmp_path / "held-copy.json"
        shutil.copy(held_file, copy)
        # Reads still fail as before: only saves are held.
        assert post(port, token, "get_unified_context", {"taskId": "t1"})[0] == 503

        start(own_postgres)  # the same data directory, the same port
        status, after = post(port, token, "save_context_snapshot", {
            "taskId": "t1", "updates": {"currentPhase": "after"}})
        assert status == 200, after
        assert not held_file.exists()
        # In order: the held save first, then the one that came after it; once each.
        assert phases(url, "t1")[-3:] == [(2, "before"), (3, "during the outage"),
                                          (4, "after")]
        assert after["version"] == 4

        # The file as it was before the replay (a replay that crashed before rewriting
        # it): the replay job skips the save already applied.
        shutil.copy(copy, held_file)
        replay = subprocess.run([sys.executable, "manage.py", "replay_pending_saves"],
                                cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        assert "0 held save(s) applied, 1 applied before" in replay.stdout
        assert [p for _, p in phases(url, "t1")].count("during the outage") == 1
        assert not held_file.exists()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 9)
        server.wait(timeout=30)


def held(task_id: str, phase: str, actor: str = "agent") -> dict:
    return pending.hold_save({"taskId": task_id, "updates": {"currentPhase": phase}},
                             ToolContext("rest", actor=actor, scope="write"))


@pytest.mark.django_db
def test_the_replay_applies_each_held_save_once_in_order(make_task):
    make_task("t1")
    first, second = held("t1", "one"), held("t1", "two")
    held("ghost", "nowhere")  # a task that does not exist: refused on replay, set aside
    third = held("t1", "three")
    kept = files.read_json(pending.pending_path())
    report = pending.replay_pending_saves()
    assert report["applied"] == [first["pendingSaveId"], second["pendingSaveId"],
                                 third["pendingSaveId"]]
    assert len(report["rejected"]) == 1 and report["remaining"] == 0
    assert not pending.pending_path().exists()
    (rejected,) = files.read_json(files.recovery_dir() / pending.REJECTED_FILE)
    assert rejected["error"]["error"]["code"] == "E1610"
    assert TaskContext.objects.get(task_id="t1").current_phase == "three"
    versions = list(ContextVersion.objects.filter(task_id="t1").order_by("version")
                    .values_list("snapshot__current_phase", flat=True))
    assert versions[-3:] == ["one", "two", "three"]
    assert ReplayedCall.objects.count() == 3

    files.write_json_atomic(pending.pending_path(), kept)  # replayed again
    again = pending.replay_pending_saves()
    assert (again["applied"], len(again["skipped"])) == ([], 3)
    assert ContextVersion.objects.filter(task_id="t1").count() == len(versions)


@pytest.mark.django_db
def test_the_job_and_the_next_save_replay_held_saves(tools, make_task):
    make_task("t1")
    held("t1", "held")
    call_command("replay_pending_saves")
    assert JobRun.objects.filter(job_name="pending-save replay").latest("id").summary == \
        "1 held save(s) applied, 0 refused, 0 still held"
    assert TaskContext.objects.get(task_id="t1").current_phase == "held"
    held("t1", "held again")
    saved = tools.ok("save_context_snapshot", {"taskId": "t1",
                                               "updates": {"iteration": 7}})
    row = TaskContext.objects.get(task_id="t1")
    assert (row.current_phase, row.iteration, row.version) == ("held again", 7, saved["version"])


def _hold_many(prefix: str, count: int) -> None:
    for n in range(count):
        held("t1", f"{prefix}-{n}")


def test_threads_and_processes_holding_saves_at_once_lose_none():
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: _hold_many(f"thread{n}", 10), range(8)))
    fork = multiprocessing.get_context("fork")
    workers = [fork.Process(target=_hold_many, args=(f"process{n}", 20)) for n in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    saves = files.read_json(pending.pending_path())["saves"]
    assert len(saves) == 8 * 10 + 3 * 20
    assert len({s["id"] for s in saves}) == len(saves)
    for prefix, count in [*((f"thread{n}", 10) for n in range(8)),
                          *((f"process{n}", 20) for n in range(3))]:
        mine = [s["arguments"]["updates"]["currentPhase"] for s in saves
                if s["arguments"]["updates"]["currentPhase"].startswith(prefix + "-")]
        assert mine == [f"{prefix}-{n}" for n in range(count)]  # each writer's order kept
