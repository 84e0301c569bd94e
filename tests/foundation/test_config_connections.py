"""Connection settings reach the real servers: DATABASE_URL's options reach libpq, and a
Bolt password with ``@ / # :`` logs in (foundation/config.py, graph/backend.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from foundation.config import load_settings
from foundation.core import private_files
from graph import backend
from orchestrator.ops.embedded import Bolt, Registry

ROOT = Path(__file__).resolve().parents[2]

# Django's own connection, built from orchestrator/settings.py in a fresh process: what
# Django hands the driver, what libpq says the live connection was opened with, and what the
# server says of the session.
PROBE = """
import json, django
django.setup()
from django.db import connection
params = connection.get_connection_params()
report = {"params": {k: str(v) for k, v in params.items() if k != "password"}}
try:
    connection.ensure_connection()
    report["libpq"] = connection.connection.info.get_parameters()
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('application_name'), current_setting('work_mem')")
        report["server"] = list(cursor.fetchone())
    report["outcome"] = "connected"
except Exception as exc:
    report["outcome"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(report))
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
    # make test's Postgres listens on a Unix socket only, where libpq skips TLS whatever
    # sslmode says, and CI's second pass reaches a Postgres without TLS over TCP; so sslmode
    # is "allow" (not libpq's default "prefer", and connects to both), checked in libpq's own
    # record of the live connection, and a refusal comes from target_session_attrs (this
    # server is a primary, not read-only).
    opened = connect_with("sslmode=allow&sslrootcert=/etc/ssl/certs/ca.pem"
                          "&target_session_attrs=read-write&application_name=config-probe"
                          "&options=-c%20work_mem%3D8MB")
    assert opened["outcome"] == "connected"
    params = opened["params"]
    assert (params["sslmode"], params["sslrootcert"], params["target_session_attrs"]) == (
        "allow", "/etc/ssl/certs/ca.pem", "read-write")
    assert opened["libpq"]["sslmode"] == "allow"
    assert opened["libpq"]["target_session_attrs"] == "read-write"
    # The URL's own -c settings come after the server's (jit, plan cache, quota).
    assert params["options"].startswith("-c jit=off")
    assert opened["server"] == ["config-probe", "8MB"]
    refused = connect_with("target_session_attrs=read-only")
    assert refused["params"]["target_session_attrs"] == "read-only"
    assert refused["outcome"].startswith("OperationalError")
    assert "read-only" in refused["outcome"]


@pytest.fixture(scope="module")
def bolt_with_awkward_password(tmp_path_factory):
    """An ArcadeDB of its own whose root password holds every character a URL trips on."""
    root = tmp_path_factory.mktemp("bolt")
    (root / "logs").mkdir()
    private_files.write_private(root / "secrets" / "arcadedb-password", "p@ss/w#rd:%41?x")
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

    def dump(attrs: str) -> subprocess.CompletedProcess:
        options = {**database["OPTIONS"], "sslmode": "prefer", "target_session_attrs": attrs}
        env = backup._client_env({**database, "OPTIONS": options})
        assert env["PGSSLMODE"] == "prefer" and env["PGTARGETSESSIONATTRS"] == attrs
        assert "PGOPTIONS" not in env  # the server's -c settings are the web server's own
        return subprocess.run([str(bindir / "pg_dump"), "--schema-only",
                               f"--file={tmp_path / 'schema.sql'}"],
                              env=env, capture_output=True, text=True, timeout=60)

    assert dump("read-write").returncode == 0
    refused = dump("read-only")
    assert refused.returncode != 0 and "read-only" in refused.stderr
