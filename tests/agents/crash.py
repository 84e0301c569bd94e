"""Kill an agent with SIGKILL mid-tool and see the crash known and the resume prompt."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from sessions.models import ActiveSession
from tests.agents.setup_helpers import mapped_sessions
from tests.waiting import wait_for


def build_command(marker: str) -> str:
    """A two-minute build whose command line holds ``marker`` (tests.claude_code's
    ``build_marker``: one test's own, so no test mistakes another's build for its own)."""
    return f"python3 -c 'import time; time.sleep(120)' {marker}"


def processes_running(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if marker.encode() in handle.read() and int(pid) != os.getpid():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def kill_agent_mid_build(project: Path, process, marker: str) -> tuple[str, float]:
    """Wait for the build ``marker`` names, SIGKILL the agent process the hooks recorded (Codex's native
    binary, Gemini CLI's inner node), and return (its session, when it was killed)."""
    try:
        assert wait_for(lambda: processes_running(marker), timeout=60), (
            process.poll(), process.stderr.read() if process.poll() is not None else "")
        (entry,) = mapped_sessions(project).values()
        pid = entry["agentPid"]
        with open(f"/proc/{pid}/comm") as handle:
            comm = handle.read().strip()
        assert comm in ("codex", "node"), comm
        os.kill(pid, signal.SIGKILL)  # no end hook, no goodbye
        killed = time.monotonic()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        for pid in processes_running(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return entry["sessionId"], killed


def crashed_within(session_id: str, killed: float, seconds: float = 30) -> bool:
    def status() -> str:
        return ActiveSession.objects.get(session_id=session_id).status

    return wait_for(lambda: status() == "crashed", timeout=seconds, interval=0.5) and \
        time.monotonic() - killed < seconds
