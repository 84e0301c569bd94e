"""Installs the pinned TypeScript MCP clients for the client tests: the SDK 1.x
(@modelcontextprotocol/sdk, tests/clients/js) and the client v2 (@modelcontextprotocol/client,
tests/clients/js-v2); and the conformance suite (tests/clients/mcp-conformance).

``npm ci`` installs exactly a folder's package-lock.json into its gitignored node_modules; it
runs once, and again only when the lock file is newer than the last install. No npm or node
is a failure, not a skip: CI has both.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _installed(directory: Path) -> bool:
    marker = directory / "node_modules" / ".package-lock.json"
    lock = directory / "package-lock.json"
    return marker.exists() and marker.stat().st_mtime >= lock.stat().st_mtime


def install(directory: Path) -> Path:
    """``npm ci`` in ``directory`` unless its lock file is installed already."""
    npm, node = shutil.which("npm"), shutil.which("node")
    assert npm and node, "node and npm are needed for the TypeScript client tests"
    if not _installed(directory):
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=directory, check=True, timeout=600)
    return directory


@pytest.fixture(scope="session")
def node_client_dir() -> Path:
    """tests/clients/js: @modelcontextprotocol/sdk 1.x."""
    return install(HERE / "js")


@pytest.fixture(scope="session")
def node_client_v2_dir() -> Path:
    """tests/clients/js-v2: @modelcontextprotocol/client 2.x."""
    return install(HERE / "js-v2")
