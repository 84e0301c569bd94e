"""Host and Origin checks for every request the ASGI router serves (REST tool lane, MCP,
and the Django pages behind it), before anything else runs.

Why here: ``/mcp``, ``/mcp/agent`` and ``POST /api/v1/tools/<name>/`` are answered by the
router without Django's request stack, so Django's ``ALLOWED_HOSTS`` check never ran for
them, and nothing looked at ``Origin`` (the MCP transport specification: servers MUST
validate it, against DNS rebinding). One check in front of every path keeps the rules the
same everywhere:

- ``Host`` must match ``ALLOWED_HOSTS`` with Django's own semantics (``validate_host``:
  ``.example.com`` covers subdomains, ``*`` anything, the port is ignored; with
  ``USE_X_FORWARDED_HOST`` the ``X-Forwarded-Host`` header is the host, as for Django).
  Else 400 ``E1670``.
- A request carrying ``Origin`` (browsers send it; agents, hooks, curl and SDK clients
  do not) must come from this server's own origin, from a host ``ALLOWED_HOSTS`` names
  explicitly (``*`` does not count: it would let every site in), or from
  ``CSRF_TRUSTED_ORIGINS`` (Django's format, ``https://*.example.com`` included). Else
  403 ``E1671``. ``Origin: null`` (sandboxed frames, ``file:`` pages) is foreign.

It runs on every hook call, so the verdicts are remembered per header value (bounded: a
client sending random values cannot grow them) and the settings are read once, again
only when a test changes them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

from foundation.core.errors import error_body

# How many distinct Host / Origin values keep their verdict; past that, each is checked
# anew (a few microseconds) instead of growing the table.
VERDICTS_KEPT = 512
# How much of a refused header the answer repeats.
SHOWN = 200

Answer = tuple[int, dict[str, Any], dict[str, str]]


class HostPolicy:
    """The Host and Origin rules, computed once from the settings."""

    def __init__(self, allowed_hosts: list[str], trusted_origins: list[str], debug: bool,
                 forwarded_host: bool) -> None:
        hosts = list(allowed_hosts)
        if debug and not hosts:  # Django's own default in DEBUG
            hosts = [".localhost", "127.0.0.1", "[::1]"]
        self.hosts = hosts
        self.origin_hosts = [h for h in hosts if h != "*"]
        self.host_header = b"x-forwarded-host" if forwarded_host else b"host"
        self.trusted_exact = {o for o in trusted_origins if "*" not in o}
        self.trusted_subdomains: dict[str, list[str]] = defaultdict(list)
        for parsed in (urlsplit(o) for o in trusted_origins if "*" in o):
            self.trusted_subdomains[parsed.scheme].append(parsed.netloc.lstrip("*"))
        self._host_verdicts: dict[bytes, bool] = {}
        self._origin_verdicts: dict[tuple[bytes, bytes], bool] = {}

    def host_allowed(self, host: bytes) -> bool:
        verdict = self._host_verdicts.get(host)
        if verdict is None:
            domain, _ = split_domain_port(host.decode("latin-1"))
            verdict = bool(domain) and validate_host(domain, self.hosts)
            if len(self._host_verdicts) < VERDICTS_KEPT:
                self._host_verdicts[host] = verdict
        return verdict

    def origin_allowed(self, origin: bytes, host: bytes) -> bool:
        key = (origin, host)
        verdict = self._origin_verdicts.get(key)
        if verdict is None:
            verdict = self._judge_origin(origin.decode("latin-1"), host.decode("latin-1"))
            if len(self._origin_verdicts) < VERDICTS_KEPT:
                self._origin_verdicts[key] = verdict
        return verdict

    def _judge_origin(self, origin: str, host: str) -> bool:
        if origin in self.trusted_exact:
            return True
        try:
            parsed = urlsplit(origin)
        except ValueError:
            return False
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            return False  # "null", or not an origin at all
        if parsed.netloc.lower() == host.lower():
            return True  # the page was served by this server under the name it was asked by
        domain, _ = split_domain_port(parsed.netloc)
        if domain and validate_host(domain, self.origin_hosts):
            return True
        return any(is_same_domain(parsed.netloc, pattern)
                   for pattern in self.trusted_subdomains.get(parsed.scheme, ()))

    def refusal(self, scope: dict[str, Any]) -> Answer | None:
        """None when the request may go on, else the answer refusing it."""
        host = origin = None
        for name, value in scope.get("headers") or ():
            if name == self.host_header:
                host = value
            elif name == b"origin":
                origin = value
        if host is None:
            # HTTP/1.0 without Host: the address the client connected to, as Django does.
            server = scope.get("server") or ("", None)
            host = (f"{server[0]}:{server[1]}" if server[1] else str(server[0])).encode()
        if not self.host_allowed(host):
            shown = host.decode("latin-1")[:SHOWN]
            return 400, error_body("E1670", f"Host {shown!r} is not served here (ALLOWED_HOSTS)",
                                   {"host": shown}), {}
        if origin is not None and not self.origin_allowed(origin, host):
            shown = origin.decode("latin-1")[:SHOWN]
            return 403, error_body("E1671", f"Requests from origin {shown!r} are refused "
                                   "(not this server's origin, ALLOWED_HOSTS or "
                                   "CSRF_TRUSTED_ORIGINS)", {"origin": shown}), {}
        return None


_policy: HostPolicy | None = None


def policy() -> HostPolicy:
    global _policy
    if _policy is None:
        _policy = HostPolicy(settings.ALLOWED_HOSTS, settings.CSRF_TRUSTED_ORIGINS,
                             settings.DEBUG, settings.USE_X_FORWARDED_HOST)
    return _policy


@receiver(setting_changed, dispatch_uid="orchestrator.web.hosts")
def _settings_changed(setting: str, **kwargs) -> None:
    global _policy
    if setting in ("ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "DEBUG", "USE_X_FORWARDED_HOST"):
        _policy = None


def refusal(scope: dict[str, Any]) -> Answer | None:
    """``HostPolicy.refusal`` under the current settings."""
    return policy().refusal(scope)
