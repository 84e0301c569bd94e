"""Django settings. Every value comes from ``orchestrator.config`` (env + optional YAML)."""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from pathlib import Path

from orchestrator.config import ConfigError, load_settings
from orchestrator.core import private_files

BASE_DIR = Path(__file__).resolve().parent.parent

try:
    ORCH = load_settings(base_dir=BASE_DIR)
except ConfigError as exc:
    # One line naming the setting, then stop: a half-configured server is worse than none.
    print(str(exc), file=sys.stderr)
    raise SystemExit(2) from None


def _secret_key() -> str:
    if os.environ.get("DJANGO_SECRET_KEY"):
        return os.environ["DJANGO_SECRET_KEY"]
    # Development default: a random key persisted under .data/ so sessions survive restarts,
    # created 0600 in a 0700 directory (a key left 0644 by an older version is narrowed):
    # whoever reads it can forge console sessions.
    try:
        return private_files.secret(BASE_DIR / ".data" / "secret_key", nbytes=50)
    except OSError:  # a read-only checkout: a key for this process only
        return secrets.token_urlsafe(50)


SECRET_KEY = _secret_key()
DEBUG = os.environ.get("DJANGO_DEBUG", "").lower() in ("1", "true", "yes")
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
    .split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_prometheus",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI / Redoc files for /api/docs/ (no CDN)
    "orchestrator.core.apps.CoreConfig",
    "orchestrator.ops.apps.OpsConfig",
    "locks.apps.LocksConfig",
    "contexts.apps.ContextsConfig",
    "sessions.apps.AgentSessionsConfig",
    "conflicts.apps.ConflictsConfig",
    "claims.apps.ClaimsConfig",
    "graph.apps.GraphConfig",
    "console.apps.ConsoleConfig",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "orchestrator.urls"
WSGI_APPLICATION = "orchestrator.wsgi.application"
ASGI_APPLICATION = "orchestrator.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Request work (the web server's processes: orchestrator.ops.webserver sets
# ORCHESTRATOR_SERVES_REQUESTS=1) runs with a statement timeout, so a stuck query costs one
# 503 E1654 instead of a worker; migrate, sync, prune and the Celery jobs run without one.
REQUEST_STATEMENT_TIMEOUT_MS = int(os.environ.get("REQUEST_STATEMENT_TIMEOUT_MS", "10000"))
SERVES_REQUESTS = os.environ.get("ORCHESTRATOR_SERVES_REQUESTS") == "1"
# JIT compilation costs hundreds of ms on the few large queries here (conflict detection,
# crash sweep, registry) and never pays back on OLTP work.
_POSTGRES_OPTIONS = "-c jit=off"
# The statements prepared on purpose (orchestrator.backends.prepared; Django prepares none)
# are each written for one access path, and Postgres's default plan choice kept planning
# some of them on every run: the claim holders' read spent 1.3 ms planning against
# 0.08 ms running, 12 s of Postgres CPU in two minutes of 1,000 agents across all of them.
# A generic plan is made once per connection; the same bench ran every one of them as fast
# or faster with it (pg_stat_statements, bench/PROFILE.md).
_POSTGRES_OPTIONS += " -c plan_cache_mode=force_generic_plan"
if SERVES_REQUESTS and REQUEST_STATEMENT_TIMEOUT_MS > 0:
    _POSTGRES_OPTIONS += f" -c statement_timeout={REQUEST_STATEMENT_TIMEOUT_MS}"
# Storage quota (seed 003): each project may store at most this many bytes of task versions
# and checkpoints (their snapshots' JSON text); a write that would pass it answers E1617
# (413) and writes nothing. 0: no limit. Enforced by a trigger (contexts migration 0005)
# that reads it from the connection's settings: set at connect time, it costs no round trip.
STORAGE_QUOTA_BYTES = max(0, int(os.environ.get("STORAGE_QUOTA_BYTES", str(1024 ** 3))))
_POSTGRES_OPTIONS += f" -c orchestrator.storage_quota_bytes={STORAGE_QUOTA_BYTES}"

DATABASES = {
    "default": {
        # django-prometheus's backend with a health check that costs no round trip.
        "ENGINE": "orchestrator.backends.postgres",
        **ORCH.database,
        "CONN_MAX_AGE": int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        # A reused connection is checked before a request's first query, so the first
        # request after Postgres cut its connections (restart, failover,
        # pg_terminate_backend) reconnects instead of answering 503. The check asks the
        # socket and sends no "SELECT 1" unless the server spoke unasked
        # (orchestrator/backends/postgres/base.py).
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            # Also bounds a server that accepts connections and never answers (libpq's
            # minimum is 2 s).
            "connect_timeout": int(os.environ.get("DB_CONNECT_TIMEOUT", "5")),
            "options": _POSTGRES_OPTIONS,
            # Django turns psycopg's prepared statements off (None). Its own queries bind
            # on the client and are never prepared either way; this lets the few hot
            # statements of orchestrator.backends.prepared ask for it (prepare=True).
            "prepare_threshold": 5,
        },
        "TEST": {"NAME": os.environ.get("TEST_DATABASE_NAME") or None},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django_prometheus.cache.backends.redis.RedisCache",
        "LOCATION": ORCH.redis_url,
        "KEY_PREFIX": "orchestrator-django",
        "OPTIONS": {
            "CLIENT_CLASS": "django_redis.client.DefaultClient",
            "SOCKET_CONNECT_TIMEOUT": 0.5,
            "SOCKET_TIMEOUT": 0.5,
            # Django's own cache (rate limits, admin) must not take the site down with Redis.
            "IGNORE_EXCEPTIONS": True,
            "SERIALIZER": "django_redis.serializers.json.JSONSerializer",
        },
    }
}
DJANGO_REDIS_IGNORE_EXCEPTIONS = True
DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# whitenoise serves STATIC_ROOT and warns on every start when it does not exist yet
# (a fresh clone before collectstatic); WHITENOISE_USE_FINDERS serves the files meanwhile.
with contextlib.suppress(OSError):
    STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [p for p in [BASE_DIR / "static"] if p.exists()]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Plain (not manifest) storage: tests and `make test` run without collectstatic.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the apps' static dirs too, so a missed collectstatic is not a broken admin.
WHITENOISE_USE_FINDERS = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["orchestrator.web.api.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "orchestrator.web.openapi.OrchestratorSchema",
    "DEFAULT_FILTER_BACKENDS": [
        "orchestrator.core.filters.QueryParameterCheck",
        "orchestrator.web.api.ProjectScopeFilter",
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    # ?limit= 1-1000, ?offset= 0-2^31-1; anything else is 400 E1612 (never a failed query)
    "DEFAULT_PAGINATION_CLASS": "orchestrator.core.pagination.StrictLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "orchestrator.web.api.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["orchestrator.web.api.JSONParser",
                               "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Session Orchestrator API",
    "DESCRIPTION": (
        "Versioned task contexts, checkpoints, session recovery, conflicts and a task graph "
        "for AI coding agents. Every tool is `POST /api/v1/tools/<name>/`; the same tools are "
        "served over MCP at `/mcp`. Authenticate with `Authorization: Bearer <token>`."
    ),
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [
        "orchestrator.web.api.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI from drf-spectacular-sidecar's static files (whitenoise), not a CDN:
    # /api/docs/ renders on a machine without internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Orchestrator settings (spec section 10) -------------------------------------------
MCP_SCHEMA = ORCH.mcp_schema
MCP_PROJECT_ID = ORCH.project_id
REDIS_URL = ORCH.redis_url
REDIS_KEY_PREFIX = ORCH.redis_key_prefix
REDIS_HOT_CONTEXT_TTL = ORCH.redis_hot_context_ttl
REDIS_TASK_CONTEXT_TTL = ORCH.redis_task_context_ttl
REDIS_LOCK_TTL = ORCH.redis_lock_ttl
REDIS_HEARTBEAT_TTL = 120
# After a refused connection, skip Redis for this long so saves stay fast during an outage.
REDIS_CIRCUIT_OPEN_SECONDS = float(os.environ.get("REDIS_CIRCUIT_OPEN_SECONDS", "5"))
NEO4J_URI = ORCH.neo4j_uri
NEO4J_USER = ORCH.neo4j_user
NEO4J_PASSWORD = ORCH.neo4j_password
NEOMODEL_DATABASE_URL = ORCH.neomodel_url
ENABLE_NEO4J = ORCH.enable_neo4j
# A Bolt server that accepts connections but does not answer is given up after this long
# (handshake and every statement); the graph then falls back to Postgres.
NEO4J_READ_TIMEOUT_SECONDS = float(os.environ.get("NEO4J_READ_TIMEOUT_SECONDS", "3"))
ENABLE_FILE_SYNC = ORCH.enable_file_sync
ENABLE_AUTO_RECOVERY_CHECK = ORCH.enable_auto_recovery_check
ENABLE_CONFLICT_DETECTION = ORCH.enable_conflict_detection
CONTEXT_DIR = ORCH.context_dir
RECOVERY_DIR = ORCH.recovery_dir
CRASH_THRESHOLD_MINUTES = ORCH.crash_threshold_minutes
STALE_SESSION_HOURS = ORCH.stale_session_hours
HEARTBEAT_INTERVAL_MS = ORCH.heartbeat_interval_ms
# Seed 004: check_recovery lists the tasks completed within this many hours for a
# recovering agent to validate (default 24, the same day STALE_SESSION_HOURS gives a
# silent session before it is closed out).
RECENT_COMPLETION_WINDOW = float(os.environ.get("RECENT_COMPLETION_WINDOW", "24"))
# Seed 004: a paused session is listed by check_recovery (with a resume prompt) this many
# minutes after its resetsAt if nothing resumed it.
PAUSE_RESUME_GRACE_MINUTES = float(os.environ.get("PAUSE_RESUME_GRACE_MINUTES", "5"))
# File claims (claims/): a claim lapses this long after the session last edited the path,
# and a lapsed claim of a live session still warns ("recently held") this long after.
FILE_CLAIM_TTL_SECONDS = int(os.environ.get("FILE_CLAIM_TTL_SECONDS", "1800"))
FILE_CLAIM_RECENT_SECONDS = int(os.environ.get("FILE_CLAIM_RECENT_SECONDS", "600"))
# A claim's overlaps (file conflict, the holder's notice) are recorded off the claim's
# path this long after it, once per burst and process; 0: by the claiming call itself.
FILE_CLAIM_OVERLAP_DELAY_MS = int(os.environ.get("FILE_CLAIM_OVERLAP_DELAY_MS", "10"))
MAX_VERSIONS_DEFAULT = ORCH.max_versions_default
MAX_VERSIONS_LIMIT = ORCH.max_versions_limit
HOT_SYNC_INTERVAL_SECONDS = ORCH.hot_sync_interval_seconds
SLACK_WEBHOOK_URL = ORCH.slack_webhook_url
# The index files (_registry.json, .tool-history.json) are rewritten off the request path
# at most this often per process (orchestrator/backends/coalesce.py); 0: by every call.
INDEX_FILE_DELAY_MS = int(os.environ.get("INDEX_FILE_DELAY_MS", "250"))
# A project's RECOVERY_DIR/.tool-history.json (its last 50 tool uses, for a session the
# database cannot vouch for) is rewritten at most this often per process and project: a
# busy repository has several agents flushing a second, and the file is read only after
# a crash, at a resolution of minutes. 0: by every call.
HISTORY_MIRROR_DELAY_MS = int(os.environ.get("HISTORY_MIRROR_DELAY_MS", "5000"))
# The graph outbox is drained off the request path this long after a change, once per
# burst and process (graph/services/outbox.py); 0: by the committing call itself.
GRAPH_OUTBOX_DELAY_MS = int(os.environ.get("GRAPH_OUTBOX_DELAY_MS", "50"))
# Periods of the Celery beat jobs (seconds); crash detection runs every HEARTBEAT_INTERVAL_MS.
CONFLICT_DETECTION_INTERVAL_SECONDS = int(
    os.environ.get("CONFLICT_DETECTION_INTERVAL_SECONDS", "300"))
GRAPH_SYNC_INTERVAL_SECONDS = int(os.environ.get("GRAPH_SYNC_INTERVAL_SECONDS", "300"))
# Beat's graph sync compares counts every GRAPH_SYNC_INTERVAL_SECONDS and makes the full
# pass (every node and edge read back) when they differ or the last one is this old.
GRAPH_FULL_SYNC_INTERVAL_SECONDS = int(os.environ.get("GRAPH_FULL_SYNC_INTERVAL_SECONDS",
                                                      "3600"))
GRAPH_OUTBOX_INTERVAL_SECONDS = int(os.environ.get("GRAPH_OUTBOX_INTERVAL_SECONDS", "10"))
STALE_SESSION_SWEEP_INTERVAL_SECONDS = int(
    os.environ.get("STALE_SESSION_SWEEP_INTERVAL_SECONDS", "3600"))
# Scheduled backups (manage.py backup) into BACKUP_DIR, keeping the newest BACKUP_KEEP;
# no BACKUP_DIR, no scheduled backup.
BACKUP_DIR = os.environ.get("BACKUP_DIR", "")
BACKUP_INTERVAL_SECONDS = int(os.environ.get("BACKUP_INTERVAL_SECONDS", "86400"))
BACKUP_KEEP = int(os.environ.get("BACKUP_KEEP", "7"))

# --- Retention (orchestrator/ops/retention.py: beat job "retention", manage.py prune) --------
# Context versions: a task keeps its newest RETENTION_KEEP_VERSIONS and every version
# younger than RETENTION_KEEP_DAYS; versions a checkpoint needs, and all versions of a
# task with an open conflict, are always kept.
RETENTION_KEEP_VERSIONS = int(os.environ.get("RETENTION_KEEP_VERSIONS", "100"))
RETENTION_KEEP_DAYS = float(os.environ.get("RETENTION_KEEP_DAYS", "30"))
# Checkpoints per task beyond the quota go, oldest automatic ones first; checkpoints a
# caller created (any type but "auto") only when RETENTION_PRUNE_LABELLED_CHECKPOINTS.
RETENTION_CHECKPOINTS_PER_TASK = int(os.environ.get("RETENTION_CHECKPOINTS_PER_TASK", "100"))
RETENTION_PRUNE_LABELLED_CHECKPOINTS = os.environ.get(
    "RETENTION_PRUNE_LABELLED_CHECKPOINTS", "false").strip().lower() in {"1", "true", "yes"}
# Event logs of ended / recovered sessions (and of sessions already removed).
RETENTION_EVENT_DAYS = float(os.environ.get("RETENTION_EVENT_DAYS", "30"))
RETENTION_BATCH_SIZE = int(os.environ.get("RETENTION_BATCH_SIZE", "1000"))
RETENTION_INTERVAL_SECONDS = int(os.environ.get("RETENTION_INTERVAL_SECONDS", "86400"))
# Task backup files (CONTEXT_DIR/task-agents/<taskId>.json, per project) of archived tasks,
# and of completed tasks not updated for RETENTION_TASK_FILE_DAYS, are moved by retention
# into the project's archive/task-agents-<YYYY-MM>.jsonl.gz (RETENTION_TASK_FILE_ACTION=
# archive, the default) or deleted (=delete); a later save writes its live file again.
RETENTION_TASK_FILE_DAYS = float(os.environ.get("RETENTION_TASK_FILE_DAYS", "30"))
RETENTION_TASK_FILE_ACTION = os.environ.get("RETENTION_TASK_FILE_ACTION", "archive").strip()

# --- Celery ----------------------------------------------------------------------------
CELERY_BROKER_URL = ORCH.celery_broker_url
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Beat leadership (orchestrator/ops/beat.py, on celery-redbeat; its own settings are in
# orchestrator/celery.py): every stack may run a beat; the one holding a Redis lock sends
# the periodic jobs, the others wait for it. The holder renews it on every pass of its
# loop, at least six times per lock period, and a waiting beat tries every loop: a leader
# killed with -9 is replaced within BEAT_LOCK_TIMEOUT_SECONDS plus one loop.
BEAT_LOCK_TIMEOUT_SECONDS = ORCH.beat_lock_timeout_seconds
CELERY_BEAT_SCHEDULER = "orchestrator.ops.beat.LeaderScheduler"
CELERY_BEAT_MAX_LOOP_INTERVAL = BEAT_LOCK_TIMEOUT_SECONDS / 6

# --- Logging: one JSON object per line (spec 9.2.1) ------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "orchestrator.observability.logformat.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "neo4j": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
    },
}

# --- Login throttling and the API rate limit (README "Running it for a team") ------------
# Self-contained: every value from the environment, with a safe default; a bad one stops
# start-up with E1690 naming it.
def _throttle_settings(env=os.environ) -> dict:
    from datetime import timedelta

    from limits import parse

    def number(name: str, default: str, low: float) -> float:
        raw = env.get(name, default).strip()
        try:
            value = float(raw)
        except ValueError:
            value = low - 1
        if value < low:
            raise ConfigError("E1690", name, f"must be a number >= {low:g}, got {raw!r}")
        return value

    # Admin logins (django-axes): after AXES_FAILURE_LIMIT failures the same username from
    # the same address is refused for AXES_COOLOFF_MINUTES (0: until an operator resets it:
    # `manage.py axes_reset_username NAME`, or the console's Axes pages). The pair, not the
    # address alone, so one guesser cannot lock everyone out; the attempts live in
    # Postgres (the database handler): they survive restarts, every worker sees them and
    # the console lists them. The address is REMOTE_ADDR, which uvicorn takes from
    # X-Forwarded-For only when the peer is in FORWARDED_ALLOW_IPS (default 127.0.0.1:
    # a reverse proxy on the same host).
    parameters = [[p.strip() for p in group.split("+") if p.strip()] for group in
                  env.get("AXES_LOCKOUT_PARAMETERS", "username+ip_address").split(",")]
    known = {"username", "ip_address", "user_agent"}
    if not all(group and set(group) <= known for group in parameters):
        raise ConfigError("E1690", "AXES_LOCKOUT_PARAMETERS",
                          "comma-separated groups of username, ip_address, user_agent "
                          "joined by '+'")
    cooloff = number("AXES_COOLOFF_MINUTES", "15", 0)
    # REST tools, MCP and browsing: one budget per token (orchestrator.web.ratelimit), e.g.
    # "1200/minute" or "50 per 10 seconds"; "off" turns it off.
    rate = env.get("API_RATE_LIMIT", "1200/minute").strip()
    if rate.lower() not in {"", "0", "off", "false", "no", "none"}:
        try:
            parse(rate)
        except ValueError:
            raise ConfigError("E1690", "API_RATE_LIMIT",
                              f"not a rate like '1200/minute', got {rate!r}") from None
    return {
        "AXES_ENABLED": env.get("AXES_ENABLED", "true").strip().lower() not in
        {"0", "false", "no", "off"},
        "AXES_FAILURE_LIMIT": int(number("AXES_FAILURE_LIMIT", "5", 1)),
        "AXES_COOLOFF_TIME": timedelta(minutes=cooloff) if cooloff else None,
        "AXES_LOCKOUT_PARAMETERS": [g[0] if len(g) == 1 else g for g in parameters],
        "AXES_RESET_ON_SUCCESS": True,
        "AXES_HANDLER": "axes.handlers.database.AxesDatabaseHandler",
        "AXES_LOCKOUT_TEMPLATE": "admin/locked_out.html",
        "API_RATE_LIMIT": rate,
    }


try:
    globals().update(_throttle_settings())
except ConfigError as exc:
    print(str(exc), file=sys.stderr)
    raise SystemExit(2) from None
INSTALLED_APPS.append("axes")
# Axes checks a login's address and username before the password (its backend first)
# and answers a locked-out login with AXES_LOCKOUT_TEMPLATE (its middleware, last).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]
MIDDLEWARE.append("axes.middleware.AxesMiddleware")
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["orchestrator.web.api.TokenRateThrottle"]
