"""Notifications behind a small port (a new channel is one adapter) with a Slack
incoming-webhook adapter.

A notification never fails nor slows the operation that sent it: ``notify`` hands the
message to the Celery worker (task ``sessions.send_notification``, sessions/tasks.py),
which posts it and retries a failed post SLACK_NOTIFY_RETRIES times, waiting
SLACK_NOTIFY_RETRY_SECONDS and twice as long each time after. The answer reports
``notificationStatus`` in the three words clients know: sent (handed to the worker, which
delivers it with retries), skipped (no webhook), or failed (the broker refused the
message); a failed post is logged and counted (backend_failures_total{backend="slack"}).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Protocol

import httpx
from django.conf import settings

from foundation.observability import metrics

logger = logging.getLogger("orchestrator.sessions")

TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class Delivery:
    status: str  # "sent" | "skipped" | "failed"
    error: str | None = None


class NotificationPort(Protocol):
    def send(self, message: str) -> Delivery: ...


class NoNotifications:
    """Used when no webhook is configured."""

    def send(self, message: str) -> Delivery:
        return Delivery("skipped")


class SlackWebhookNotifier:
    def __init__(self, webhook_url: str, timeout: float = TIMEOUT_SECONDS):
        self.webhook_url = webhook_url
        self.timeout = timeout

    def send(self, message: str) -> Delivery:
        # httpx's timeouts are per phase; split the budget so connect + the wait for the
        # answer stay within it, and _post_within bounds a server that trickles bytes.
        connect = min(0.5, self.timeout / 4)
        phases = httpx.Timeout(self.timeout - connect, connect=connect)
        try:
            with httpx.Client(timeout=phases) as client:
                response = _post_within(client, self.webhook_url, message, self.timeout)
        except Exception as exc:  # any transport fault is a failed delivery, nothing more
            return self._failed(f"{type(exc).__name__}: {exc}")
        if response.status_code >= 300:
            return self._failed(f"HTTP {response.status_code}")
        return Delivery("sent")

    def _failed(self, error: str) -> Delivery:
        metrics.backend_failures_total.labels("slack", "notify").inc()
        logger.warning("slack notification failed: %s", error)
        return Delivery("failed", error)


def _post_within(client: httpx.Client, url: str, message: str, budget: float) -> httpx.Response:
    """POST, aborting once ``budget`` seconds have passed in total."""
    deadline = time.monotonic() + budget
    with client.stream("POST", url, json={"text": message}) as response:
        for _ in response.iter_bytes():
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout("notification exceeded its total time budget")
        return response


def notifier() -> NotificationPort:
    url = settings.SLACK_WEBHOOK_URL
    return SlackWebhookNotifier(url) if url else NoNotifications()


SEND_TASK = "sessions.send_notification"


def notify(message: str) -> str:
    """Queue ``message`` for the worker; the notificationStatus for the tool's answer."""
    if not settings.SLACK_WEBHOOK_URL:
        return "skipped"
    from celery import current_app

    try:
        # No retry of the publish itself: with the broker down the call answers at once.
        current_app.send_task(SEND_TASK, args=[message], retry=False)
    except Exception as exc:  # any broker fault is a failed notification, nothing more
        metrics.backend_failures_total.labels("slack", "queue").inc()
        logger.warning("slack notification not queued: %s", exc)
        return "failed"
    return "sent"


class NotificationFailed(Exception):
    """A post the worker retries (sessions/tasks.py)."""


def deliver(message: str) -> None:
    """Post ``message`` now (the worker's half of ``notify``); NotificationFailed if not."""
    delivery = notifier().send(message)
    if delivery.status == "failed":
        raise NotificationFailed(delivery.error)
