"""Fixtures of the Codex CLI / Gemini CLI suite: the pinned binaries, a private home each,
and (from the Claude Code suite) the service in its own process and a project."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent_runner import Codex, Gemini
from tests.agents.installation import ensure
from tests.claude_code.conftest import (  # noqa: F401 (fixtures)
    api_token_live,
    claude,
    claude_code_install,
    orchestrator,
    orchestrator_process,
    project,
)


@pytest.fixture(scope="session")
def codex_install() -> tuple[Path, str]:
    return ensure("codex")


@pytest.fixture(scope="session")
def gemini_install() -> tuple[Path, str]:
    return ensure("gemini")


@pytest.fixture
def codex(codex_install, tmp_path) -> Codex:
    return Codex(*codex_install, home=tmp_path / "codex-home")


@pytest.fixture
def gemini(gemini_install, tmp_path) -> Gemini:
    return Gemini(*gemini_install, home=tmp_path / "gemini-home")
