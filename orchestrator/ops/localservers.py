"""Let `manage.py` reach the servers a running `make run` launcher started.

`make run` exports DATABASE_URL, REDIS_URL and NEO4J_* only to its own children. A
command typed in another terminal (createsuperuser, create_api_token, sync_graph) would
otherwise fall back to the spec's defaults and miss the embedded servers. The launcher
writes `.data/servers.env` while it runs; variables set in the environment still win.
The command also writes its metric values where the running service's /metrics adds
them up (`.data/metrics`), so a job run from cron is counted like one run by beat.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# Written by `make run` (orchestrator.ops.serve) while it serves: {"url", "pid"}.
SERVICE_FILE = "service.json"
SERVER_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "NEO4J_URI", "NEO4J_USER",
                    "NEO4J_PASSWORD", "NEOMODEL_DATABASE_URL")


def _launcher_alive(data_dir: Path) -> bool:
    try:
        pid = int((data_dir / "launcher.pid").read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def adopt_running_launcher(data_dir: Path) -> list[str]:
    """Set the launcher's server variables that are not set yet; returns their names."""
    if any(os.environ.get(name) for name in ("DATABASE_URL", "POSTGRES_HOST")):
        return []
    env_file = data_dir / "servers.env"
    if not env_file.is_file() or not _launcher_alive(data_dir):
        return []
    adopted = []
    for line in env_file.read_text().splitlines():
        key, _, value = line.partition("=")
        if key in SERVER_VARIABLES and not os.environ.get(key):
            os.environ[key] = value
            adopted.append(key)
    metrics_dir = data_dir / "metrics"
    if metrics_dir.is_dir() and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
        adopted.append("PROMETHEUS_MULTIPROC_DIR")
    return adopted


def running_service(data_dir: Path) -> str | None:
    """The URL a running `make run` of this checkout serves on, or None."""
    try:
        recorded = json.loads((data_dir / SERVICE_FILE).read_text())
        os.kill(int(recorded["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    url = recorded.get("url")
    return url if isinstance(url, str) and url.startswith("http") else None
