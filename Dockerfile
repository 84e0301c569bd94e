# Production-like image: web (uvicorn), Celery worker and beat all run from it
# (see docker-compose.yml). Postgres, Redis and Neo4j are separate services there.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first, in their own layer: a code change does not reinstall them.
# The agent client (client/) is ours, not an index's: installed from the tree below.
COPY pyproject.toml ./
RUN python -c "import subprocess, sys, tomllib; \
deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; \
deps = [d for d in deps if not d.startswith('session-orchestrator-agent')]; \
subprocess.check_call([sys.executable, '-m', 'pip', 'install', *deps])"

COPY . .
RUN pip install --no-deps ./client . \
    && useradd --system --create-home --uid 10001 app \
    && mkdir -p /app/staticfiles /data \
    && chown app:app /app/staticfiles /data

USER app
EXPOSE 8000
CMD ["python", "-m", "orchestrator.ops.webserver", "--host", "0.0.0.0", "--port", "8000"]
