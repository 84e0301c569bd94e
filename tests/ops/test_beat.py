"""Beat leadership (orchestrator/ops/beat.py): schedulers built in this process against the
test Redis, their sends published to it and also listed, so a test can say what was sent.
Redis being unreachable is a real client on a port where nothing listens. The real
processes, two stacks and a leader killed with -9, are in tests/e2e/test_two_stacks.py."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
import redis
from redbeat.schedulers import acquire_distributed_beat_lock, get_redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from orchestrator.celery import BEAT_KEY_PREFIX, periodic_jobs, redis_py_url
from orchestrator.celery import app as celery_app
from orchestrator.ops.beat import LeaderScheduler
from tests.conftest import free_port

RETENTION = "retention"


@pytest.fixture
def beat_schedule(settings):
    """Build schedulers from this test's settings, as a beat starting now would; the jobs
    they published are taken off the broker's queue afterwards."""
    def install() -> None:
        celery_app.conf.beat_schedule = periodic_jobs()

    before = celery_app.conf.beat_schedule
    install()
    yield install
    celery_app.conf.beat_schedule = before
    celery_app.control.purge()


def scheduler(sent: list[str]) -> LeaderScheduler:
    """A beat's scheduler whose sends are published to the test Redis as beat publishes
    them, and listed in ``sent`` once published (the ``queued_jobs`` fixture empties the
    broker's queue afterwards: no worker of a later test runs them)."""
    beat = LeaderScheduler(app=celery_app)

    def publish(entry, **kwargs):
        result = LeaderScheduler.apply_async(beat, entry, **kwargs)
        sent.append(entry.name)
        return result

    beat.apply_async = publish
    return beat


def entry(name: str):
    Entry = LeaderScheduler.Entry
    return Entry.from_key(Entry.generate_key(celery_app, name), app=celery_app)


def make_due(name: str) -> None:
    """A new entry is first due one period after it was installed (as with Celery's file
    scheduler): pretend it last ran two days ago."""
    entry(name).reschedule(datetime.now(UTC) - timedelta(days=2))


def lead(beat: LeaderScheduler) -> None:
    acquire_distributed_beat_lock(sender=SimpleNamespace(scheduler=beat))


def test_the_leader_installs_the_schedule_of_its_settings(beat_schedule, settings):
    settings.BACKUP_DIR = "/backups"
    beat_schedule()
    sent: list[str] = []
    first = scheduler(sent)
    lead(first)
    first.tick()  # its first pass as leader installs the schedule
    assert entry("back up").task == "orchestrator.backup"
    make_due(RETENTION)
    first.tick()
    assert sent == [RETENTION]
    ran_at = entry(RETENTION).last_run_at
    first.close()

    settings.BACKUP_DIR = ""
    settings.HEARTBEAT_INTERVAL_MS = 1500
    beat_schedule()
    second = scheduler([])
    # Waiting to lead, a beat leaves the leader's schedule alone ...
    assert entry("back up").task == "orchestrator.backup"
    lead(second)
    second.tick()
    # ... and leading, writes its own: entries replaced or removed, last runs kept.
    with pytest.raises(KeyError):
        entry("back up")
    assert entry("detect crashed sessions").schedule.run_every.total_seconds() == 1.5
    assert entry(RETENTION).last_run_at == ran_at
    assert set(get_redis(celery_app).smembers(f"{BEAT_KEY_PREFIX}:statics")) == set(
        periodic_jobs())
    second.close()


def test_a_run_another_beat_sent_is_not_sent_again(beat_schedule, caplog):
    """Two beats that both believe they lead (a stalled leader waking up after the other
    took over) read the same due entry: the second one's claim finds it sent."""
    sent_a, sent_b = [], []
    a, b = scheduler(sent_a), scheduler(sent_b)
    a.install_schedule()
    make_due(RETENTION)
    seen_by_a, seen_by_b = entry(RETENTION), entry(RETENTION)
    a.maybe_due(seen_by_a)
    with caplog.at_level(logging.WARNING, logger="celery.beat"):
        b.maybe_due(seen_by_b)
    assert (sent_a, sent_b) == ([RETENTION], [])
    assert "retention was already sent by another beat" in caplog.text
    # Read again, the entry is not due for either: its last run is A's.
    assert not entry(RETENTION).is_due()[0]


def test_a_claim_survives_the_schedule_being_installed_meanwhile(beat_schedule):
    """Installing rewrites every entry's definition and score, not its last run: the run
    the leader read as due is still its to send."""
    sent: list[str] = []
    leader = scheduler(sent)
    leader.install_schedule()
    make_due(RETENTION)
    due = entry(RETENTION)
    scheduler([]).install_schedule()  # between the read and the claim
    leader.maybe_due(due)
    assert sent == [RETENTION]


def test_a_leader_that_lost_its_lock_waits_for_it_again(beat_schedule, caplog):
    sent_a, sent_b = [], []
    a, b = scheduler(sent_a), scheduler(sent_b)
    lead(a)
    a.tick()
    make_due(RETENTION)
    # A stalled past the lock period: the lock expired and B took it.
    get_redis(celery_app).delete(a.lock_key)
    lead(b)
    with caplog.at_level(logging.WARNING, logger="celery.beat"):
        assert a.tick() == 0.0
    assert a.lock is None and sent_a == []
    assert "lost the leader lock" in caplog.text
    b.tick()
    assert sent_b == [RETENTION]
    b.close()  # releases the lock: A's next pass takes it
    assert not get_redis(celery_app).exists(a.lock_key)
    a.tick()
    assert a.lock is not None and a.lock.owned()
    a.close()


def test_a_redis_that_lost_its_keys_gets_the_schedule_back(beat_schedule):
    sent: list[str] = []
    beat = scheduler(sent)
    lead(beat)
    beat.tick()
    get_redis(celery_app).flushdb()  # Redis restarted empty: no lock, no schedule
    assert beat.tick() == 0.0
    beat.tick()  # leads again and installs the schedule again
    assert beat.lock.owned()
    assert entry(RETENTION).task == "orchestrator.retention"
    beat.close()


def test_redis_unreachable_is_waited_out_not_fatal(beat_schedule, monkeypatch, caplog):
    sent: list[str] = []
    beat = scheduler(sent)
    lead(beat)
    beat.tick()
    make_due(RETENTION)
    monkeypatch.setattr(celery_app, "redbeat_redis",
                        redis.Redis(port=free_port(), retry=Retry(NoBackoff(), 0)))
    with caplog.at_level(logging.WARNING, logger="celery.beat"):
        assert beat.tick() == beat.max_interval
    assert "Redis unreachable" in caplog.text and sent == []
    monkeypatch.undo()
    beat.tick()
    assert sent == [RETENTION]
    beat.close()


def test_settings_give_a_quick_failover(settings):
    conf = celery_app.conf
    assert conf.beat_scheduler == "orchestrator.ops.beat.LeaderScheduler"
    assert conf.redbeat_lock_timeout == settings.BEAT_LOCK_TIMEOUT_SECONDS
    # The lock is renewed (and a waiting beat retries) six times per lock period.
    assert conf.beat_max_loop_interval == settings.BEAT_LOCK_TIMEOUT_SECONDS / 6
    assert conf.redbeat_redis_url == redis_py_url(settings.CELERY_BROKER_URL)
    assert conf.redbeat_key_prefix == BEAT_KEY_PREFIX


def test_the_heavy_jobs_are_spread_over_their_period(beat_schedule, settings):
    """Hot sync, conflict detection and graph sync share a period: installed together
    they would fall due in the same second every time. The leader gives each its own
    third of the period, keeps phases that are already apart, and spreads again the
    phases of a schedule that has them together."""
    settings.HOT_SYNC_INTERVAL_SECONDS = settings.CONFLICT_DETECTION_INTERVAL_SECONDS = 300
    settings.GRAPH_SYNC_INTERVAL_SECONDS = 300
    settings.ENABLE_CONFLICT_DETECTION = settings.ENABLE_NEO4J = True
    beat_schedule()
    heavy = ("detect conflicts", "sync graph", "sync hot context")

    def due_in() -> list[float]:
        return [round(entry(name).is_due()[1]) for name in heavy]

    beat = scheduler([])
    lead(beat)
    beat.tick()
    first = due_in()
    assert [abs(seconds - expected) <= 2 for seconds, expected in
            zip(first, (100, 200, 300), strict=True)] == [True] * 3, first
    assert entry(RETENTION).is_due()[1] > 86000  # left alone
    beat.close()

    # Another leader later finds them apart and leaves them so ...
    again = scheduler([])
    lead(again)
    again.tick()
    assert [abs(a - b) <= 2 for a, b in zip(due_in(), first, strict=True)] == [True] * 3
    again.close()
    # ... but spreads a schedule that has them together (written before this rule).
    together = datetime.now(UTC) - timedelta(seconds=50)
    for name in heavy:
        entry(name).reschedule(together)
    last = scheduler([])
    lead(last)
    last.tick()
    spread = sorted(due_in())
    assert min(b - a for a, b in zip(spread, spread[1:], strict=False)) >= 98, spread
    last.close()
