"""Installs the pinned TypeScript MCP SDK (tests/clients/js) for the client tests.

``npm ci`` installs exactly package-lock.json into the gitignored node_modules; it runs
once, and again only when the lock file is newer than the last install. No npm or node
is a failure, not a skip: CI has both.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JS_DIR = Path(__file__).with_name("js")


def _installed() -> bool:
    marker = JS_DIR / "node_modules" / ".package-lock.json"
    lock = JS_DIR / "package-lock.json"
    return marker.exists() and marker.stat().st_mtime >= lock.stat().st_mtime


@pytest.fixture(scope="session")
def node_client_dir() -> Path:
    npm, node = shutil.which("npm"), shutil.which("node")
    assert npm and node, "node and npm are needed for the TypeScript SDK client tests"
    if not _installed():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=JS_DIR,
                       check=True, timeout=600)
    return JS_DIR
