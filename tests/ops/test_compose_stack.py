"""docker-compose.yml proven without Docker: each app service's own command, with its own
environment as compose would give it, runs here against real servers.

No Docker engine runs on these machines, so the test does what compose would and nothing
more. It interpolates the file with an operator's settings as docs/operations/deploying.md
gives them (a custom domain, every secret set, TLS ending at a proxy), then substitutes for
what only Docker provides, each substitution said where it is made:

- the stack's servers: the Postgres, Redis and Bolt server this suite runs on (the
  launcher's embedded ones, or CI's) stand in for the postgres, redis and arcadedb
  services. Their host names in the services' environment are mapped to those servers'
  addresses; the operator's POSTGRES_PASSWORD / ARCADEDB_PASSWORD are the real servers'
  passwords, and the database and role the postgres service would create are created here
  (unique names on a server other runs may share);
- web's address: ``web:8000`` (its PORT inside the container) is 127.0.0.1 on a free port;
- volumes: each named volume is a directory of its own, mounted where the service mounts
  it by rewriting that mount point in the service's environment and command;
- ``python``: the suite's interpreter first on PATH, as the image's is.

Then, as compose would order them: web becomes healthy by its own healthcheck command
(Host "web", while the operator's domain is the only other allowed host), metrics-token
writes Prometheus's token, worker and beat start and pass their healthchecks, the
Prometheus scrape config reaches /metrics with that token, beat's scheduled backup lands
in the backups volume and restores into a fresh database, and ``check --deploy`` is
clean under these settings.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from django.conf import settings
from psycopg import sql

from tests.conftest import free_port
from tests.waiting import wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
DOMAIN = "orch.example.com"
APP_SERVICES = ("web", "metrics-token", "worker", "beat")

# compose's interpolation (compose-spec "Interpolation"): $$, ${VAR}, ${VAR:-default},
# ${VAR-default}, ${VAR:?message}, ${VAR?message}, $VAR.
_VARIABLE = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                       r"(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


class MissingVariable(Exception):
    pass


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """The compose file's tree with every variable replaced as `docker compose` does."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match) -> str:
        if match["dollar"]:
            return "$"
        name = match["name"] or match["bare"]
        op, arg = match["op"], match["arg"] or ""
        current = env.get(name)
        unset = current is None or (op is not None and op.startswith(":") and current == "")
        if op in (":-", "-"):
            return arg if unset else current
        if op in (":?", "?"):
            if unset:
                raise MissingVariable(f"{name}: {arg}")
            return current
        return current or ""

    return _VARIABLE.sub(replace, value)


def load_compose(env: Mapping[str, str]) -> dict[str, Any]:
    # PyYAML resolves the anchors and << merge keys compose uses.
    return interpolate(yaml.safe_load(COMPOSE.read_text()), env)


def operator_settings(**servers: str) -> dict[str, str]:
    """The .env of deploy/env.example as an operator fills it in."""
    return {"DJANGO_SECRET_KEY": secrets.token_hex(32), "DJANGO_ALLOWED_HOSTS": DOMAIN,
            "DJANGO_CSRF_TRUSTED_ORIGINS": f"https://{DOMAIN}",
            "GRAFANA_ADMIN_PASSWORD": secrets.token_hex(16), **servers}


def test_every_secret_is_required_and_none_has_a_default():
    full = operator_settings(POSTGRES_PASSWORD="p" * 16, ARCADEDB_PASSWORD="a" * 16)
    load_compose(full)
    example = (ROOT / "deploy" / "env.example").read_text()
    for name in ("DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "POSTGRES_PASSWORD",
                 "ARCADEDB_PASSWORD", "GRAFANA_ADMIN_PASSWORD"):
        for missing in ({k: v for k, v in full.items() if k != name}, {**full, name: ""}):
            with pytest.raises(MissingVariable, match=name):
                load_compose(missing)
        assert re.search(rf"^{name}=$", example, re.M), name
    # Nothing but web is reachable from outside the host, and web only on loopback.
    services = load_compose(full)["services"]
    published = {name: service["ports"] for name, service in services.items()
                 if service.get("ports")}
    assert set(published) == {"web", "prometheus", "grafana"}
    assert all(port.startswith("127.0.0.1:") for ports in published.values() for port in ports)


def test_the_postgres_client_in_the_image_matches_the_compose_server():
    dockerfile = (ROOT / "Dockerfile").read_text()
    [client] = set(re.findall(r"postgresql-client-(\d+)", dockerfile))
    server = load_compose(operator_settings(POSTGRES_PASSWORD="x", ARCADEDB_PASSWORD="y"))[
        "services"]["postgres"]["image"]
    assert server == f"postgres:{client}"
    # Debian 13 (trixie) is the release whose postgresql-client is 17: named, not implied.
    assert re.search(r"^FROM python:3\.\d+-slim-trixie\b", dockerfile, re.M)


# -- the stack run here ----------------------------------------------------------------------

class Stack:
    """The app services of docker-compose.yml as processes on this machine."""

    def __init__(self, compose: dict[str, Any], root: Path, mapping: dict[str, dict[str, str]]):
        self.compose, self.root, self.mapping = compose, root, mapping
        self.volumes = {name: root / "volumes" / name for name in compose["volumes"]}
        for path in self.volumes.values():
            path.mkdir(parents=True, exist_ok=True)
        self.logs = root / "logs"
        self.logs.mkdir()
        self.procs: dict[str, subprocess.Popen] = {}

    def mounts(self, service: str) -> list[tuple[str, Path]]:
        pairs = []
        for volume in self.compose["services"][service].get("volumes", []):
            source, target = volume.split(":")[:2]
            path = self.volumes.get(source) or (ROOT / source)
            pairs.append((target, path))
        return sorted(pairs, key=lambda pair: -len(pair[0]))

    def local_path(self, service: str, text: str) -> str:
        """``text`` with the service's mount points replaced by their directories here."""
        for target, path in self.mounts(service):
            text = re.sub(rf"(?<![\w/]){re.escape(target)}(?=/|\b|$)", str(path), text)
        return text

    def env(self, service: str, **override: str) -> dict[str, str]:
        environment = {**self.compose["services"][service]["environment"],
                       **self.mapping["environment"]}
        environment = {key: self.local_path(service, str(value))
                       for key, value in environment.items()}
        base = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                "HOME": str(self.root), "HOSTNAME": socket.gethostname(),
                "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8"}
        return {**base, **environment, **override}

    def argv(self, service: str, command: list[str] | str) -> list[str]:
        if isinstance(command, str):
            command = ["sh", "-c", command]
        elif command and command[0] == "CMD-SHELL":
            command = ["sh", "-c", command[1]]
        elif command and command[0] == "CMD":
            command = command[1:]
        return [self.local_path(service, part) for part in command]

    def start(self, service: str) -> subprocess.Popen:
        log = (self.logs / f"{service}.log").open("w")
        proc = subprocess.Popen(self.argv(service, self.compose["services"][service]["command"]),
                                cwd=ROOT, env=self.env(service), stdout=log,
                                stderr=subprocess.STDOUT, process_group=0)
        self.procs[service] = proc
        return proc

    def run(self, service: str, *args: str, timeout: float = 120,
            **override: str) -> subprocess.CompletedProcess:
        """``docker compose exec SERVICE ARGS`` (or the service's command without ARGS)."""
        command = list(args) or self.compose["services"][service]["command"]
        return subprocess.run(self.argv(service, command), cwd=ROOT,
                              env=self.env(service, **override), capture_output=True,
                              text=True, timeout=timeout)

    def healthy(self, service: str) -> bool:
        check = self.compose["services"][service]["healthcheck"]
        try:
            return self.run(service, *check["test"], timeout=60).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def wait_healthy(self, service: str, timeout: float) -> None:
        assert wait_for(lambda: self.alive(service) and self.healthy(service), timeout=timeout,
                        interval=1), self.log(service)

    def alive(self, service: str) -> bool:
        proc = self.procs.get(service)
        assert proc is None or proc.poll() is None, f"{service} exited\n{self.log(service)}"
        return True

    def log(self, service: str) -> str:
        path = self.logs / f"{service}.log"
        return path.read_text()[-4000:] if path.exists() else ""

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()


def _admin_connection() -> psycopg.Connection:
    db = settings.DATABASES["default"]
    return psycopg.connect(dbname="postgres", user=db["USER"], password=db["PASSWORD"] or None,
                           host=db["HOST"], port=db["PORT"] or None, autocommit=True)


@contextmanager
def postgres_like_the_service(password: str) -> Iterator[dict[str, str]]:
    """What the postgres service's first start makes (POSTGRES_USER, a superuser, and
    POSTGRES_DB), on the real server, under names of their own; dropped afterwards."""
    suffix = uuid.uuid4().hex[:10]
    role, database = f"compose_{suffix}", f"compose_{suffix}"
    created: list[str] = []
    with _admin_connection() as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(password)))
        admin.execute(f'CREATE DATABASE "{database}" OWNER "{role}"')
    try:
        yield {"role": role, "database": database, "created": created}
    finally:
        with _admin_connection() as admin:
            for name in [database, *created]:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def server_mapping(role: str, database: str, web_port: int) -> dict[str, Any]:
    """The compose services' addresses -> the real servers this suite runs on."""
    db = settings.DATABASES["default"]
    return {"environment": {
        # postgres:5432 (a socket directory for the embedded server: libpq takes either)
        "POSTGRES_HOST": db["HOST"], "POSTGRES_PORT": str(db["PORT"] or 5432),
        "POSTGRES_USER": role, "POSTGRES_DB": database,
        # redis:6379 and arcadedb:7687
        "REDIS_URL": settings.REDIS_URL, "NEO4J_URI": settings.NEO4J_URI,
        # web:8000
        "PORT": str(web_port),
    }, "web": f"127.0.0.1:{web_port}"}


def request(url: str, *, headers: Mapping[str, str], body: dict | None = None,
            ) -> tuple[int, Any, bytes]:
    """(status, headers (case-insensitive), body) of one request; redirects not followed."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={
        **headers, **({"Content-Type": "application/json"} if data else {})})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=30) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_the_compose_stack_comes_up_as_an_operator_configures_it(tmp_path):
    # The stack runs a Bolt server: a suite without one fails here, never skips.
    assert settings.ENABLE_NEO4J, "the compose stack needs the graph server (NEO4J_URI)"
    pg_password, graph_password = secrets.token_hex(24), settings.NEO4J_PASSWORD
    operator = operator_settings(POSTGRES_PASSWORD=pg_password,
                                 ARCADEDB_PASSWORD=graph_password,
                                 # often enough to see beat send it and the worker run it
                                 BACKUP_INTERVAL_SECONDS="5",
                                 # below the 16 threads of a web worker: the pool must hold
                                 DB_POOL_MAX_SIZE="3")
    compose = load_compose(operator)
    web_port = free_port()
    with ExitStack() as stack:
        pg = stack.enter_context(postgres_like_the_service(pg_password))
        mapping = server_mapping(pg["role"], pg["database"], web_port)
        run = Stack(compose, tmp_path, mapping)
        stack.callback(run.stop)
        base = f"http://{mapping['web']}"
        proxy = {"Host": DOMAIN, "X-Forwarded-Proto": "https",
                 "X-Forwarded-For": "203.0.113.7"}

        # web: migrate, collectstatic, serve; healthy by its own healthcheck command.
        run.start("web")
        run.wait_healthy("web", timeout=240)
        # Only the operator's domain and "web" are allowed: the healthcheck passes by
        # asking as "web"; asked as 127.0.0.1 the server refuses.
        assert request(f"{base}/healthz", headers={"Host": "127.0.0.1"})[0] == 400
        status, _, body = request(f"{base}/healthz", headers={"Host": "web"})
        assert status == 200 and json.loads(body)["backends"]["neo4j"] == "ok", body

        # Through the proxy: Django's pages sent from http to https, served over https
        # with HSTS and secure cookies. (Tool calls and /mcp skip Django's middleware: the
        # proxy serves https only, docs/operations/deploying.md.)
        status, headers, _ = request(f"{base}/admin/login/",
                                     headers={**proxy, "X-Forwarded-Proto": "http"})
        assert status == 301 and headers["Location"] == f"https://{DOMAIN}/admin/login/"
        status, headers, _ = request(f"{base}/admin/login/", headers=proxy)
        assert status == 200
        assert headers["Strict-Transport-Security"] == \
            "max-age=31536000; includeSubDomains; preload"
        assert "; Secure" in headers["Set-Cookie"]
        made = run.run("web", "python", "manage.py", "create_api_token", "operator")
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip().splitlines()[-1]
        status, headers, body = request(
            f"{base}/api/v1/tools/create_task/", body={"taskId": "compose-1", "name": "Stack"},
            headers={**proxy, "Authorization": f"Bearer {token}"})
        assert status == 200, body
        # Many calls at once: each web worker process borrows from its pool of at most
        # DB_POOL_MAX_SIZE connections (16 threads each would otherwise hold one apiece).
        with ThreadPoolExecutor(48) as pool:
            answers = list(pool.map(lambda n: request(
                f"{base}/api/v1/tools/create_task/", body={"taskId": f"load-{n}", "name": "L"},
                headers={**proxy, "Authorization": f"Bearer {token}"})[0], range(96)))
        assert answers == [200] * 96
        with _admin_connection() as admin:
            [(connections,)] = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                [pg["database"]]).fetchall()
        print(f"\nweb's connections after 96 calls, 48 at a time: {connections}")
        assert 0 < connections <= int(compose["services"]["web"]["environment"]["WEB_WORKERS"]) * 3

        # metrics-token (after web is healthy), then Prometheus's scrape with its token.
        done = run.run("metrics-token")
        assert done.returncode == 0, done.stdout + done.stderr
        scrape = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())[
            "scrape_configs"][0]
        credentials = run.local_path("prometheus", str(
            Path("/etc/prometheus") / scrape["authorization"]["credentials_file"]))
        [target] = scrape["static_configs"][0]["targets"]
        assert target == "web:8000"
        status, _, metrics = request(
            f"{base}{scrape['metrics_path']}",
            headers={"Host": target, "Authorization": f"{scrape['authorization']['type']} "
                                                      f"{Path(credentials).read_text().strip()}"})
        assert status == 200 and b"session_orchestration_" in metrics

        # worker and beat: healthy by their healthchecks; beat's backup lands in the volume.
        run.start("worker")
        run.start("beat")
        run.wait_healthy("worker", timeout=120)
        backups = run.volumes["backups"]
        assert wait_for(lambda: run.alive("beat") and any(backups.glob("*.tar.gz")),
                        timeout=120, interval=1), run.log("beat") + run.log("worker")
        run.wait_healthy("beat", timeout=240)

        # A backup taken and restored into a fresh database, timed (printed with -s).
        started = time.monotonic()
        taken = run.run("web", "python", "manage.py", "backup", "/backups")
        assert taken.returncode == 0, taken.stderr
        archive = taken.stdout.split("backup written: ")[1].split(" (")[0]
        backed_up = time.monotonic()
        fresh = f"{pg['database']}_restored"
        pg["created"].append(fresh)
        with _admin_connection() as admin:
            admin.execute(f'CREATE DATABASE "{fresh}" OWNER "{pg["role"]}"')
        restored = run.run("web", "python", "manage.py", "restore", archive, "--yes",
                           POSTGRES_DB=fresh)
        assert restored.returncode == 0, restored.stdout + restored.stderr
        finished = time.monotonic()
        print(f"\nbackup {backed_up - started:.1f}s + restore {finished - backed_up:.1f}s "
              f"= {finished - started:.1f}s round trip ({Path(archive).stat().st_size} bytes)")
        db = settings.DATABASES["default"]
        with psycopg.connect(dbname=fresh, user=pg["role"], password=pg_password,
                             host=db["HOST"], port=db["PORT"] or None) as copy:
            names = copy.execute(f"SELECT name FROM {settings.MCP_SCHEMA}.task_contexts "
                                 "WHERE task_id = 'compose-1'").fetchall()
        assert names == [("Stack",)]

        # manage.py check --deploy: clean under the stack's settings.
        checked = run.run("web", "python", "manage.py", "check", "--deploy",
                          "--fail-level", "WARNING")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "no issues" in checked.stdout
        for service in ("web", "worker", "beat"):
            run.alive(service)
    shutil.rmtree(tmp_path / "volumes", ignore_errors=True)
