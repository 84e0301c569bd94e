"""`manage.py migrate`, one at a time per database.

Every stack applies migrations as it starts (``make run``'s supervisor, the compose web
service). Two stacks starting together against a new database would both apply the
same migration and the second would stop ("relation ... already exists"). Django's
command, run under a session-level Postgres advisory lock: the others wait, then find
nothing left to apply.
"""

from __future__ import annotations

import contextlib

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DatabaseError, connections

LOCK_KEY = 0x6D6967726174  # "migrat"


class Command(DjangoMigrate):
    def handle(self, *args, **options):
        connection = connections[options["database"]]
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        try:
            return super().handle(*args, **options)
        finally:
            # A connection closed meanwhile has released the lock with itself.
            with contextlib.suppress(DatabaseError), connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
