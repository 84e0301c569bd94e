"""Run the real ``claude`` offline: ``-p`` in a project directory, against a model stand-in.

Environment as in /work/shared/claude-code/REAL-CLIENT.md: a private HOME, a dummy API
key, no telemetry, no non-essential traffic, no auto-updater, and ANTHROPIC_BASE_URL at
the stand-in. Tools are allowed by name (``--allowedTools``) because root may not use
``--dangerously-skip-permissions``.
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
DEFAULT_TOOLS = ("Read", "Write", "Edit", "Bash", "mcp__orchestrator")


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def result(self) -> dict[str, Any]:
        """The ``--output-format json`` result object (fails loudly on anything else)."""
        assert self.returncode == 0, (self.returncode, self.stdout[-2000:], self.stderr[-2000:])
        return json.loads(self.stdout)

    @property
    def session_id(self) -> str:
        return self.result["session_id"]


class ClaudeCode:
    def __init__(self, binary: Path, version: str, home: Path) -> None:
        self.binary, self.version, self.home = binary, version, home
        home.mkdir(parents=True, exist_ok=True)

    def env(self, model_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "ANTHROPIC_API_KEY": "sk-ant-test-offline",
            "ANTHROPIC_BASE_URL": model_url,
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            **(extra or {}),
        }

    def argv(self, prompt: str, tools: tuple[str, ...], resume: str | None,
             extra: tuple[str, ...] = ()) -> list[str]:
        argv = [str(self.binary), "-p", prompt, "--output-format", "json",
                "--allowedTools", ",".join(tools), *extra]
        if resume:
            argv += ["--resume", resume]
        return argv

    def start(self, project: Path, prompt: str, model_url: str, *,
              tools: tuple[str, ...] = DEFAULT_TOOLS, resume: str | None = None,
              env: dict[str, str] | None = None, extra: tuple[str, ...] = ()
              ) -> subprocess.Popen:
        """Claude Code as a background process (to kill it, or to run two at once).

        ``env`` adds to the environment; hooks inherit it (e.g. ORCHESTRATOR_FLUSH_SECONDS).
        ``extra``: more command-line options (e.g. ``--worktree NAME``).
        """
        return subprocess.Popen(self.argv(prompt, tools, resume, extra), cwd=project,
                                env=self.env(model_url, env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, project: Path, prompt: str, model_url: str, *,
            tools: tuple[str, ...] = DEFAULT_TOOLS, resume: str | None = None,
            env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT,
            extra: tuple[str, ...] = ()) -> RunResult:
        started = time.monotonic()
        process = self.start(project, prompt, model_url, tools=tools, resume=resume, env=env,
                             extra=extra)
        return finish(process, started, timeout)


def finish(process: subprocess.Popen, started: float, timeout: float = RUN_TIMEOUT,
           ) -> RunResult:
    """Wait for a started run; kill it (and fail) when it overruns ``timeout``."""
    try:
        stdout, stderr = process.communicate(timeout=max(1.0, timeout - (time.monotonic()
                                                                         - started)))
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise AssertionError(f"claude ran over {timeout}s:\n{stdout[-2000:]}\n{stderr[-2000:]}"
                             ) from None
    return RunResult(process.returncode, stdout, stderr, time.monotonic() - started)
