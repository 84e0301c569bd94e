"""Notifications behind a small port (a new channel is one adapter) with a Slack
incoming-webhook adapter.

A notification never fails the operation that sent it: the answer reports
``notificationStatus`` sent | skipped | failed, and a failure is logged and counted.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Protocol

import httpx
from django.conf import settings

from orchestrator.observability import metrics

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


def notify(message: str) -> str:
    """Send and return the notificationStatus for the tool's answer."""
    return notifier().send(message).status
