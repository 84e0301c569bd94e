"""`manage.py migrate` by two stacks starting together against a new database: one applies,
the other waits for it (orchestrator/ops/management/commands/migrate.py) and succeeds."""

from __future__ import annotations

import subprocess
import sys
import time

import psycopg
import pytest

from tests import processes

pytestmark = pytest.mark.slow


@pytest.fixture
def new_database():
    name = f"migrate_{time.monotonic_ns()}"
    admin = processes.database_url("postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield processes.database_url(name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_two_migrates_at_once_both_succeed(new_database, tmp_path):
    env = processes.service_env(tmp_path, DATABASE_URL=new_database)
    runs = [subprocess.Popen([sys.executable, "manage.py", "migrate", "--noinput"],
                             cwd=processes.ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], "\n".join(o[-2000:] for o in outputs)
    # One of them applied everything; the other, let in after it, had nothing left.
    assert sum("No migrations to apply" in output for output in outputs) == 1, outputs
