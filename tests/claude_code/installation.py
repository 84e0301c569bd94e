"""Install the pinned Claude Code (package.json / package-lock.json beside this file).

``npm ci`` puts it in tests/claude_code/node_modules (gitignored, ~400 MB with the native
binary); a later run finds the pinned version there and does not reinstall. A failed
install fails the tests that need it: nothing here skips.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
BINARY = HERE / "node_modules" / ".bin" / "claude"
NPM_TIMEOUT = 900


class InstallError(RuntimeError):
    pass


def pinned_version() -> str:
    return json.loads((HERE / "package.json").read_text())["dependencies"][
        "@anthropic-ai/claude-code"]


def installed_version() -> str | None:
    """``claude --version`` of the installed binary ("2.1.330 (Claude Code)"), or None."""
    if not BINARY.exists():
        return None
    try:
        done = subprocess.run([str(BINARY), "--version"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_claude_code() -> tuple[Path, str]:
    """The path of the pinned ``claude`` and its ``--version`` line, installing if needed."""
    pinned = pinned_version()
    version = installed_version()
    if version is None or version.split()[0] != pinned:
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError("npm is not on PATH: it is needed to install Claude Code")
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE,
                              capture_output=True, text=True, timeout=NPM_TIMEOUT)
        if done.returncode != 0:
            raise InstallError(f"npm ci failed ({done.returncode}):\n{done.stderr[-3000:]}")
        version = installed_version()
    if version is None or version.split()[0] != pinned:
        raise InstallError(f"{BINARY} --version gave {version!r}, expected {pinned}")
    return BINARY, version
