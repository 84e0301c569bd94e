"""The connection health check (foundation/backends/postgres/base.py) on a connection
whose file descriptor is 1024 or more, as in a busy worker: the check must say healthy
without a round trip, and a request must keep its connection, not reconnect."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.processes import ROOT, database_url

# Runs in its own process: it raises its file limit and holds 1,100 descriptors.
SCRIPT = """
import json, os, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
import django
django.setup()
from django.db import close_old_connections, connection

def backend_pid():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]

first = backend_pid()
fd = connection.connection.fileno()
usable = connection.is_usable()
close_old_connections()  # what Django does at the start and end of every request
second = backend_pid()
print(json.dumps({"fd": fd, "usable": usable, "same_connection": first == second}))
"""


@pytest.mark.django_db
def test_health_check_of_a_connection_above_fd_1024_keeps_the_connection():
    env = {**os.environ, "DATABASE_URL": database_url(), "ENABLE_NEO4J": "false",
           "DJANGO_SETTINGS_MODULE": "orchestrator.settings"}
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["fd"] >= 1024, seen
    assert seen == {"fd": seen["fd"], "usable": True, "same_connection": True}
