"""The file claim is written twice for speed: the one-round-trip statement
(`claims.services.claiming._claim_at_once`) for the common case, and the long way (holders
read, claim, overlap check) for the rest. Fed the same claims, both must answer the same
and leave the same claim rows; this test runs one sequence each way and compares."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from claims.services.claimants import claimant_cache
from tests.sessions.helpers import conforms

ROOT = "/work/shop"
POLICY = {"fileClaims": {"policy": "warn", "ignore": ["*.lock"]}}

# (paths, ttlSeconds or None, does the one statement answer it?)
CASES: list[tuple[list[str], int | None, bool]] = [
    (["a.py"], None, True),
    (["a.py"], None, True),                                   # the agent's own file again
    ([f"{ROOT}/src/new.py", "b.py", "b.py"], None, True),     # absolute, repeated
    (["src/../c.py", "./d.py"], None, True),                  # normalised
    (["e.py"], 120, True),                                    # its own time to live
    ([f"pkg/m{i}.py" for i in range(12)], None, True),
    (["x.lock", "f.py"], None, True),                         # one path ignored
    (["only.lock"], None, False),                             # nothing left to claim
]


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("sessionId", "timestamp")}


def _rows(session: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT path, project_id, task_id, source, released_at IS NULL,"
            " round(extract(epoch FROM expires_at - touched_at)), known_sessions,"
            " overlaps_pending FROM file_claims WHERE session_id = %s ORDER BY path",
            [session])
        return cursor.fetchall()


def _run(tools, session: str, *, quick: bool) -> tuple[list[dict[str, Any]], list[tuple]]:
    from bench.roundtrips import PostgresTrace

    tools.ok("start_session", {"sessionId": session, "taskId": "t1", "projectDir": ROOT})
    tools.ok("claim_files", {"sessionId": session, "paths": ["prime.py"]})  # caches it
    trace, answers = PostgresTrace(), []
    for paths, ttl, one_statement in CASES:
        body = {"sessionId": session, "paths": paths}
        if ttl:
            body["ttlSeconds"] = ttl
        if not quick:
            claimant_cache.pop(session, None)  # the long way: nothing known of the session
        with trace.capture():
            answer = conforms("claim_files", tools.ok("claim_files", body))
        if quick and one_statement:
            assert trace.round_trips() == 1, (paths, trace.statements())
        answers.append(_answer(answer))
    rows = _rows(session)
    tools.ok("end_session", {"sessionId": session})
    return answers, rows


@pytest.mark.django_db
def test_the_one_statement_claim_agrees_with_the_long_way(tools, make_task):
    make_task("t1")
    tools.ok("update_global_context", {"orchestratorContext": POLICY})
    quick_answers, quick_rows = _run(tools, "s-quick", quick=True)
    long_answers, long_rows = _run(tools, "s-long", quick=False)
    assert quick_answers == long_answers
    assert quick_rows == long_rows
    assert [row[0] for row in quick_rows] == sorted(
        ["prime.py", "a.py", "src/new.py", "b.py", "c.py", "d.py", "e.py", "f.py",
         *(f"pkg/m{i}.py" for i in range(12))])
