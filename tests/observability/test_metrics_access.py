"""/metrics is for the scraper only (a token of scope metrics, or admin, reaching every
project), a metrics token reads nothing else, and the per-task label stays bounded
however many tasks there are (orchestrator.web.metrics)."""

from __future__ import annotations

import httpx
import pytest
from django.core.management import CommandError, call_command
from prometheus_client.parser import text_string_to_metric_families

from foundation.core.models import ApiToken, TokenScope
from orchestrator.web.metrics import OTHER_TASKS, TASK_SERIES_LIMIT
from tests.conftest import metrics_token

SPEC_NAMES = ("session_orchestration_sessions_total", "session_orchestration_sessions_active",
              "session_orchestration_context_versions_total",
              "session_orchestration_conflicts_unresolved",
              "session_orchestration_tool_calls_total")


def scrape(url: str, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{url}/metrics", headers=headers, timeout=30)


def test_only_the_scraper_reads_metrics(live_api):
    url, write_token = live_api
    _, limited_admin = ApiToken.issue("limited-admin", TokenScope.ADMIN, ["story-portal-app"])
    _, read_token = ApiToken.issue("reader", TokenScope.READ)
    anonymous = scrape(url, None)
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "E1609"
    assert "session_orchestration" not in anonymous.text
    assert scrape(url, "orch_not-a-token").status_code == 401
    for token in (write_token, read_token, limited_admin):
        refused = scrape(url, token)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "E1608"
        assert "session_orchestration" not in refused.text
    _, admin = ApiToken.issue("admin", TokenScope.ADMIN)
    for token in (metrics_token(), admin):
        served = scrape(url, token)
        assert served.status_code == 200, served.text
        for name in SPEC_NAMES:
            assert name in served.text, name


def test_a_metrics_token_reads_nothing_else(live_api):
    url, _ = live_api
    headers = {"Authorization": f"Bearer {metrics_token()}",
               "Accept": "application/json, text/event-stream"}
    tool = httpx.post(f"{url}/api/v1/tools/get_task_graph/", json={}, headers=headers,
                      timeout=30)
    assert tool.status_code == 403 and tool.json()["error"]["code"] == "E1608", tool.text
    for path in ("/mcp", "/mcp/agent"):
        answer = httpx.post(url + path, headers=headers, timeout=30,
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "E1608"
    browse = httpx.get(f"{url}/api/v1/tasks/", headers=headers, timeout=30)
    assert browse.status_code == 403 and browse.json()["error"]["code"] == "E1608"


@pytest.mark.django_db
def test_a_metrics_token_is_never_limited_to_projects():
    with pytest.raises(CommandError, match="no --project"):
        call_command("create_api_token", "scraper", "--scope", "metrics",
                     "--project", "story-portal-app")
    call_command("create_api_token", "scraper", "--scope", "metrics")
    assert ApiToken.objects.get(name="scraper").scope == TokenScope.METRICS


def versions_per_task(text: str) -> dict[str, float]:
    return {sample.labels["task_id"]: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "session_orchestration_context_versions_total"}


def test_task_labels_stay_bounded_with_many_tasks(live_api):
    url, token = live_api
    tasks = 150
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        for number in range(tasks):
            created = client.post(f"{url}/api/v1/tools/create_task/",
                                  json={"taskId": f"many-{number:03}", "name": "many"})
            assert created.status_code == 200, created.text
        # The busiest task: three more versions than any other.
        for summary in ("one", "two", "three"):
            client.post(f"{url}/api/v1/tools/save_context_snapshot/",
                        json={"taskId": "many-149",
                              "updates": {"currentPhase": summary}}).raise_for_status()
    series = versions_per_task(scrape(url, metrics_token()).text)
    assert len(series) == TASK_SERIES_LIMIT + 1, len(series)
    assert series["many-149"] == 4
    assert series[OTHER_TASKS] == tasks - TASK_SERIES_LIMIT
    assert sum(series.values()) == tasks + 3  # every stored version, once
