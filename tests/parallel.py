"""Per-worker backends for a parallel run (pytest-xdist, ``make test``'s ``-n``).

Loaded with ``-p tests.parallel`` (pyproject's addopts) so that it runs before pytest-django
imports the settings: a worker's settings then read its own backends from the environment,
and so do the servers its tests start as processes (they inherit the environment).

- Postgres: pytest-django gives each worker its own test database (``test_<name>_gw<N>``).
- Redis: worker N uses database ``base + N`` (``base - N`` when that would pass 15, so CI's
  db 15 on the machine's Redis becomes 15, 14, ...): each test empties its worker's
  database (tests/conftest.py ``isolated_backends``), never another's.
- Bolt graph (the launcher's ArcadeDB): worker N uses its own database ``graph_gwN``,
  created here over ArcadeDB's HTTP API; each database test empties it. ArcadeDB's Bolt
  plugin serves the name ``neo4j`` (the driver's default) from whichever database it
  finds first, so a worker always names its own. A graph server that is not the
  launcher's cannot be split this way: a parallel run against one is refused.

Without xdist (``-n 0``, or a plain ``pytest``) nothing changes.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.request
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDIS_DATABASES = 16  # Redis's and valkey's default number of databases


def worker_index() -> int | None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw3"; set before plugins load
    return int(worker[2:]) if worker.startswith("gw") else None


def redis_database(base: int, index: int, workers: int) -> int:
    if base + workers <= REDIS_DATABASES:
        return base + index
    if base - workers + 1 >= 0:
        return base - index
    raise RuntimeError(f"{workers} workers do not fit in Redis's {REDIS_DATABASES} databases "
                       f"from database {base}")


def with_redis_database(url: str, index: int, workers: int) -> str:
    """``url`` pointing at the worker's database: ``/N`` in the path of redis://, ``db=N``
    in the query of unix://, ``virtual_host=N`` for kombu's redis+socket://."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    if parts.scheme in ("redis", "rediss"):
        base = int(parts.path.strip("/") or 0)
        return urlunsplit(parts._replace(path=f"/{redis_database(base, index, workers)}"))
    key = "virtual_host" if parts.scheme == "redis+socket" else "db"
    query[key] = str(redis_database(int(query.get(key) or 0), index, workers))
    return urlunsplit(parts._replace(query=urlencode(query)))


def create_graph_database(name: str) -> str:
    """Create ``name`` on the launcher's ArcadeDB (if missing) and return the Bolt URL of
    it. The launcher exports its HTTP address as ARCADEDB_HTTP_URL."""
    http = os.environ.get("ARCADEDB_HTTP_URL")
    if not http:
        raise RuntimeError("a parallel run needs a graph database per worker: run it under "
                           "the launcher's embedded ArcadeDB (no NEO4J_URI), or with -n 0")
    user = os.environ.get("NEO4J_USER", "root")
    auth = base64.b64encode(f"{user}:{os.environ.get('NEO4J_PASSWORD', '')}".encode())
    headers = {"Authorization": f"Basic {auth.decode()}", "Content-Type": "application/json"}

    def server(command: str) -> dict:
        request = urllib.request.Request(f"{http}/api/v1/server", headers=headers,
                                         data=json.dumps({"command": command}).encode())
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)

    listing = urllib.request.Request(f"{http}/api/v1/databases", headers=headers)
    with urllib.request.urlopen(listing, timeout=30) as answer:
        if name not in json.load(answer).get("result", []):
            server(f"create database {name}")
    url = urlsplit(os.environ["NEOMODEL_DATABASE_URL"])
    return urlunsplit(url._replace(path=f"/{name}"))


def configure_worker() -> None:
    index = worker_index()
    if index is None:
        return
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:
        os.environ["REDIS_URL"] = with_redis_database(redis_url, index, workers)
    broker = os.environ.get("CELERY_BROKER_URL")
    if broker:
        os.environ["CELERY_BROKER_URL"] = with_redis_database(broker, index, workers)
    if os.environ.get("ENABLE_NEO4J", "true").strip().lower() not in ("false", "0", "no", "off"):
        os.environ["NEOMODEL_DATABASE_URL"] = create_graph_database(f"graph_gw{index}")


configure_worker()
