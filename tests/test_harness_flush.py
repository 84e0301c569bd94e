"""The suite's own harness: a transactional test's flush that loses a deadlock to a
process still writing (a web server's background writer) is run again
(tests/conftest.py, flush_retried_after_a_deadlock)."""

from __future__ import annotations

import re
import threading
from io import StringIO

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from tests.waiting import lock_wait


@pytest.mark.django_db(transaction=True)
def test_a_flush_that_loses_a_deadlock_is_run_again():
    sql = StringIO()
    call_command("sqlflush", stdout=sql)
    [truncate] = [line for line in sql.getvalue().splitlines() if line.startswith("TRUNCATE")]
    tables = re.findall(r'"[^"]+"', truncate)
    first, last = tables[0], tables[-1]
    with psycopg.connect(**connection.get_connection_params()) as writer:
        # A writer mid-transaction: it has read the flush's last table, and will read its
        # first once the flush holds it (each then waits for the other).
        writer.execute(f"SELECT 1 FROM {last} LIMIT 1")

        def read_the_first_table() -> None:
            assert lock_wait(writer.info.backend_pid)  # the flush waits for the writer
            writer.execute(f"SELECT 1 FROM {first} LIMIT 1")  # and now the writer for it
            writer.commit()

        reader = threading.Thread(target=read_the_first_table)
        reader.start()
        call_command("flush", interactive=False, verbosity=0)
        reader.join(10)
    assert not reader.is_alive()
