"""Bearer tokens: which principal an ``Authorization`` header authenticates (REST tool
lane, MCP, DRF browsing), with a short cache of valid tokens."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from django.db import InterfaceError, OperationalError
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from foundation.core.errors import OrchestratorError
from foundation.core.models import ApiToken, TokenScope, hash_token


@dataclass(frozen=True)
class TokenPrincipal:
    """What a valid token authenticates as; DRF treats it as the request user."""

    name: str
    scope: str = "write"
    # The projects the token may reach; None: every project.
    projects: frozenset[str] | None = None
    is_authenticated: bool = True
    is_staff: bool = False
    # The token's row id: what its rate limit budget is kept under (orchestrator.web.ratelimit).
    token_id: int | None = None

    def __str__(self) -> str:
        return f"token:{self.name}"


# Valid tokens seen recently, by hash: saves a query on every request. Kept short so a
# token revoked in another process stops working within TOKEN_CACHE_SECONDS; a revocation
# in this process (admin, command) clears the entry at once.
TOKEN_CACHE_SECONDS = 10.0
# While Postgres is unreachable a token this process found valid within this long still
# authenticates (it cannot be checked, and its revocation could not be read either): the
# saves of an agent at work are then held (contexts/services/pending.py) instead of
# refused at the door.
TOKEN_OUTAGE_SECONDS = 3600.0
_token_cache: dict[str, tuple[float, TokenPrincipal]] = {}
_token_cache_lock = threading.Lock()


def forget_token(token_hash: str) -> None:
    with _token_cache_lock:
        _token_cache.pop(token_hash, None)


@receiver([post_save, post_delete], sender=ApiToken, dispatch_uid="orchestrator.forget_token")
def _forget_changed_token(sender: type[ApiToken], instance: ApiToken, **kwargs) -> None:
    # A revocation or a scope change applies at once in this process (other processes
    # within TOKEN_CACHE_SECONDS).
    forget_token(instance.token_hash)


def metrics_only(principal: TokenPrincipal) -> OrchestratorError | None:
    """E1608 for a metrics token anywhere but /metrics (tools, MCP, browsing): a scraper's
    token, kept in a file beside Prometheus, must not read or change anyone's data."""
    if principal.scope != TokenScope.METRICS:
        return None
    return OrchestratorError("E1608", "A metrics token reads /metrics only",
                             {"scope": principal.scope})


def authenticate_header(value: str | None) -> TokenPrincipal | None:
    """Return the principal for an ``Authorization`` header value, or None if invalid."""
    if not value:
        return None
    scheme, _, raw = value.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        return None
    token_hash = hash_token(raw.strip())
    cached = _token_cache.get(token_hash)
    if cached and time.monotonic() - cached[0] < TOKEN_CACHE_SECONDS:
        return cached[1]
    try:
        token = ApiToken.objects.filter(token_hash=token_hash, revoked=False).first()
    except (OperationalError, InterfaceError):
        if cached and time.monotonic() - cached[0] < TOKEN_OUTAGE_SECONDS:
            return cached[1]
        raise
    if token is None:
        forget_token(token_hash)
        return None
    now = timezone.now()
    # Touch last_used_at at most once a minute: a write per request would cost more than it tells.
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    principal = TokenPrincipal(name=token.name, scope=token.scope,
                               projects=frozenset(token.projects) if token.projects else None,
                               token_id=token.pk)
    with _token_cache_lock:
        _token_cache[token_hash] = (time.monotonic(), principal)
    return principal
