"""Task locks (spec 8.2): acquire / renew / release, ownership, expiry, races, and the lock
rule every task write obeys (E1613)."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection

from contexts.services.save import save_task_changes
from foundation.core.errors import OrchestratorError
from locks import services as locks
from tests.locks.conftest import write_lock


def test_acquire_renew_release_by_the_owner_only(tools, make_task):
    make_task("t1")
    body = tools.ok("acquire_task_lock", {"taskId": "t1", "sessionId": "s1", "ttlSeconds": 60})
    lock = body["lock"]
    assert body["acquired"] is True and lock["sessionId"] == "s1"
    assert set(lock) == {"taskId", "sessionId", "lockedAt", "expiresAt"}
    # The key outlives expiresAt by the grace period, so an abandoned lock stays visible.
    ttl = locks.redis_store.run(lambda r: r.ttl(locks.lock_key("t1")))
    assert 60 + locks.LOCK_GRACE_SECONDS - 5 <= ttl <= 60 + locks.LOCK_GRACE_SECONDS

    other = tools.call("acquire_task_lock", {"taskId": "t1", "sessionId": "s2"})
    assert (other.status, other.error_code) == (409, "E1613")
    assert other.body["error"]["details"]["lockedBy"] == "s1"
    assert tools.call("renew_task_lock", {"taskId": "t1", "sessionId": "s2"}).error_code == "E1613"
    assert tools.call("release_task_lock",
                      {"taskId": "t1", "sessionId": "s2"}).error_code == "E1613"

    renewed = tools.ok("renew_task_lock", {"taskId": "t1", "sessionId": "s1", "ttlSeconds": 600})
    assert renewed["lock"]["expiresAt"] > lock["expiresAt"]
    assert renewed["lock"]["lockedAt"] == lock["lockedAt"]
    assert tools.ok("release_task_lock", {"taskId": "t1", "sessionId": "s1"})["released"]
    assert locks.current_lock("t1") is None
    assert tools.ok("release_task_lock", {"taskId": "t1", "sessionId": "s1"})["released"] is False
    assert tools.call("renew_task_lock", {"taskId": "t1", "sessionId": "s1"}).error_code == "E1613"


def test_lock_on_unknown_task_is_e1610(tools):
    response = tools.call("acquire_task_lock", {"taskId": "ghost", "sessionId": "s1"})
    assert (response.status, response.error_code) == (404, "E1610")


def test_expired_lock_is_not_held_and_can_be_taken_over(tools, make_task):
    make_task("t1")
    write_lock("t1", "crashed", expires_in=-30)
    # A save from another session is allowed: the expired lock protects nothing.
    save_task_changes("t1", {"currentPhase": "after crash"}, session_id="s2")
    body = tools.ok("acquire_task_lock", {"taskId": "t1", "sessionId": "s2"})
    assert body["tookOverExpired"] is True and body["lock"]["sessionId"] == "s2"


def test_save_and_rollback_of_a_task_locked_by_another_session_is_e1613(tools, make_task):
    make_task("t1", currentPhase="one")
    tools.ok("acquire_task_lock", {"taskId": "t1", "sessionId": "owner"})
    refused = tools.call("save_context_snapshot", {"taskId": "t1", "sessionId": "intruder",
                                                   "updates": {"currentPhase": "two"}})
    assert (refused.status, refused.error_code) == (409, "E1613")
    anonymous = tools.call("save_context_snapshot",
                           {"taskId": "t1", "updates": {"currentPhase": "two"}})
    assert anonymous.error_code == "E1613"
    rollback = tools.call("rollback_to", {"taskId": "t1", "sessionId": "intruder",
                                          "target": {"type": "version", "version": 1}})
    assert (rollback.status, rollback.error_code) == (409, "E1613")
    assert tools.ok("save_context_snapshot", {"taskId": "t1", "sessionId": "owner",
                                              "updates": {"currentPhase": "two"}})["version"] == 2


def test_locked_elements_need_the_task_lock(tools, make_task):
    make_task("t1", keyFiles=["schema.sql", "app.py"], lockedElements=["schema.sql", "status"])
    for updates in ({"keyFiles": ["app.py"]}, {"status": "blocked"}):
        refused = tools.call("save_context_snapshot",
                             {"taskId": "t1", "sessionId": "s1", "updates": updates})
        assert refused.error_code == "E1613", updates
    # Touching an unlocked element is fine without the lock ...
    tools.ok("save_context_snapshot", {"taskId": "t1", "sessionId": "s1",
                                       "updates": {"keyFiles": ["schema.sql", "app.py", "x.py"]}})
    # ... and the holder of the task lock may change locked elements.
    tools.ok("acquire_task_lock", {"taskId": "t1", "sessionId": "s1"})
    tools.ok("save_context_snapshot", {"taskId": "t1", "sessionId": "s1",
                                       "updates": {"keyFiles": ["app.py"]}})


def _race(target, count: int = 2) -> list:
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = target(index)
        except OrchestratorError as exc:
            results[index] = exc.code
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


@pytest.mark.parametrize("stale", [False, True], ids=["free", "expired"])
def test_sessions_racing_for_one_lock_exactly_one_wins(transactional_db, make_task, stale):
    # Transactional tests commit; a unique id keeps them independent of leftovers.
    task_id = f"race-{uuid.uuid4().hex[:8]}"
    make_task(task_id)
    if stale:
        write_lock(task_id, "crashed", expires_in=-5)
    for _ in range(5):
        results = _race(
            lambda i: locks.acquire_lock(task_id, f"s{i}")["lock"]["sessionId"], count=4)
        winners = [r for r in results if r != "E1613"]
        assert len(winners) == 1, results
        assert locks.current_lock(task_id)["sessionId"] == winners[0]
        locks.release_lock(task_id, winners[0])
        if stale:
            write_lock(task_id, "crashed", expires_in=-5)
