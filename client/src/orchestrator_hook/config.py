"""Where the hook finds the service: ``.claude/orchestrator/config.json``, env on top."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

from orchestrator_hook.lite import (
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_CLAIM_REUSE_SECONDS,
    DEFAULT_EDIT_CHECK_SECONDS,
    DEFAULT_FLUSH_SECONDS,
    config_fields,
)

__all__ = ["DEFAULT_BUDGET_TOKENS", "DEFAULT_CLAIM_REUSE_SECONDS", "DEFAULT_FLUSH_SECONDS",
           "MAX_CONTEXT_CHARS", "Config", "load_config"]

# Claude Code inlines hook output up to 10,000 characters; past that the model gets a
# 2 KB preview and a file path (PROTOCOL.md 4.4). Stay clearly under.
MAX_CONTEXT_CHARS = 9500


class Config(namedtuple("Config", ["url", "token", "task_id", "budget_tokens",
                                   "flush_seconds", "claim_reuse_seconds", "agent_id",
                                   "project_id", "all_tools", "ca_file", "edit_check_seconds"],
                        defaults=[None, DEFAULT_BUDGET_TOKENS, DEFAULT_FLUSH_SECONDS,
                                  DEFAULT_CLAIM_REUSE_SECONDS, "claude-code", None, False,
                                  None, DEFAULT_EDIT_CHECK_SECONDS])):
    """url: str, token: str, task_id: str | None, budget_tokens: int, flush_seconds: float,
    claim_reuse_seconds: float (lite.DEFAULT_CLAIM_REUSE_SECONDS; 0: check every edit),
    agent_id: str, project_id: str | None (the repository's project, sent with every call;
    None: a setup older than projects, whose calls go to the server's default), all_tools:
    bool (the model was offered every tool, not the agent's /mcp/agent names), ca_file:
    str | None (a private CA's certificates; None: the system's store),
    edit_check_seconds: float (how long the check before an edit waits). A named
    tuple, not a frozen dataclass: ``dataclasses`` imports
    ``inspect``, which costs every hook more than its work."""

    __slots__ = ()

    @property
    def usable(self) -> bool:
        return bool(self.url and self.token)


def load_config(project_dir: Path) -> Config:
    # The fields are read in ``lite``: the PostToolUse fast path reads them without this
    # module's imports.
    return Config(**config_fields(project_dir))
