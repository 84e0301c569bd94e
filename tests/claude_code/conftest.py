"""Fixtures of the real Claude Code suite: the pinned binary, a project, the service process."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent_runner import ClaudeCode
from tests.claude_code.installation import ensure_claude_code
from tests.claude_code.orchestrator_server import OrchestratorServer
from tests.conftest import free_port


@pytest.fixture(scope="session")
def claude_code_install() -> tuple[Path, str]:
    """The pinned ``claude`` binary and its ``--version`` line (npm ci on first use)."""
    return ensure_claude_code()


@pytest.fixture
def claude(claude_code_install, tmp_path) -> ClaudeCode:
    binary, version = claude_code_install
    return ClaudeCode(binary, version, home=tmp_path / "home")


GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def make_project(path: Path, remote: str | None = None) -> Path:
    """A git repository on branch main with one committed file, as a user's project is;
    ``remote``: its origin's URL (what claude_setup derives the project from)."""
    path.mkdir(parents=True)
    (path / "app.py").write_text("def greet():\n    return 'hello'\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run([*GIT, *argv], cwd=path, check=True, capture_output=True)
    if remote:
        subprocess.run([*GIT, "remote", "add", "origin", remote], cwd=path, check=True,
                       capture_output=True)
    return path


def clone_project(source: Path, path: Path) -> Path:
    """A second clone of ``source`` (same root commit, same remote): the same project."""
    remote = subprocess.run([*GIT, "remote", "get-url", "origin"], cwd=source, text=True,
                            capture_output=True).stdout.strip()
    subprocess.run([*GIT, "clone", "-q", str(source), str(path)], check=True,
                   capture_output=True)
    if remote:
        subprocess.run([*GIT, "remote", "set-url", "origin", remote], cwd=path, check=True,
                       capture_output=True)
    else:
        subprocess.run([*GIT, "remote", "remove", "origin"], cwd=path, check=True,
                       capture_output=True)
    return path


@pytest.fixture
def project(tmp_path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture(scope="module")
def orchestrator_process(django_db_setup, django_db_blocker, tmp_path_factory,
                         ) -> Iterator[OrchestratorServer]:
    """One web server process per module (starting one costs seconds on a busy machine)."""
    # A heartbeat interval of one second (what start_session tells the watchdog): the
    # tests set the crash threshold to a few seconds instead of five minutes.
    server = OrchestratorServer(free_port(), tmp_path_factory.mktemp("service"),
                                extra_env={"HEARTBEAT_INTERVAL_MS": "1000"})
    with django_db_blocker.unblock():
        server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def orchestrator(orchestrator_process, transactional_db, tmp_path,
                 ) -> Iterator[OrchestratorServer]:
    """The web server in its own process on the test database (committed data only),
    running when the test starts (a test may stop it; the next one gets it back)."""
    server = orchestrator_process
    if not server.answers():
        server.start()
    log_start = len(server.log())
    yield server
    # Shown by pytest only when the test failed: what the service and the hooks said.
    print(f"--- web server log ---\n{server.log()[log_start:][-4000:]}")
    for log in sorted(tmp_path.rglob(".claude/orchestrator/hook.log")):
        print(f"--- {log} ---\n{log.read_text(errors='replace')[-4000:]}")


@pytest.fixture
def api_token_live(transactional_db) -> str:
    from foundation.core.models import ApiToken

    _, raw = ApiToken.issue(f"claude-code-{time.monotonic_ns()}")
    return raw
