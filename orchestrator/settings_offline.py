"""Settings for checks that read the code, never a server: ``make lint``'s
``makemigrations --check``.

The database is a Unix socket directory that does not exist, so no check here can reach a
server, wait on one, or depend on one being up: makemigrations's check of the migration
history against a live database fails at once (a RuntimeWarning ``make lint`` silences)
and the check compares the models with the migration files alone. (Django's dummy backend
would skip that check by itself, but the apps import ``connection.ops`` at load time.)
"""

from orchestrator.settings import *  # noqa: F403
from orchestrator.settings import DATABASES

DATABASES = {"default": {**DATABASES["default"], "HOST": "/nonexistent/orchestrator-offline",
                         "OPTIONS": {**DATABASES["default"].get("OPTIONS", {}),
                                     "connect_timeout": 1}}}
