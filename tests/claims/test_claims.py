"""Live file claims (claims.services): who holds what, the warning before an edit, the
block policy, conflicts recorded at once, notices to the holder, liveness, TTL, same
task, ignored paths, worktrees and the tools' errors."""

from __future__ import annotations

import pytest
from django.db import connection

from conflicts.models import ContextConflict
from contexts.models import TaskContext
from sessions.models import SessionEvent
from tests.sessions.helpers import backdate, conforms


def start(tools, session: str, task: str | None, project_dir: str = "/repo") -> None:
    body = {"sessionId": session, "projectDir": project_dir}
    if task:
        body["taskId"] = task
    tools.ok("start_session", body)


def expire(session: str, path: str, seconds_ago: float) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE file_claims SET expires_at = now() - make_interval(secs => %s) "
                       "WHERE session_id = %s AND path = %s", [seconds_ago, session, path])


def set_policy(tools, policy: str, ignore: list[str] | None = None) -> None:
    tools.ok("update_global_context", {"orchestratorContext": {
        "fileClaims": {"policy": policy, "ignore": ignore or []}}})


@pytest.fixture
def two_agents(tools, make_task):
    make_task("shop-main", name="Checkout")
    make_task("shop-feat", name="Coupons")
    start(tools, "s-main", "shop-main", "/work/shop")
    start(tools, "s-feat", "shop-feat", "/work/shop-feat")  # a worktree of the same repo
    return tools


@pytest.mark.django_db
def test_first_claim_is_clear_and_a_second_task_is_warned_with_who_and_what(two_agents):
    tools = two_agents
    first = conforms("claim_files", tools.ok("claim_files", {
        "sessionId": "s-main", "paths": ["/work/shop/src/shared.py"]}))
    assert first["claimed"] == ["src/shared.py"] and first["holders"] == []
    assert first["message"] is None and first["blocked"] is False
    # The worktree names the file by its own absolute path: the same repository path.
    second = conforms("claim_files", tools.ok("claim_files", {
        "sessionId": "s-feat", "paths": ["/work/shop-feat/src/shared.py"]}))
    assert second["claimed"] == ["src/shared.py"]
    [holder] = second["warnings"]
    assert holder["sessionId"] == "s-main" and holder["taskId"] == "shop-main"
    assert holder["taskName"] == "Checkout" and holder["state"] == "held"
    assert "src/shared.py" in second["message"] and "shop-main" in second["message"]
    # A file_conflict exists at once, by the detector's rules; both tasks list the file.
    [conflict] = second["conflicts"]
    assert conflict["new"] is True and conflict["severity"] == "medium"
    stored = ContextConflict.objects.get(id=conflict["conflictId"])
    assert stored.conflict_type == "file_conflict"
    assert {stored.task_a_id, stored.task_b_id} == {"shop-main", "shop-feat"}
    for task in ("shop-main", "shop-feat"):
        assert "src/shared.py" in TaskContext.objects.get(task_id=task).key_files
    # The holder is told on its next answer, once.
    notices = tools.ok("record_activity", {"sessionId": "s-main", "notices": True})["notices"]
    assert len(notices) == 1 and "s-feat" in notices[0] and conflict["conflictId"] in notices[0]
    assert tools.ok("record_activity", {"sessionId": "s-main", "notices": True})["notices"] == []
    # Said once: the same overlap warns neither again; detect_conflicts finds nothing new.
    again = tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["src/shared.py"]})
    assert again["warnings"] == [] and [h["sessionId"] for h in again["holders"]] == ["s-main"]
    assert tools.ok("detect_conflicts", {"conflictTypes": ["file_conflict"]})[
        "summary"]["newConflicts"] == 0
    events = list(SessionEvent.objects.filter(content__in=("edit_warning", "claim_overlap"))
                  .values_list("session_id", "content"))
    assert sorted(events) == [("s-feat", "edit_warning"), ("s-main", "claim_overlap")]


@pytest.mark.django_db
def test_same_task_and_own_claims_never_warn(tools, make_task):
    make_task("t1")
    start(tools, "a", "t1")
    start(tools, "b", "t1")
    tools.ok("claim_files", {"sessionId": "a", "paths": ["x.py"]})
    assert tools.ok("claim_files", {"sessionId": "a", "paths": ["x.py"]})["holders"] == []
    assert tools.ok("claim_files", {"sessionId": "b", "paths": ["x.py"]})["holders"] == []
    assert not ContextConflict.objects.exists()


@pytest.mark.django_db
def test_ended_crashed_or_silent_sessions_hold_nothing(two_agents):
    tools = two_agents
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["a.py", "b.py", "c.py"]})
    backdate("s-main", 60)  # silent past the crash threshold: not live any more
    assert tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["a.py"]})["holders"] == []
    tools.ok("heartbeat", {"sessionId": "s-main"})
    assert tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["b.py"]})["holders"]
    tools.ok("end_session", {"sessionId": "s-main"})
    assert tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["c.py"]})["holders"] == []
    assert tools.ok("get_file_claims", {"sessionId": "s-main"})["claims"] == []
    # An ended session cannot claim.
    refused = tools.call("claim_files", {"sessionId": "s-main", "paths": ["d.py"]})
    assert (refused.status, refused.error_code) == (400, "E1602") or refused.error_code == "E1602"


@pytest.mark.django_db
def test_ttl_then_recently_held_then_nothing(two_agents, settings):
    tools = two_agents
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["a.py"], "ttlSeconds": 60})
    expire("s-main", "a.py", 30)  # lapsed 30 s ago: recently held
    [holder] = tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["a.py"]})["warnings"]
    assert holder["state"] == "recent"
    assert not ContextConflict.objects.exists()  # only a held claim is a conflict
    expire("s-main", "a.py", settings.FILE_CLAIM_RECENT_SECONDS + 5)
    tools.ok("release_files", {"sessionId": "s-feat"})
    assert tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["a.py"]})["holders"] == []


@pytest.mark.django_db
def test_released_claims_warn_no_one(two_agents):
    tools = two_agents
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["a.py", "b.py"]})
    released = tools.ok("release_files", {"sessionId": "s-main", "paths": ["a.py"]})
    assert released["released"] == ["a.py"]
    assert tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["a.py"]})["holders"] == []
    assert tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["b.py"]})["holders"]


@pytest.mark.django_db
def test_block_policy_refuses_and_claims_nothing(two_agents):
    tools = two_agents
    set_policy(tools, "block")
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["src/app.py"]})
    body = tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["src/app.py", "new.py"]})
    assert body["blocked"] is True and body["claimed"] == []
    assert "refused" in body["message"] and "shop-main" in body["message"]
    assert tools.ok("get_file_claims", {"sessionId": "s-feat"})["claims"] == []
    assert not ContextConflict.objects.exists()
    assert SessionEvent.objects.filter(session_id="s-feat", content="edit_blocked").count() == 1


@pytest.mark.django_db
def test_ignored_paths_are_listed_never_claimed(two_agents):
    tools = two_agents
    set_policy(tools, "block", ["*.lock", "dist/*"])
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["poetry.lock", "dist/app.js"]})
    body = tools.ok("claim_files", {"sessionId": "s-feat",
                                    "paths": ["sub/poetry.lock", "dist/app.js", "poetry.lock"]})
    assert body["blocked"] is False and body["claimed"] == []
    assert body["ignored"] == ["sub/poetry.lock", "dist/app.js", "poetry.lock"]


@pytest.mark.django_db
def test_policy_is_validated(tools):
    bad = tools.call("update_global_context", {"orchestratorContext": {
        "fileClaims": {"policy": "explode"}}})
    assert bad.error_code == "E1612" and "fileClaims" in bad.body["error"]["message"]


@pytest.mark.django_db
def test_paths_errors_and_unknown_sessions(two_agents):
    tools = two_agents
    assert tools.call("claim_files", {"sessionId": "s-main", "paths": ["../x.py"]}).error_code == "E1612"
    assert tools.call("claim_files", {"sessionId": "s-main", "paths": []}).error_code == "E1612"
    assert tools.call("claim_files", {"sessionId": "nope", "paths": ["a"]}).error_code == "E1600"
    assert tools.call("get_file_claims", {"taskId": "nope"}).error_code == "E1610"


@pytest.mark.django_db
def test_activity_claims_too_and_the_flusher_is_told(two_agents):
    """An edit the check before it missed (service down for a moment) is claimed when the
    flush reports it; the second task's session learns it from its notices."""
    tools = two_agents
    tools.ok("record_activity", {"sessionId": "s-main", "toolUses": [
        {"tool": "Edit", "success": True, "timestamp": "2026-11-25T08:00:00Z",
         "filePaths": ["src/shared.py"]}]})
    body = tools.ok("record_activity", {"sessionId": "s-feat", "notices": True, "toolUses": [
        {"tool": "Write", "success": True, "timestamp": "2026-11-25T08:00:01Z",
         "filePaths": ["/work/shop-feat/src/shared.py"]}]})
    assert len(body["notices"]) == 1 and "s-main" in body["notices"][0]
    assert ContextConflict.objects.filter(conflict_type="file_conflict").count() == 1
    listing = tools.ok("get_file_claims", {})
    assert listing["contested"] == ["src/shared.py"]
    assert {c["sessionId"] for c in listing["claims"]} == {"s-main", "s-feat"}
    by_task = tools.ok("get_file_claims", {"taskId": "shop-main"})
    assert {c["taskId"] for c in by_task["claims"]} == {"shop-main", "shop-feat"}


@pytest.mark.django_db
def test_claims_stay_inside_their_project(tools, make_task):
    tools.ok("create_project", {"projectId": "other", "name": "Other"})
    make_task("t1")
    tools.ok("create_task", {"taskId": "t2", "name": "t2", "projectId": "other"})
    start(tools, "a", "t1")
    start(tools, "b", "t2")
    tools.ok("claim_files", {"sessionId": "a", "paths": ["src/app.py"]})
    assert tools.ok("claim_files", {"sessionId": "b", "paths": ["src/app.py"]})["holders"] == []


@pytest.mark.django_db
def test_ignored_paths_make_no_conflict_and_raise_no_severity(two_agents):
    """Both tasks list poetry.lock (their edits reached keyFiles), but the policy ignores
    it: the detector pairs them on app.py alone, medium, as the claims do."""
    tools = two_agents
    set_policy(tools, "warn", ["*.lock"])
    for session in ("s-main", "s-feat"):
        tools.ok("record_activity", {"sessionId": session, "toolUses": [
            {"tool": "Edit", "success": True, "timestamp": "2026-11-25T08:00:00Z",
             "filePaths": [path]} for path in ("poetry.lock", "a.lock", "b.lock", "app.py")]})
    [conflict] = ContextConflict.objects.filter(conflict_type="file_conflict")
    assert conflict.severity == "medium" and conflict.evidence["actualValue"] == ["app.py"]
    found = tools.ok("detect_conflicts", {"conflictTypes": ["file_conflict"]})
    assert found["detected"] == []


@pytest.mark.django_db
def test_a_sessions_first_claim_locks_and_reads_in_one_round_trip(two_agents):
    """A session not yet cached takes the long way: the path locks, the other holders and
    what the session was told go in one round trip, then the upsert, the notices and the
    commit; the answer is the long way's."""
    from bench.roundtrips import PostgresTrace
    from claims.services.claimants import claimant_cache

    tools = two_agents
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["a.py"]})
    claimant_cache.clear()
    trace = PostgresTrace()
    with trace.capture():
        body = conforms("claim_files", tools.ok("claim_files", {
            "sessionId": "s-feat", "paths": ["b.py", "src/c.py"]}))
    # The test's transaction makes the claim's a savepoint: SAVEPOINT, the claimant, the
    # locks and reads, the upsert, the notices, RELEASE (each was one more before).
    assert trace.round_trips() == 6, trace.statements()
    assert body["claimed"] == ["b.py", "src/c.py"] and body["warnings"] == []
    # The long way's answer, warnings and all, for a file another task holds.
    claimant_cache.clear()
    body = tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["a.py"]})
    assert [h["path"] for h in body["warnings"]] == ["a.py"]


@pytest.mark.django_db
def test_a_claim_nobody_else_holds_is_one_round_trip(two_agents):
    """The common claim (the agent's own file again, or one nobody else holds): the locks
    and the guarded upsert go in one query, the answer the same as the long way's."""
    from bench.roundtrips import PostgresTrace

    tools = two_agents
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["a.py"]})  # caches the session
    trace = PostgresTrace()
    for paths in (["a.py"], ["/work/shop/src/new.py", "b.py"]):
        with trace.capture():
            body = conforms("claim_files", tools.ok("claim_files", {
                "sessionId": "s-main", "paths": paths}))
        assert trace.round_trips() == 1, trace.statements()
        assert body["claimed"] == [p.removeprefix("/work/shop/") for p in paths]
        assert body["holders"] == [] and body["message"] is None
    claims = {c["path"] for c in tools.ok("get_file_claims", {"sessionId": "s-main"})["claims"]}
    assert claims == {"a.py", "src/new.py", "b.py"}
    # Held by another task: the one query writes nothing, the long way warns.
    body = tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["b.py"]})
    body = tools.ok("claim_files", {"sessionId": "s-feat", "paths": ["c.py", "a.py"]})
    assert [h["path"] for h in body["warnings"]] == ["a.py"] and body["claimed"] == ["c.py",
                                                                                       "a.py"]


@pytest.mark.django_db
def test_a_policy_changed_since_the_last_claim_is_read_again(two_agents):
    tools = two_agents
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["x.lock"]})  # cached: no ignore
    set_policy(tools, "warn", ["*.lock"])
    body = tools.ok("claim_files", {"sessionId": "s-main", "paths": ["y.lock", "z.py"]})
    assert body["ignored"] == ["y.lock"] and body["claimed"] == ["z.py"]
    held = {c["path"] for c in tools.ok("get_file_claims", {"sessionId": "s-main"})["claims"]}
    assert "y.lock" not in held


@pytest.mark.django_db(transaction=True)
def test_a_claim_waiting_for_the_path_lock_sees_what_its_holder_committed(tools, make_task):
    """The one-query claim keeps the long way's promise (of two claimants of one file, the
    second sees the first): a claim that waited for the path's lock reads what the lock's
    holder committed meanwhile, and is warned."""
    import threading

    import psycopg

    from claims.services.claiming import claim
    from tests.waiting import lock_wait

    make_task("t-a")
    make_task("t-b")
    start(tools, "s-a", "t-a")
    start(tools, "s-b", "t-b")
    claim("s-a", ["warm.py"])  # s-a cached: its next claim is the one query
    project = tools.ok("get_file_claims", {"sessionId": "s-a"})["claims"][0]["projectId"]
    answers: list[dict] = []
    with psycopg.connect(**connection.get_connection_params()) as other:
        # Another claimant of race.py, mid-claim: it holds the path's lock and has
        # written its claim, not yet committed.
        other.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s || '|' || %s, 7))",
                      [project, "race.py"])
        other.execute("INSERT INTO file_claims (project_id, path, session_id, task_id, source, "
                      "expires_at, known_sessions, overlaps_pending) VALUES (%s, 'race.py', "
                      "'s-b', 't-b', 'tool', now() + interval '10 minutes', '{}', '{}')",
                      [project])
        waiting = threading.Thread(target=lambda: (
            answers.append(claim("s-a", ["race.py"])), connection.close()))
        waiting.start()
        assert lock_wait(other.info.backend_pid)  # the claim waits for the path's lock
        assert waiting.is_alive()
        other.commit()
    waiting.join(10)
    [answer] = answers
    assert [(h["sessionId"], h["path"]) for h in answer["warnings"]] == [("s-b", "race.py")]


def _pending_overlap(tools, make_task) -> str:
    """s-main holds src/shared.py; s-feat (another task) claimed it too and left the
    overlap pending, as a claim does for the recorder. Returns the project."""
    make_task("shop-main")
    make_task("shop-feat")
    start(tools, "s-main", "shop-main")
    start(tools, "s-feat", "shop-feat")
    tools.ok("claim_files", {"sessionId": "s-main", "paths": ["src/shared.py"]})
    project = tools.ok("get_file_claims", {"sessionId": "s-main"})["claims"][0]["projectId"]
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO file_claims (project_id, path, session_id, task_id, source, "
                       "expires_at, known_sessions, overlaps_pending) VALUES (%s, "
                       "'src/shared.py', 's-feat', 'shop-feat', 'tool', "
                       "now() + interval '10 minutes', '{s-main}', '{s-main}')", [project])
    return project


def _touch_claim_at_once(path: str = "src/shared.py") -> None:
    """What a flush's renewal does to s-feat's claim, refused if its row is locked."""
    import psycopg

    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as renewal:
        renewal.execute("SET lock_timeout = '2s'")
        renewal.execute("UPDATE file_claims SET touched_at = now(), overlaps_pending = "
                        "array_append(overlaps_pending, 's-later') "
                        "WHERE session_id = 's-feat' AND path = %s", [path])


def _recording(results: list):
    import threading

    from claims.services.overlaps import record_overlaps

    thread = threading.Thread(target=lambda: (results.append(record_overlaps()),
                                              connection.close()))
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_the_recorder_waits_for_the_conflict_store_holding_no_claim(tools, make_task):
    """Recorders take turns on the conflict store's lock; the one waiting its turn locks no
    claim, so the claimer's flushes (which renew the claim) go on meanwhile."""
    import psycopg

    from conflicts.services.store import STORE_LOCK_KEY
    from tests.waiting import lock_wait

    _pending_overlap(tools, make_task)
    results: list = []
    with psycopg.connect(**connection.get_connection_params()) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", [STORE_LOCK_KEY])
        recorder = _recording(results)
        assert lock_wait(other.info.backend_pid)
        _touch_claim_at_once()
        other.commit()
    recorder.join(10)
    [[conflict]] = results
    assert {conflict["taskAId"], conflict["taskBId"]} == {"shop-main", "shop-feat"}


@pytest.mark.django_db(transaction=True)
def test_the_recorder_clears_only_the_overlaps_it_recorded(tools, make_task):
    """While a batch stores the overlaps it read, neither the claim's row nor the tasks'
    are locked (the sessions' flushes renew the one and append to the others), and an
    overlap the claim adds meanwhile stays pending for the next batch."""
    import psycopg

    from foundation.core.db import qualified
    from tests.waiting import lock_wait

    _pending_overlap(tools, make_task)
    results: list = []
    with psycopg.connect(**connection.get_connection_params()) as other:
        # The conflict table is busy: the batch, about to store, waits for it.
        other.execute(f"LOCK TABLE {qualified('context_conflicts')} IN EXCLUSIVE MODE")
        recorder = _recording(results)
        assert lock_wait(other.info.backend_pid)
        _touch_claim_at_once()
        with psycopg.connect(**connection.get_connection_params(), autocommit=True) as flush:
            flush.execute("SET lock_timeout = '2s'")
            flush.execute(f"UPDATE {qualified('task_contexts')} SET key_files = key_files "
                          "WHERE task_id IN ('shop-main', 'shop-feat')")
        other.commit()
    recorder.join(10)
    assert len(results) == 1 and len(results[0]) == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT overlaps_pending FROM file_claims WHERE session_id = 's-feat'")
        assert cursor.fetchone()[0] == ["s-later"]


@pytest.mark.django_db
def test_one_batch_records_every_claimants_overlaps_once_per_task_pair(tools, make_task):
    """The background recorder takes the overlaps several claims left pending in one
    batch: one conflict per task pair (credited to the first claim contesting it), each
    listing every contested file, and every holder told."""
    from claims.services.overlaps import record_overlaps

    for name in ("a", "b", "c"):
        make_task(f"t-{name}")
        start(tools, f"s-{name}", f"t-{name}")
    tools.ok("claim_files", {"sessionId": "s-a", "paths": ["src/one.py"]})
    tools.ok("claim_files", {"sessionId": "s-b", "paths": ["src/two.py"]})
    project = tools.ok("get_file_claims", {"sessionId": "s-a"})["claims"][0]["projectId"]
    # What claims made while the recorder waited leave behind (claimant, path, holder),
    # in the order they were made.
    for claimant, path, holder in (("s-b", "src/one.py", "s-a"), ("s-a", "src/two.py", "s-b"),
                                   ("s-c", "src/two.py", "s-b")):
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO file_claims (project_id, path, session_id, task_id, source, "
                "expires_at, known_sessions, overlaps_pending) VALUES (%s, %s, %s, %s, 'tool', "
                "now() + interval '10 minutes', ARRAY[%s], ARRAY[%s])",
                [project, path, claimant, "t-" + claimant[-1], holder, holder])
    found = record_overlaps()
    stored = {(c.task_a_id, c.task_b_id): c for c in ContextConflict.objects.filter(
        conflict_type="file_conflict")}
    assert sorted(stored) == [("t-a", "t-b"), ("t-b", "t-c")]
    assert stored["t-a", "t-b"].detected_by == "claims:s-b"
    assert stored["t-b", "t-c"].detected_by == "claims:s-c"
    assert sorted(stored["t-a", "t-b"].evidence["actualValue"]) == ["src/one.py", "src/two.py"]
    assert sorted(c["conflictId"] for c in found) == sorted(str(c.id) for c in stored.values())
    told = {s: tools.ok("record_activity", {"sessionId": s, "notices": True})["notices"]
            for s in ("s-a", "s-b", "s-c")}
    assert len(told["s-a"]) == 1 and "s-b" in told["s-a"][0]
    assert len(told["s-b"]) == 2 and told["s-c"] == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM file_claims WHERE cardinality(overlaps_pending) > 0")
        assert cursor.fetchone()[0] == 0
