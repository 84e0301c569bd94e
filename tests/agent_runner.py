"""Run the real agent CLIs (Claude Code, Codex CLI, Gemini CLI) offline in a project,
against a model stand-in on loopback (tests/model_standins.py).

Each gets a private HOME, a dummy API key, no telemetry or update checks, and its model
API at the stand-in: Claude Code through ``ANTHROPIC_BASE_URL``; Codex through a custom
``model_provider`` whose ``base_url`` is set per run with ``-c``; Gemini through
``GOOGLE_GEMINI_BASE_URL``. Claude Code's tools are allowed by name (``--allowedTools``)
because root may not use ``--dangerously-skip-permissions``. Codex's and Gemini's trust is
not bypassed: ``claude_setup --agent`` must have handled it, or no hook runs (both fail
silently).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_TIMEOUT = 120


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def check(self) -> RunResult:
        assert self.returncode == 0, (self.returncode, self.stdout[-2000:], self.stderr[-2000:])
        return self

    @property
    def result(self) -> dict[str, Any]:
        """Claude Code's ``--output-format json`` result object (fails loudly on anything
        else)."""
        return json.loads(self.check().stdout)

    @property
    def session_id(self) -> str:
        """Claude Code's session id."""
        return self.result["session_id"]


class Agent:
    kind = ""
    # Codex's and Gemini's runs lead a process group of their own: a crash test kills the
    # whole group (tests/agents/crash.py).
    own_session = True

    def __init__(self, binary: Path, version: str, home: Path) -> None:
        self.binary, self.version, self.home = binary, version, home
        home.mkdir(parents=True, exist_ok=True)

    def env(self, model_url: str) -> dict[str, str]:
        raise NotImplementedError

    def argv(self, prompt: str, model_url: str, **options: Any) -> list[str]:
        raise NotImplementedError

    def start(self, project: Path, prompt: str, model_url: str, *,
              env: dict[str, str] | None = None, **options: Any) -> subprocess.Popen:
        """The agent as a background process (to kill it, or to run two at once). ``env``
        adds to the environment; hooks inherit it (e.g. ORCHESTRATOR_FLUSH_SECONDS)."""
        return subprocess.Popen(self.argv(prompt, model_url, **options), cwd=project,
                                env={**self.env(model_url), **(env or {})},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                start_new_session=self.own_session)

    def run(self, project: Path, prompt: str, model_url: str, *,
            env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT,
            **options: Any) -> RunResult:
        started = time.monotonic()
        return finish(self.start(project, prompt, model_url, env=env, **options), started,
                      timeout)


class ClaudeCode(Agent):
    kind = "claude-code"
    own_session = False
    DEFAULT_TOOLS = ("Read", "Write", "Edit", "Bash", "mcp__orchestrator")

    def env(self, model_url: str) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "ANTHROPIC_API_KEY": "sk-ant-test-offline",
            "ANTHROPIC_BASE_URL": model_url,
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }

    def argv(self, prompt: str, model_url: str, *, tools: tuple[str, ...] = DEFAULT_TOOLS,
             resume: str | None = None, extra: tuple[str, ...] = ()) -> list[str]:
        """``extra``: more command-line options (e.g. ``--worktree NAME``)."""
        argv = [str(self.binary), "-p", prompt, "--output-format", "json",
                "--allowedTools", ",".join(tools), *extra]
        if resume:
            argv += ["--resume", resume]
        return argv


CODEX_CONFIG = """model = "gpt-5.5"
model_provider = "stand_in"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
model_auto_compact_token_limit = 20000
[model_providers.stand_in]
name = "scripted stand-in"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "STAND_IN_API_KEY"
request_max_retries = 0
stream_max_retries = 0
[analytics]
enabled = false
[feedback]
enabled = false
"""


class Codex(Agent):
    kind = "codex"

    def __init__(self, binary: Path, version: str, home: Path) -> None:
        super().__init__(binary, version, home)
        self.codex_home = home / ".codex"
        self.codex_home.mkdir(exist_ok=True)
        (self.codex_home / "config.toml").write_text(CODEX_CONFIG)

    def env(self, model_url: str) -> dict[str, str]:
        return {**npm_env(self), "CODEX_HOME": str(self.codex_home),
                "STAND_IN_API_KEY": "offline"}

    def argv(self, prompt: str, model_url: str) -> list[str]:
        return [str(self.binary), "exec", "--json", "-c",
                f'model_providers.stand_in.base_url="{model_url}/v1"', prompt]

    @staticmethod
    def thread_id(result: RunResult) -> str:
        for line in result.stdout.splitlines():
            if '"thread.started"' in line:
                return json.loads(line)["thread_id"]
        raise AssertionError(result.stdout[-2000:])


GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": True}},
    "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False}}


class Gemini(Agent):
    kind = "gemini"

    def __init__(self, binary: Path, version: str, home: Path) -> None:
        super().__init__(binary, version, home)
        (home / ".gemini").mkdir(exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))

    def env(self, model_url: str) -> dict[str, str]:
        return {**npm_env(self), "GEMINI_API_KEY": "offline",
                "GOOGLE_GEMINI_BASE_URL": model_url}

    def argv(self, prompt: str, model_url: str) -> list[str]:
        return [str(self.binary), "-p", prompt, "-m", "gemini-2.5-flash",
                "--approval-mode", "yolo", "-o", "json"]

    @staticmethod
    def session_id(result: RunResult) -> str:
        return json.loads(result.stdout[result.stdout.index("{"):])["session_id"]


def npm_env(agent: Agent) -> dict[str, str]:
    """An npm-installed CLI's environment: its node_modules/.bin first on PATH."""
    return {"PATH": f"{agent.binary.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(agent.home), "LANG": "C.UTF-8", "NO_COLOR": "1"}


def finish(process: subprocess.Popen, started: float, timeout: float = RUN_TIMEOUT,
           ) -> RunResult:
    """Wait for a started run; kill it (and fail) when it overruns ``timeout``."""
    try:
        stdout, stderr = process.communicate(timeout=max(1.0, timeout - (time.monotonic()
                                                                         - started)))
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        name = Path(str(process.args[0])).name if isinstance(process.args, list) else "agent"
        raise AssertionError(f"{name} ran over {timeout}s:\n{stdout[-2000:]}\n"
                             f"{stderr[-2000:]}") from None
    return RunResult(process.returncode, stdout, stderr, time.monotonic() - started)
