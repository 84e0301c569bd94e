"""The hook calls' floor: what each call of the hook client promises, done alone, through
the same drivers and servers, so ``bench.hookcost`` can say how far ours is from it.

A hook call's promises, and the floor's way of keeping each (plainly, nothing else):

- the HTTP request and its JSON answer: uvicorn's own httptools protocol serving a bare
  ASGI app that answers a fixed JSON body (``transport_floor``), one keep-alive
  connection, measured by the server process's CPU;
- the per-token rate limit shared by every worker: one Redis counter, incremented in the
  same pipeline as the call's other Redis writes;
- a heartbeat: the session's ``last_heartbeat`` in Postgres (committed without waiting
  for the WAL flush, as ours), the Redis key ``context:heartbeat:{id}`` with its TTL;
- a flush of tool uses: their history rows, the renewal of the session's claims on the
  edited paths, and when a path is new to the task, the task's keyFiles appended with its
  version row (the same triggers fire on the same row), then the task's Redis copy
  (the same conditional script) and its file (temp file and rename; the fsync in a
  background thread, as ours);
- a claim of a file: the claim upserted and the other sessions' live claims on it read.

Each is one prepared statement and one Redis pipeline, on a psycopg 3 connection and a
redis-py client of this process: the floor's client work is this process's CPU, the
servers' is theirs (bench.hookcost measures both). Keys are the floor's own (``floor:``)
so that it never serves a reader; the rows are real (the sessions, tasks and claims
bench.hookcost made), which is what makes the triggers and indexes the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.agents import read_stat
from bench.common import free_port
from bench.floor import DelayedFsync, write_atomic

# The tables' names: the spec's in the configured schema (@SCHEMA@), ours in public.
HISTORY = '"agent_sessions_toolinvocation"'
CLAIMS = '"file_claims"'
CLAIM_TTL_SECONDS = 300

# The trigger's who and why, and a commit that does not wait for the WAL flush (ours:
# foundation.core.db.ASYNC_COMMIT), set in the statement itself.
_SETTINGS = """SELECT set_config('synchronous_commit', 'off', true)
  || set_config('orchestrator.change_type', 'auto_save', true)
  || set_config('orchestrator.change_summary', 'keyFiles from edits', true)
  || set_config('orchestrator.session_id', %(s)s, true)
  || set_config('orchestrator.created_by', %(s)s, true) AS applied"""

BEAT = f"""
WITH c AS ({_SETTINGS})
UPDATE @SCHEMA@."active_sessions" s SET last_heartbeat = now() FROM c
WHERE s.session_id = %(s)s AND s.status IN ('active', 'compacted')
RETURNING s.task_id
"""

FLUSH = f"""
WITH c AS ({_SETTINGS}),
beat AS (UPDATE @SCHEMA@."active_sessions" s SET last_heartbeat = now() FROM c
         WHERE s.session_id = %(s)s AND s.status IN ('active', 'compacted')
         RETURNING s.session_id, s.project_id, s.task_id),
uses AS (INSERT INTO {HISTORY} (session_id, tool, success, transport, duration_ms, timestamp,
                                summary, project_id)
         SELECT beat.session_id, u.tool, u.success, 'hook', 0, u.stamp, u.summary,
                beat.project_id
         FROM beat, unnest(%(tools)s::text[], %(successes)s::boolean[],
                           %(stamps)s::timestamptz[], %(summaries)s::text[])
                    AS u(tool, success, stamp, summary)
         RETURNING 1),
renewed AS (UPDATE {CLAIMS} f SET touched_at = now(),
                   expires_at = now() + make_interval(secs => {CLAIM_TTL_SECONDS})
            FROM beat WHERE f.session_id = beat.session_id AND f.path = ANY(%(paths)s::text[])
              AND f.released_at IS NULL
            RETURNING 1),
appended AS (UPDATE @SCHEMA@."task_contexts" t
               SET key_files = COALESCE(t.key_files, '[]') || to_jsonb(%(new)s::text[])
             FROM beat WHERE t.task_id = beat.task_id AND cardinality(%(new)s::text[]) > 0
               AND NOT COALESCE(t.key_files, '[]') @> to_jsonb(%(new)s::text[])
             RETURNING t.*)
SELECT (SELECT count(*) FROM uses) AS recorded, (SELECT count(*) FROM renewed) AS renewed,
       (SELECT row_to_json(appended)::text FROM appended) AS task
"""

CLAIM = f"""
WITH c AS ({_SETTINGS}),
claimed AS (
  INSERT INTO {CLAIMS} AS f (project_id, path, session_id, task_id, source, claimed_at,
                             touched_at, expires_at, known_sessions, overlaps_pending)
  SELECT s.project_id, p, s.session_id, s.task_id, 'check', now(), now(),
         now() + make_interval(secs => {CLAIM_TTL_SECONDS}), '{{}}', '{{}}'
  FROM c, @SCHEMA@."active_sessions" s, unnest(%(paths)s::text[]) AS p
  WHERE s.session_id = %(s)s AND s.status IN ('active', 'compacted')
  ON CONFLICT (session_id, path) DO UPDATE SET touched_at = now(),
    expires_at = EXCLUDED.expires_at, released_at = NULL
  RETURNING f.project_id)
SELECT (SELECT count(*) FROM claimed) AS claimed,
       ARRAY(SELECT o.session_id FROM {CLAIMS} o
             WHERE o.project_id = %(project)s AND o.path = ANY(%(paths)s::text[])
               AND o.session_id <> %(s)s AND o.released_at IS NULL
               AND o.expires_at > now()) AS others
"""


class HookFloor:
    """The floor of each hook call, on ``database`` (a URL, or a psycopg connection in
    autocommit) and ``redis_url``, the spec's tables in ``schema``; ``files`` is the
    directory the task files go to."""

    def __init__(self, database: Any, redis_url: str, files: Path, *,
                 schema: str = "mcp_contexts") -> None:
        import django
        import psycopg
        import redis

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orchestrator.settings")
        django.setup()  # for the cache's own script, which lives with its models
        from contexts.services.cache import SET_IF_NOT_OLDER_LUA

        self.owned = isinstance(database, str)
        self.db = psycopg.connect(database, autocommit=True) if self.owned else database
        self.beat_sql, self.flush_sql, self.claim_sql = (
            sql.replace("@SCHEMA@", f'"{schema}"') for sql in (BEAT, FLUSH, CLAIM))
        self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        self.cache_script = self.redis.register_script(SET_IF_NOT_OLDER_LUA)
        self.files = files
        files.mkdir(parents=True, exist_ok=True)
        self.fsync = DelayedFsync(0.25)

    def _one(self, sql: str, params: dict[str, Any]) -> tuple:
        with self.db.cursor() as cursor:
            cursor.execute(sql, params, prepare=True)
            row = cursor.fetchone()
        if row is None:
            raise SystemExit("hook floor: the session is not live (the statement matched "
                             "nothing)")
        return row

    def _redis(self, session_id: str, task: dict[str, Any] | None = None) -> None:
        pipe = self.redis.pipeline(transaction=False)
        window = f"floor:rate:{int(time.time() // 60)}"
        pipe.incr(window)
        pipe.expire(window, 120)
        pipe.set(f"floor:heartbeat:{session_id}", int(time.time() * 1000), ex=120)
        if task is not None:
            self.cache_script(keys=[f"floor:task:{task['task_id']}"],
                              args=[json.dumps(task), task["version"], task["task_id"], 3600],
                              client=pipe)
        pipe.execute()

    def heartbeat(self, session_id: str) -> None:
        self._one(self.beat_sql, {"s": session_id})
        self._redis(session_id)

    def flush(self, session_id: str, uses: list[dict[str, Any]]) -> None:
        """record_activity's promises for ``uses`` (the hook client's tool uses)."""
        paths = [p for use in uses for p in use.get("filePaths") or []]
        _, _, task_text = self._one(self.flush_sql, {
            "s": session_id, "tools": [u["tool"] for u in uses],
            "successes": [u["success"] for u in uses],
            "stamps": [u["timestamp"] for u in uses],
            "summaries": [u.get("summary") for u in uses], "paths": paths, "new": paths})
        task = json.loads(task_text) if task_text else None
        self._redis(session_id, task)
        if task is not None:
            path = self.files / f"{task['task_id']}.json"
            write_atomic(path, task_text)
            self.fsync.request(path)

    def claim(self, session_id: str, project: str, paths: list[str]) -> None:
        self._one(self.claim_sql, {"s": session_id, "project": project, "paths": paths})
        self._redis(session_id)

    def close(self) -> None:
        self.fsync.stop()
        if self.owned:
            self.db.close()
        self.redis.close()


_BARE_APP = """
import uvicorn
BODY = b'{"success": true, "sessionId": "session-1", "recorded": 3, "keyFilesAdded": []}'
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": BODY})
uvicorn.run(app, host="127.0.0.1", port=int(__import__("sys").argv[1]), http="httptools",
            log_level="warning", access_log=False)
"""


def transport_floor(requests: int, body: bytes) -> float:
    """Server CPU ms per request of uvicorn's httptools protocol and a bare ASGI app that
    reads the body and answers fixed JSON: HTTP/1.1 keep-alive, one client."""
    import http.client

    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", _BARE_APP, str(port)])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)

    def post() -> None:
        conn.request("POST", "/", body, {"Content-Type": "application/json"})
        conn.getresponse().read()

    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                post()
                break
            except OSError:
                conn.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        for _ in range(200):  # warm
            post()
        before = read_stat(server.pid)[2].own
        for _ in range(requests):
            post()
        used = read_stat(server.pid)[2].own - before
    finally:
        conn.close()
        server.terminate()
        server.wait(timeout=10)
    return used / requests * 1000
