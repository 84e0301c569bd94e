"""Run the real Codex CLI and Gemini CLI offline in a project, against a model stand-in.

Private HOME (and CODEX_HOME), a dummy API key, no telemetry or update checks, the model
API at the stand-in on loopback (Codex: a custom ``model_provider`` whose ``base_url`` is
set per run with ``-c``; Gemini: ``GOOGLE_GEMINI_BASE_URL``). Trust is not bypassed:
``claude_setup --agent`` must have handled it, or no hook runs (both fail silently).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

RUN_TIMEOUT = 120

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

GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": True}},
    "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False}}


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def check(self) -> RunResult:
        assert self.returncode == 0, (self.returncode, self.stdout[-2000:], self.stderr[-2000:])
        return self


class Agent:
    kind = ""

    def __init__(self, binary: Path, version: str, home: Path) -> None:
        self.binary, self.version, self.home = binary, version, home
        home.mkdir(parents=True, exist_ok=True)

    def base_env(self) -> dict[str, str]:
        return {"PATH": f"{self.binary.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                "HOME": str(self.home), "LANG": "C.UTF-8", "NO_COLOR": "1"}

    def argv(self, prompt: str, model_url: str) -> list[str]:
        raise NotImplementedError

    def env(self, model_url: str) -> dict[str, str]:
        raise NotImplementedError

    def start(self, project: Path, prompt: str, model_url: str,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        return subprocess.Popen(self.argv(prompt, model_url), cwd=project,
                                env={**self.env(model_url), **(env or {})},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    def run(self, project: Path, prompt: str, model_url: str,
            env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT) -> RunResult:
        started = time.monotonic()
        return finish(self.start(project, prompt, model_url, env), started, timeout)


class Codex(Agent):
    kind = "codex"

    def __init__(self, binary: Path, version: str, home: Path) -> None:
        super().__init__(binary, version, home)
        self.codex_home = home / ".codex"
        self.codex_home.mkdir(exist_ok=True)
        (self.codex_home / "config.toml").write_text(CODEX_CONFIG)

    def env(self, model_url: str) -> dict[str, str]:
        return {**self.base_env(), "CODEX_HOME": str(self.codex_home),
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


class Gemini(Agent):
    kind = "gemini"

    def __init__(self, binary: Path, version: str, home: Path) -> None:
        super().__init__(binary, version, home)
        (home / ".gemini").mkdir(exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))

    def env(self, model_url: str) -> dict[str, str]:
        return {**self.base_env(), "GEMINI_API_KEY": "offline",
                "GOOGLE_GEMINI_BASE_URL": model_url}

    def argv(self, prompt: str, model_url: str) -> list[str]:
        return [str(self.binary), "-p", prompt, "-m", "gemini-2.5-flash",
                "--approval-mode", "yolo", "-o", "json"]

    @staticmethod
    def session_id(result: RunResult) -> str:
        return json.loads(result.stdout[result.stdout.index("{"):])["session_id"]


def finish(process: subprocess.Popen, started: float, timeout: float = RUN_TIMEOUT,
           ) -> RunResult:
    try:
        stdout, stderr = process.communicate(timeout=max(1.0, timeout - (time.monotonic()
                                                                         - started)))
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise AssertionError(f"agent ran over {timeout}s:\n{stdout[-2000:]}\n{stderr[-2000:]}"
                             ) from None
    return RunResult(process.returncode, stdout, stderr, time.monotonic() - started)
