"""Where the hook finds the service: ``.claude/orchestrator/config.json``, env on top."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator_hook.state import STATE_DIR, read_json

# Seed 001: a context bundle of 2,000 tokens by default.
DEFAULT_BUDGET_TOKENS = 2000
# Claude Code inlines hook output up to 10,000 characters; past that the model gets a
# 2 KB preview and a file path (PROTOCOL.md 4.4). Stay clearly under.
MAX_CONTEXT_CHARS = 9500
# A burst of tool calls costs one round trip per this many seconds.
DEFAULT_FLUSH_SECONDS = 5.0


@dataclass(frozen=True)
class Config:
    url: str
    token: str
    task_id: str | None = None
    budget_tokens: int = DEFAULT_BUDGET_TOKENS
    flush_seconds: float = DEFAULT_FLUSH_SECONDS
    agent_id: str = "claude-code"

    @property
    def usable(self) -> bool:
        return bool(self.url and self.token)


def load_config(project_dir: Path) -> Config:
    data = read_json(project_dir / STATE_DIR / "config.json", {})
    if not isinstance(data, dict):
        data = {}
    env = os.environ

    def number(key: str, env_key: str, default: float) -> float:
        try:
            return float(env.get(env_key) or data.get(key) or default)
        except (TypeError, ValueError):
            return default

    return Config(
        url=env.get("ORCHESTRATOR_URL") or str(data.get("url") or ""),
        token=env.get("ORCHESTRATOR_TOKEN") or str(data.get("token") or ""),
        task_id=env.get("ORCHESTRATOR_TASK_ID") or data.get("taskId") or None,
        budget_tokens=int(number("budgetTokens", "ORCHESTRATOR_BUDGET_TOKENS",
                                 DEFAULT_BUDGET_TOKENS)),
        flush_seconds=number("flushSeconds", "ORCHESTRATOR_FLUSH_SECONDS",
                             DEFAULT_FLUSH_SECONDS),
        agent_id=str(data.get("agentId") or "claude-code"),
    )
