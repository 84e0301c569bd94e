"""Management commands as an operator runs them: create_api_token, the MCP stdio server, and
manage.py adopting the servers of a running launcher."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
from django.conf import settings
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from foundation.core.models import ApiToken, hash_token
from tests.processes import database_url

ROOT = Path(__file__).resolve().parents[2]


def _env_for_test_database() -> dict[str, str]:
    # database_url: a TCP host or make test's Unix socket directory (?host=)
    return {**os.environ, "DATABASE_URL": database_url(), "ENABLE_NEO4J": "false",
            "CONTEXT_DIR": str(settings.CONTEXT_DIR), "RECOVERY_DIR": str(settings.RECOVERY_DIR)}


def test_create_api_token_prints_the_token_last_and_stores_a_hash(transactional_db):
    result = subprocess.run([sys.executable, "manage.py", "create_api_token", "ci-agent"],
                            cwd=ROOT, env=_env_for_test_database(), capture_output=True,
                            text=True, timeout=60, check=True)
    raw = result.stdout.strip().splitlines()[-1]
    token = ApiToken.objects.get(name="ci-agent")
    assert token.token_hash == hash_token(raw) and raw not in token.token_hash
    again = subprocess.run([sys.executable, "manage.py", "create_api_token", "ci-agent"],
                           cwd=ROOT, env=_env_for_test_database(), capture_output=True,
                           text=True, timeout=60)
    assert again.returncode != 0 and "already exists" in again.stderr


def test_mcp_stdio_serves_the_same_tools(transactional_db):
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp_stdio"],
                                   env=_env_for_test_database(), cwd=str(ROOT))

    async def session_calls():
        with open(os.devnull, "w") as errlog:
            async with (stdio_client(params, errlog=errlog) as streams,
                        ClientSession(streams[0], streams[1]) as session):
                await session.initialize()
                listed = await session.list_tools()
                created = await session.call_tool("create_task", {"taskId": "stdio-1",
                                                                  "name": "via stdio"})
                duplicate = await session.call_tool("create_task", {"taskId": "stdio-1",
                                                                    "name": "again"})
                return listed, created, duplicate

    listed, created, duplicate = anyio.run(session_calls)
    assert {"create_task", "get_unified_context"} <= {t.name for t in listed.tools}
    assert not created.is_error and created.structured_content["version"] == 1
    assert duplicate.is_error and duplicate.content[0].text.startswith("E1614: ")


def test_manage_py_adopts_the_running_launchers_servers(tmp_path, monkeypatch):
    from orchestrator.ops.localservers import adopt_running_launcher

    for name in ("DATABASE_URL", "POSTGRES_HOST", "REDIS_URL", "NEO4J_URI",
                 "PROMETHEUS_MULTIPROC_DIR"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "servers.env").write_text(
        "DATABASE_URL=postgresql://u@127.0.0.1:5999/orchestrator\nREDIS_URL=redis://x:1/0\n"
        "EVIL=1\n")
    (tmp_path / "launcher.pid").write_text("999999999\n")  # no such process
    assert adopt_running_launcher(tmp_path) == []
    (tmp_path / "launcher.pid").write_text(f"{os.getpid()}\n")
    assert adopt_running_launcher(tmp_path) == ["DATABASE_URL", "REDIS_URL"]
    assert os.environ["DATABASE_URL"] == "postgresql://u@127.0.0.1:5999/orchestrator"
    assert "EVIL" not in os.environ
    # With the service running, a command's metrics join the ones /metrics adds up.
    monkeypatch.delenv("DATABASE_URL")
    monkeypatch.delenv("REDIS_URL")
    (tmp_path / "metrics").mkdir()
    assert adopt_running_launcher(tmp_path) == ["DATABASE_URL", "REDIS_URL",
                                                "PROMETHEUS_MULTIPROC_DIR"]
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path / "metrics")
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    # A configured database always wins.
    monkeypatch.setenv("DATABASE_URL", "postgresql://mine@h/db")
    assert adopt_running_launcher(tmp_path) == []


def test_banner_names_the_data_dir_a_manage_py_command_needs(tmp_path, transactional_db):
    """`make run --data-dir DIR`: the banner's createsuperuser line carries
    ORCHESTRATOR_DATA_DIR=DIR, and manage.py run that way reaches DIR/servers.env's servers."""
    from orchestrator.ops.serve import banner

    default = banner("http://127.0.0.1:8000", ROOT / ".data")
    assert "  create a login:        .venv/bin/python manage.py createsuperuser" in default
    data = tmp_path / "some dir"
    data.mkdir()
    elsewhere = banner("http://127.0.0.1:8000", data)
    assert f"ORCHESTRATOR_DATA_DIR='{data}' .venv/bin/python manage.py createsuperuser" \
        in elsewhere
    (data / "servers.env").write_text(f"DATABASE_URL={database_url()}\n")
    (data / "launcher.pid").write_text(f"{os.getpid()}\n")
    env = {key: value for key, value in _env_for_test_database().items()
           if key not in ("DATABASE_URL", "POSTGRES_HOST")}
    env["ORCHESTRATOR_DATA_DIR"] = str(data)
    subprocess.run([sys.executable, "manage.py", "create_api_token", "via-data-dir"],
                   cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True)
    assert ApiToken.objects.filter(name="via-data-dir").exists()
