"""Calls to the service, in order, with a spool for when it cannot be reached."""

from __future__ import annotations

import contextlib
import time

from orchestrator_hook import lite
from orchestrator_hook.config import Config
from orchestrator_hook.state import ProjectState, locked, read_json
from orchestrator_hook.transport import Client, ServiceUnavailable, ToolRefused

# typing only for the annotations (never evaluated): importing it costs every hook.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# After a failed call, hooks of this project don't try the network for this long: a
# service that is down costs one failed connection per few seconds, not one per hook.
# Don't start a call with less time than this left in the hook's budget.
MIN_CALL_SECONDS = 0.05


class Service:
    def __init__(self, state: ProjectState, config: Config, deadline: float) -> None:
        self.state = state
        self.deadline = deadline
        self.client = Client(config.url, config.token, project=config.project_id,
                             ca_file=config.ca_file) \
            if config.usable else None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def call_now(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One call, no spool: raise ServiceUnavailable or ToolRefused."""
        if self.client is None:
            raise ServiceUnavailable("no url/token configured (manage.py claude_setup)")
        if self.state.service_down():
            raise ServiceUnavailable("the service failed a moment ago")
        if self.remaining() < MIN_CALL_SECONDS:
            raise ServiceUnavailable("the hook's time budget is spent")
        try:
            return self.client.call(tool, arguments, self.remaining())
        except ServiceUnavailable as exc:
            # A service that named its wait (429 over the token's rate limit: Retry-After)
            # is left alone that long: the calls meanwhile wait in the spool, in order, and
            # the first hook after it replays them. Never less than the outage pause.
            self.state.mark_down(max(lite.DOWN_SECONDS, exc.retry_after or 0))
            self.state.log(f"{tool}: service unavailable: {exc}"
                           + (f" (retry after {exc.retry_after:g} s)" if exc.retry_after
                              else ""))
            raise

    def send(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """Deliver behind whatever waits in the spool; None when the call was spooled.

        A refusal (ToolRefused) is raised: the caller may know a better call to make.
        """
        # Notices taken by a replayed call would reach no model: a spooled call leaves them.
        later = {k: v for k, v in arguments.items() if k != "notices"}
        if self.state.spooled():
            self.state.spool(tool, later)
            self.drain()
            return None
        try:
            return self.call_now(tool, arguments)
        except ServiceUnavailable:
            self.state.spool(tool, later)
            return None

    def send_quietly(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return self.send(tool, arguments)
        except ToolRefused as exc:
            self.state.log(f"{tool} refused: {exc}")
            return None

    def drain(self) -> bool:
        """Replay spooled calls in order while time lasts; True when the spool is empty.

        Only one hook of the project replays at a time; the others leave it to that one.
        """
        with locked(self.state.root / "spool.lock", blocking=False) as mine:
            if not mine:
                return False
            for path in self.state.spooled():
                item = read_json(path)
                if not isinstance(item, dict) or not isinstance(item.get("arguments"), dict):
                    with contextlib.suppress(OSError):
                        path.unlink()
                    continue
                try:
                    self.call_now(str(item.get("tool")), item["arguments"])
                except ServiceUnavailable:
                    return False
                except ToolRefused as exc:
                    self.state.reject_spooled(path, str(exc))
                    continue
                with contextlib.suppress(OSError):
                    path.unlink()
            return True
