# The production image: web (uvicorn), Celery worker and beat all run from it
# (docker-compose.yml). Postgres, Redis and ArcadeDB are separate services there.
# Debian 13 (trixie) named, not implied by the tag: its postgresql-client-17 gives pg_dump
# and pg_restore of the compose Postgres's major (postgres:17), which backups need.
FROM python:3.11-slim-trixie

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client-17 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, in their own layer: a code change does not reinstall them. Exactly
# the lock's versions, checked against its hashes (`make lock`); the development servers
# (the [servers] extra: embedded Postgres, Valkey, ArcadeDB with its JRE) are not in it.
COPY requirements/prod.lock requirements/
RUN pip install --require-hashes -r requirements/prod.lock

COPY . .
# This checkout (and the agent client under client/, when it is its own distribution)
# without resolving anything again. /data, /backups and /metrics are volumes in
# docker-compose.yml: made here, owned by the app user, so a fresh named volume takes that
# ownership.
RUN pip install --no-deps $(test -f client/pyproject.toml && echo ./client) . \
    && useradd --system --create-home --uid 10001 app \
    && mkdir -p /app/staticfiles /data /backups \
    && chown app:app /app/staticfiles /data /backups

USER app
EXPOSE 8000
CMD ["python", "-m", "orchestrator.ops.webserver", "--host", "0.0.0.0", "--port", "8000"]
