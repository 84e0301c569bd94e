"""deploy/: the Prometheus alert rules (checked and unit-tested by promtool), the Grafana
dashboard and their wiring in docker-compose.yml; every metric they use exists."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.test import Client

from tests.conftest import metrics_token

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "session-orchestration.json"
METRIC = re.compile(r"\b(session_orchestration_[a-z_]+?)(?:_bucket|_count|_sum)?\b")
# The KPIs of spec 9.1.2 and the rule that alerts on each.
KPI_ALERTS = {
    "context save latency p99 > 1s": "ContextSaveLatencyHigh",
    "cache hit rate < 60%": "CacheHitRateLow",
    "recovery detection time > 10 min": "CrashDetectionLagging",
    "unresolved critical conflicts > 0": "CriticalConflictsUnresolved",
    "active sessions past 90% of FLEET_CAPACITY_SESSIONS": "TooManyActiveSessions",
    "a periodic job that has not run": "PeriodicJobNotRunning",
}


def promtool(*args: str, cwd: Path = PROMETHEUS) -> str:
    binary = Path(sys.executable).with_name("promtool")
    path = str(binary) if binary.exists() else shutil.which("promtool")
    assert path, "promtool is missing: `make promtool` (make test does it) unpacks it into .venv/bin"
    done = subprocess.run([path, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def alert_rules() -> list[dict]:
    groups = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


def test_rules_and_config_pass_promtool(tmp_path):
    assert "SUCCESS" in promtool("check", "rules", "alerts.yml")
    # promtool also checks that the scrape token file exists: a copy of deploy/prometheus
    # with one where the metrics-token service puts it in the compose stack.
    copy = shutil.copytree(PROMETHEUS, tmp_path / "prometheus")
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    (copy / config["scrape_configs"][0]["authorization"]["credentials_file"]).write_text("x")
    assert "SUCCESS" in promtool("check", "config", "prometheus.yml", cwd=copy)


def test_alert_rules_fire_as_their_unit_tests_say():
    assert "SUCCESS" in promtool("test", "rules", "alerts_test.yml")


def test_every_kpi_has_an_alert_with_a_unit_test():
    names = {rule["alert"] for rule in alert_rules()}
    tested = set(re.findall(r"alertname: (\w+)", (PROMETHEUS / "alerts_test.yml").read_text()))
    for kpi, alert in KPI_ALERTS.items():
        assert alert in names, kpi
        assert alert in tested, kpi
    assert names <= tested  # every rule, not only the KPIs'


def test_dashboard_queries_are_valid_promql(tmp_path):
    # promtool parses expressions in rule files: one recording rule per dashboard query.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": expr}
        for i, expr in enumerate(dashboard_exprs())]}]}
    (tmp_path / "dashboard_rules.yml").write_text(yaml.safe_dump(rules))
    assert "SUCCESS" in promtool("check", "rules", "dashboard_rules.yml", cwd=tmp_path)
    titles = " ".join(p["title"] for p in json.loads(DASHBOARD.read_text())["panels"])
    for kpi in ("save p99", "Cache hit rate", "Crash detection lag",
                "Unresolved critical conflicts", "Active sessions", "Periodic jobs",
                # an operator's board for a fleet (issue 39)
                "Agents by state", "Fleet load", "Conflicts", "File claims",
                "Hook call latency", "Save latency"):
        assert kpi in titles, kpi


@pytest.mark.django_db
def test_every_metric_in_rules_and_dashboard_is_exported(tools, client: Client):
    # Make the labelled and on-demand families appear, then read what /metrics exports.
    tools.ok("create_task", {"taskId": "d-a", "name": "A", "keyFiles": ["f"]})
    tools.ok("create_task", {"taskId": "d-b", "name": "B", "keyFiles": ["f"]})
    tools.ok("detect_conflicts", {})
    from foundation.observability import metrics

    metrics.mark_job_success("detect_crashed_sessions")
    metrics.backend_failures_total.labels("redis", "cache_task")
    exported = set(METRIC.findall(client.get(
        "/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_token()}").content.decode()))
    used = set(METRIC.findall(" ".join([r["expr"] for r in alert_rules()] + dashboard_exprs())))
    assert used and used <= exported, used - exported


def test_compose_runs_prometheus_and_grafana_on_the_shipped_files():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    mounts = {name: {v.split(":")[0]: v.split(":")[1] for v in service.get("volumes", [])}
              for name, service in services.items()}
    assert mounts["prometheus"]["./deploy/prometheus"] == "/etc/prometheus"
    assert "--config.file=/etc/prometheus/prometheus.yml" in services["prometheus"]["command"]
    assert mounts["grafana"]["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    provider = yaml.safe_load((ROOT / "deploy/grafana/provisioning/dashboards/dashboards.yml")
                              .read_text())["providers"][0]
    assert mounts["grafana"]["./deploy/grafana/dashboards"] == provider["options"]["path"]
    datasource = yaml.safe_load((ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml")
                                .read_text())["datasources"][0]
    assert {t["datasource"]["uid"] for t in json.loads(DASHBOARD.read_text())["panels"]
            for t in t["targets"]} == {datasource["uid"]}
    # Prometheus scrapes web by its service name; Django must accept that Host.
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    [target] = config["scrape_configs"][0]["static_configs"][0]["targets"]
    assert target.split(":")[0] in services["web"]["environment"]["DJANGO_ALLOWED_HOSTS"]
    # Prometheus scrapes with the token of scope metrics that the metrics-token service
    # creates into the volume mounted where prometheus.yml's credentials_file points.
    authorization = config["scrape_configs"][0]["authorization"]
    assert authorization["type"] == "Bearer"
    secrets = (Path("/etc/prometheus") / authorization["credentials_file"]).parent
    assert mounts["prometheus"]["metrics-token"] == str(secrets)
    token_service = services["metrics-token"]
    assert "--scope metrics" in " ".join(token_service["command"])
    assert f"{mounts['metrics-token']['metrics-token']}/metrics_token" in " ".join(
        token_service["command"])
    assert "metrics-token" in services["prometheus"]["depends_on"]
    # web, worker and beat share one metrics directory, so /metrics adds them up.
    for name in ("web", "worker", "beat"):
        directory = services[name]["environment"]["PROMETHEUS_MULTIPROC_DIR"]
        assert mounts[name]["metrics"] == directory, name
