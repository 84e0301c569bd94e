"""Metrics (spec 9.1.1): each of the spec's metrics, plus the periodic-job gauge, driven and
read back from /metrics with its labels; several processes add up on /metrics."""

from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from django.test import Client
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.parser import text_string_to_metric_families

from contexts import tasks as context_tasks
from contexts.models import ContextVersion
from foundation.core.models import ApiToken
from sessions.services import recovery
from sessions.tasks import detect_crashed_sessions_task
from tests import processes
from tests.conftest import free_port, metrics_token
from tests.sessions.helpers import backdate
from tests.waiting import wait_for

P = "session_orchestration_"
Samples = dict[tuple[str, frozenset], float]


def parse(text: str) -> Samples:
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def scrape(client: Client) -> Samples:
    return parse(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_token()}")
                 .content.decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.mark.django_db
def test_stored_state_per_project(tools, client):
    """Gauges of stored state carry the project (bounded: projects x a few statuses);
    the per-call counters do not (documented in docs/operations/observability.md)."""
    tools.ok("create_project", {"projectId": "web", "name": "Web"})
    for task_id, project in (("pm-a", "web"), ("pm-b", "web"), ("pm-c", None)):
        tools.ok("create_task", {"taskId": task_id, "name": task_id, "keyFiles": ["k.py"],
                                 "status": "in_progress",
                                 **({"projectId": project} if project else {})})
    tools.ok("start_session", {"taskId": "pm-a"})
    tools.ok("detect_conflicts", {})
    samples = scrape(client)
    assert value(samples, P + "project_sessions_active", project="web") == 1
    assert value(samples, P + "project_tasks", project="web", status="in_progress") == 2
    assert value(samples, P + "project_tasks", project="story-portal-app",
                 status="in_progress") == 1
    assert value(samples, P + "project_conflicts_unresolved", project="web",
                 severity="medium") + value(samples, P + "project_conflicts_unresolved",
                                            project="web", severity="high") >= 1
    assert all("project" not in dict(labels) for name, labels in samples
               if name.startswith(P + "tool_calls_total"))


@pytest.mark.django_db
def test_every_spec_metric_with_its_labels(tools, client):
    before = scrape(client)
    tools.ok("create_task", {"taskId": "m-a", "name": "A", "keyFiles": ["k.py"]})
    tools.ok("create_task", {"taskId": "m-b", "name": "B", "keyFiles": ["k.py"]})
    tools.ok("start_session", {"sessionId": "m-s1", "taskId": "m-a"})
    tools.ok("heartbeat", {"sessionId": "m-s1"})
    tools.ok("save_context_snapshot", {"taskId": "m-a", "updates": {"currentPhase": "x"}})
    checkpoint = tools.ok("create_checkpoint", {"label": "m", "taskId": "m-a"})
    tools.ok("rollback_to", {"taskId": "m-a", "target": {
        "type": "checkpoint", "checkpointId": checkpoint["checkpointId"]}})
    tools.ok("switch_task", {"toTaskId": "m-b"})
    tools.ok("get_unified_context", {"taskId": "m-b"})  # cached by the switch: a hit
    from foundation.backends import redis_store
    redis_store.delete("context:task:m-a")
    tools.ok("get_unified_context", {"taskId": "m-a"})  # a miss
    tools.ok("sync_hot_context", {})
    [conflict] = tools.ok("detect_conflicts", {})["detected"]
    tools.ok("start_session", {"sessionId": "m-s2", "taskId": "m-b"})
    backdate("m-s2", 10)
    undetected = scrape(client)
    recovery.detect_crashed_sessions()
    tools.ok("end_session", {"sessionId": "m-s1"})
    after_unresolved = scrape(client)
    tools.ok("resolve_conflict", {"conflictId": conflict["id"], "resolution": {"action": "ignore"}})
    detect_crashed_sessions_task.apply().get()
    after = scrape(client)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    for status in ("active", "ended", "crashed"):
        assert grew(P + "sessions_total", status=status) >= 1, status
    assert value(after, P + "sessions_active") == 0  # m-s1 ended, m-s2 crashed
    assert value(after_unresolved, P + "sessions_active") == 0
    assert value(after, P + "recovery_needed") == 1
    assert grew(P + "heartbeat_age_seconds_count") == 1
    # The crash-detection lag the alert watches: m-s2's heartbeat, 10 minutes old.
    assert 590 < value(undetected, P + "oldest_active_heartbeat_age_seconds") < 700
    assert value(after, P + "oldest_active_heartbeat_age_seconds") == 0
    for backend in ("database", "redis", "file"):
        assert grew(P + "context_saves_total", backend=backend) >= 1, backend
        assert grew(P + "context_save_duration_seconds_count", backend=backend) >= 1, backend
    stored = {task: ContextVersion.objects.filter(task_id=task).count() for task in ("m-a", "m-b")}
    assert stored["m-a"] >= 2  # saved, then rolled back
    for task, count in stored.items():
        assert value(after, P + "context_versions_total", task_id=task) == count, task
    assert grew(P + "checkpoints_total", type="manual", scope="task") == 1
    assert grew(P + "rollbacks_total", type="checkpoint") == 1
    assert grew(P + "conflicts_detected_total", type="file_conflict",
                severity=conflict["severity"]) == 1
    assert value(after_unresolved, P + "conflicts_unresolved") == 1
    assert value(after, P + "conflicts_unresolved") == 0
    assert value(after_unresolved, P + "conflicts_unresolved_by_severity",
                 severity=conflict["severity"]) == 1
    assert value(after, P + "conflicts_unresolved_by_severity",
                 severity=conflict["severity"]) == 0
    assert grew(P + "conflicts_resolved_total", action="ignore") == 1
    assert grew(P + "task_switches_total") == 1
    assert grew(P + "task_switch_duration_seconds_count") == 1
    assert grew(P + "cache_hits_total") >= 1
    assert grew(P + "cache_misses_total") >= 1
    assert grew(P + "cache_sync_duration_seconds_count") == 1
    stamp = value(after, P + "job_last_success_timestamp_seconds", job="detect_crashed_sessions")
    assert time.time() - 60 < stamp <= time.time()


def tool_calls_by_process(metrics_dir: Path, tool: str) -> dict[str, float]:
    """create_task calls counted in each process's metric file (named <host>-<pid>)."""
    counts: dict[str, float] = defaultdict(float)
    for path in metrics_dir.glob("counter_*.db"):
        process = path.stem.split("_", 1)[1]
        for key, count, _, _ in MmapedDict.read_all_values_from_file(str(path)):
            # key: JSON [family, sample name, label names, label values, help]
            if f'"{P}tool_calls_total"' in key and f'"{tool}"' in key:
                counts[process] += count
    return counts


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_several_web_workers_and_the_celery_worker_add_up_on_metrics(tmp_path):
    _, token = ApiToken.issue("metrics")
    scraper = metrics_token()
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = processes.service_env(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
    log = tmp_path / "servers.log"
    calls = 60
    with processes.running({"web": processes.web(port, workers=2),
                            "worker": processes.celery_worker()}, env, log):
        processes.wait_until_serving(base, log)

        def create(number: int) -> int:
            # A new connection per call, so that the kernel hands them to both workers.
            return httpx.post(f"{base}/api/v1/tools/create_task/",
                              json={"taskId": f"mp-{number}", "name": "multi"},
                              headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(create, range(calls))) == {200}
        context_tasks.sync_hot_context_task.apply_async()

        def scraped() -> Samples:
            return parse(httpx.get(f"{base}/metrics", timeout=30,
                                   headers={"Authorization": f"Bearer {scraper}"}).text)

        assert wait_for(lambda: value(scraped(), P + "job_last_success_timestamp_seconds",
                                      job="sync_hot_context") > 0, timeout=30), \
            log.read_text()[-3000:]
        samples = scraped()
    by_process = tool_calls_by_process(metrics_dir, "create_task")
    served = [process for process, count in by_process.items() if count]
    assert len(served) >= 2, by_process  # both web workers answered some of the calls
    # Whichever worker answered the scrape, it reports every worker's calls ...
    assert value(samples, P + "tool_calls_total", tool="create_task", transport="rest",
                 outcome="ok") == calls
    # ... and what the Celery worker did.
    assert value(samples, P + "cache_sync_duration_seconds_count") == 1
    assert value(samples, P + "tool_calls_total", tool="sync_hot_context", transport="task",
                 outcome="ok") == 1
    # The gauges read from Postgres at scrape time are there too, once.
    assert value(samples, P + "sessions_active") == 0
    # Connections opened, not loans from the web workers' pools (one or more per call).
    db = {"alias": "default", "vendor": "postgresql"}
    assert 0 < value(samples, "django_db_new_connections_total", **db) < calls
    assert value(samples, "django_db_execute_total", **db) > calls
