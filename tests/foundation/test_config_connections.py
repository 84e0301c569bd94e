"""Connection settings reach the real servers: DATABASE_URL's options reach libpq, and a
Bolt password with ``@ / # :`` logs in (orchestrator/config.py, graph/backend.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from graph import backend
from orchestrator.config import load_settings
from orchestrator.ops.embedded import Bolt, Registry

ROOT = Path(__file__).resolve().parents[2]

# Django's own connection, built from orchestrator/settings.py in a fresh process.
PROBE = """
import json, django
django.setup()
from django.db import connection
params = connection.get_connection_params()
try:
    connection.ensure_connection()
    outcome = "connected"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {exc}"
print(json.dumps({"params": {k: str(v) for k, v in params.items() if k != "password"},
                  "outcome": outcome}))
"""


def connect_with(query: str) -> dict:
    url = os.environ["DATABASE_URL"]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "orchestrator.settings",
           "DATABASE_URL": f"{url}{'&' if '?' in url else '?'}{query}"}
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_database_url_options_reach_the_driver():
    plain = connect_with("sslmode=disable&target_session_attrs=read-write"
                         "&application_name=config-probe&options=-c%20work_mem%3D8MB")
    assert plain["outcome"] == "connected"
    params = plain["params"]
    assert (params["sslmode"], params["target_session_attrs"], params["application_name"]) == (
        "disable", "read-write", "config-probe")
    # The URL's own -c settings come after the server's (jit, plan cache, quota).
    assert params["options"].startswith("-c jit=off") and params["options"].endswith(
        "-c work_mem=8MB")
    # The test server speaks no TLS: with sslmode=require libpq must refuse to connect.
    required = connect_with("sslmode=require")
    assert required["params"]["sslmode"] == "require"
    assert required["outcome"].startswith("OperationalError")
    assert "SSL" in required["outcome"]


@pytest.fixture(scope="module")
def bolt_with_awkward_password(tmp_path_factory):
    """An ArcadeDB of its own whose root password holds every character a URL trips on."""
    root = tmp_path_factory.mktemp("bolt")
    (root / "logs").mkdir()
    (root / "arcadedb").mkdir()
    (root / "arcadedb" / "root-password").write_text("p@ss/w#rd:%41?x")
    server = Bolt(root, temp=True, registry=Registry(root / "children.json"),
                  abort=threading.Event())
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("form", ["parts", "url"])
def test_bolt_password_with_url_characters_logs_in(bolt_with_awkward_password, settings, form):
    server = bolt_with_awkward_password
    assert server.password == "p@ss/w#rd:%41?x"
    env = server.env()  # what the launcher exports: the parts, and the URL percent-encoded
    if form == "parts":
        env.pop("NEOMODEL_DATABASE_URL")
    else:
        assert "%40" in env["NEOMODEL_DATABASE_URL"]
    settings.NEOMODEL_DATABASE_URL = load_settings(env).neomodel_url
    backend.reset()
    try:
        assert backend.cypher("RETURN 1 AS one") == [[1]]
    finally:
        backend.reset()  # the settings fixture puts the suite's server back


@pytest.mark.django_db
def test_database_url_options_reach_pg_dump(settings, tmp_path):
    """backup / restore run pg_dump and pg_restore with the same libpq options."""
    from orchestrator.ops import backup

    bindir = backup.client_binaries()
    database = settings.DATABASES["default"]

    def dump(sslmode: str) -> subprocess.CompletedProcess:
        options = {**database["OPTIONS"], "sslmode": sslmode}
        env = backup._client_env({**database, "OPTIONS": options})
        assert env["PGSSLMODE"] == sslmode and "PGOPTIONS" not in env
        return subprocess.run([str(bindir / "pg_dump"), "--schema-only",
                               f"--file={tmp_path / 'schema.sql'}"],
                              env=env, capture_output=True, text=True, timeout=60)

    assert dump("disable").returncode == 0
    refused = dump("require")
    assert refused.returncode != 0 and "SSL" in refused.stderr
