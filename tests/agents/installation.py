"""Install the pinned Codex CLI and Gemini CLI (package.json / package-lock.json here).

``npm ci`` puts both in tests/agents/node_modules (gitignored; Codex's native binary
comes inside its npm package); a later run finds the pinned versions there and does not
reinstall. A failed install fails the tests that need it: nothing here skips.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
PACKAGES = {"codex": "@openai/codex", "gemini": "@google/gemini-cli"}
NPM_TIMEOUT = 900


class InstallError(RuntimeError):
    pass


def pinned(name: str) -> str:
    return json.loads((HERE / "package.json").read_text())["dependencies"][PACKAGES[name]]


def installed(name: str) -> str | None:
    """The version the installed binary reports ("codex-cli 0.171.0" / "0.61.0"), or None."""
    binary = BIN / name
    if not binary.exists():
        return None
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=60, env={"PATH": "/usr/bin:/bin:/usr/local/bin",
                                               "HOME": str(HERE / "node_modules")})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip().split()[-1] if done.returncode == 0 and done.stdout.strip() \
        else None


def ensure(name: str) -> tuple[Path, str]:
    """The pinned binary ``name`` (codex, gemini) and its version, installing if needed."""
    if installed(name) != pinned(name):
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError("npm is not on PATH: it is needed to install the agents")
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE,
                              capture_output=True, text=True, timeout=NPM_TIMEOUT)
        if done.returncode != 0:
            raise InstallError(f"npm ci failed ({done.returncode}):\n{done.stderr[-3000:]}")
    version = installed(name)
    if version != pinned(name):
        raise InstallError(f"{BIN / name} --version gave {version!r}, expected {pinned(name)}")
    return BIN / name, version
