"""Celery beat on several stacks at once: one leader sends, each run is sent once.

Every stack (``make run``, a compose replica) starts a beat. celery-redbeat keeps the
schedule in Redis and lets one beat lead: a beat takes the Redis lock
``orchestrator:beat::lock`` (``SET NX PX``) before its first pass and blocks until it has it,
renews it at the start of every pass (to ``BEAT_LOCK_TIMEOUT_SECONDS``) and releases it
when it stops. A leader killed with -9 stops renewing: its lock expires and a waiting beat
(which retries every loop interval) takes over and sends what fell due meanwhile.

``LeaderScheduler`` adds four things redbeat leaves to the operator:

- Only the leader writes the schedule, from its own settings, each time it takes the lead
  (redbeat has every beat write it once, as it starts): a standby starting with other
  settings does not rewrite the running leader's schedule, and a Redis that lost its keys
  (restarted empty, flushed) gets the schedule back with the lock.
- A leader that finds its lock gone (it stalled longer than the lock period, or Redis
  lost the key) goes back to waiting instead of raising out of beat: under ``make run``
  a beat that exits stops the whole stack.
- Redis unreachable is logged and retried every loop instead of ending beat (the file
  scheduler used before kept running through an outage).
- Each run is claimed before it is sent: a compare-and-set on the entry's last run in
  Redis (WATCH/MULTI), so two beats that both believe they lead for a moment (a stalled
  leader waking up after another took over) still send every run once.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

import redis
from celery.utils.log import get_logger
from redbeat.decoder import RedBeatJSONEncoder
from redbeat.schedulers import (
    RedBeatScheduler,
    RedBeatSchedulerEntry,
    acquire_distributed_beat_lock,
    get_redis,
)
from redis.exceptions import LockError, WatchError

logger = get_logger("celery.beat")

REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)
# A claim is tried again when another client touched the entry without sending it (a beat
# taking the lead rewrites every entry's definition).
CLAIM_ATTEMPTS = 3


class LeaderScheduler(RedBeatScheduler):
    #: The lock the schedule was last installed under (a new lock: install it again).
    _installed_under: object = None

    def setup_schedule(self) -> None:
        # Called as the scheduler is built (before redbeat sets self.lock_key), long
        # before the lock is taken: the first pass as leader installs the schedule instead.
        if not self.app.redbeat_conf.lock_key:
            super().setup_schedule()

    def install_schedule(self) -> None:
        """Write this beat's schedule into Redis: definitions replaced, last runs kept,
        entries no longer in the settings removed (redbeat's setup_schedule); then spread
        the heavy jobs over their period."""
        super().setup_schedule()
        self._stagger_heavy_jobs()
        self._installed_under = self.lock

    def _stagger_heavy_jobs(self) -> None:
        """Give the heavy jobs (``jobruns.Job.heavy``) their own phase in the period when
        their next runs fall closer together than half of an even spacing.

        Installed together they would fall due in the same second forever: the first
        install (and the schedule written before this rule existed) gets them 1/n of the
        period apart, the first one period/n from now. A run advances from the time it
        was sent, so the phases hold to within beat's lateness; they only take turns
        (``jobruns.one_heavy_job_at_a_time``) should they ever meet again.
        """
        from foundation.core.jobruns import known_jobs  # Django set up by now

        heavy_tasks = {job.task for job in known_jobs().values() if job.heavy}
        names = sorted(name for name, job in self.app.conf.beat_schedule.items()
                       if job["task"] in heavy_tasks)
        entries = [self.Entry.from_key(self.Entry.generate_key(self.app, name), app=self.app)
                   for name in names]
        if len(entries) < 2:
            return
        periods = [entry.schedule.run_every for entry in entries]
        # Not ``entry.score`` (redbeat's candidate time, which is only exact for an entry
        # that has just run): the next run is one period after the last.
        due = sorted((entry.last_run_at + period).timestamp()
                     for entry, period in zip(entries, periods, strict=True))
        spacing = min(periods).total_seconds() / len(entries)
        if min(b - a for a, b in zip(due, due[1:], strict=False)) >= spacing / 2:
            return
        now = self.app.now()
        for number, (entry, period) in enumerate(zip(entries, periods, strict=True), 1):
            entry.reschedule(last_run_at=now - period + period * number / len(entries))
        logger.info("beat: %s spread over their period", ", ".join(names))

    def tick(self, *args: Any, **kwargs: Any) -> float:
        if self.lock_key and self.lock is None:
            self._wait_for_lock()
        try:
            if self._installed_under is not self.lock:
                self.install_schedule()
            return super().tick(*args, **kwargs)
        except LockError as exc:
            logger.warning("beat: lost the leader lock %s (%s); waiting to lead again",
                           self.lock_key, exc)
            self.lock = None
            return 0.0  # the next pass waits for the lock
        except REDIS_DOWN as exc:
            logger.warning("beat: Redis unreachable (%s); trying again in %.1fs",
                           exc, self.max_interval)
            return self.max_interval

    def _wait_for_lock(self) -> None:
        """Block until this beat holds the lock (redbeat's own acquisition, at beat_init,
        did not get it: Redis was down then, or the lock was lost since)."""
        while True:
            try:
                acquire_distributed_beat_lock(sender=SimpleNamespace(scheduler=self))
                return
            except REDIS_DOWN as exc:
                logger.warning("beat: Redis unreachable (%s); trying again in %.1fs",
                               exc, self.max_interval)
                time.sleep(self.max_interval)

    def maybe_due(self, entry: RedBeatSchedulerEntry, **kwargs: Any) -> float:
        is_due, next_time_to_run = entry.is_due()
        if not is_due:
            return next_time_to_run
        claimed = self._claim(entry)
        if claimed is None:
            logger.warning("beat: %s was already sent by another beat; not sending it again",
                           entry.name)
            return next_time_to_run
        logger.info("Scheduler: Sending due task %s (%s)", entry.name, entry.task)
        try:
            self.apply_async(claimed, advance=False, **kwargs)
        except Exception as exc:  # as redbeat: a failed send must not stop the other jobs
            logger.exception("Scheduler: Message Error: %s", exc)
        return next_time_to_run

    def _claim(self, entry: RedBeatSchedulerEntry) -> RedBeatSchedulerEntry | None:
        """The entry advanced to this run, stored in Redis, if its last run there is still
        the one this pass read; None if another beat sent it meanwhile."""
        following = super(RedBeatSchedulerEntry, entry)._next_instance()
        meta = json.dumps({"last_run_at": following.last_run_at,
                           "total_run_count": following.total_run_count},
                          cls=RedBeatJSONEncoder)
        with get_redis(self.app).pipeline() as pipe:
            for _ in range(CLAIM_ATTEMPTS):
                try:
                    pipe.watch(entry.key)
                    stored = entry.decode_meta(pipe.hget(entry.key, "meta"))
                    if stored.get("last_run_at") != entry.last_run_at:
                        pipe.reset()
                        return None
                    pipe.multi()
                    pipe.hset(entry.key, "meta", meta)
                    pipe.zadd(self.app.redbeat_conf.schedule_key,
                              {following.key: following.score})
                    pipe.execute()
                    return following
                except WatchError:
                    continue
        return None

    def close(self) -> None:
        try:
            super().close()
        except REDIS_DOWN as exc:  # the lock then expires by itself
            logger.warning("beat: lock not released, Redis unreachable (%s)", exc)
            self.lock = None
