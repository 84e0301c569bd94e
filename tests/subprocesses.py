"""What a server or worker process started by a test needs to share the test's backends."""

from __future__ import annotations

from django.conf import settings


def database_url() -> str:
    """The URL of the database this test run uses (pytest-django's test database)."""
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    port = f":{db['PORT']}" if db["PORT"] else ""
    host = db["HOST"]
    if host.startswith("/"):  # a unix socket (embedded Postgres of make test)
        return f"postgresql://{auth}@localhost{port}/{db['NAME']}?host={host}"
    return f"postgresql://{auth}@{host}{port}/{db['NAME']}"
