"""Django settings. Every value comes from ``foundation.config`` (env + optional YAML):
read and checked there, never from the process environment here."""

from __future__ import annotations

import contextlib
import secrets
import sys
from datetime import timedelta
from pathlib import Path

from foundation.config import (
    ConfigError,
    comma_list,
    load_settings,
    lockout_groups,
    resolve_dir,
)
from foundation.core import private_files

BASE_DIR = Path(__file__).resolve().parent.parent

try:
    ORCH = load_settings()
except ConfigError as exc:
    # One line naming the setting, then stop: a half-configured server is worse than none.
    print(str(exc), file=sys.stderr)
    raise SystemExit(2) from None


def _secret_key() -> str:
    if ORCH.DJANGO_SECRET_KEY:
        return ORCH.DJANGO_SECRET_KEY
    # Development default: a random key persisted under .data/ so sessions survive restarts,
    # created 0600 in a 0700 directory (a key left 0644 by an older version is narrowed):
    # whoever reads it can forge console sessions.
    try:
        return private_files.secret(BASE_DIR / ".data" / "secret_key", nbytes=50)
    except OSError:  # a read-only checkout: a key for this process only
        return secrets.token_urlsafe(50)


SECRET_KEY = _secret_key()
DEBUG = ORCH.DJANGO_DEBUG
ALLOWED_HOSTS = comma_list(ORCH.DJANGO_ALLOWED_HOSTS)
CSRF_TRUSTED_ORIGINS = comma_list(ORCH.DJANGO_CSRF_TRUSTED_ORIGINS)
# Behind a proxy that ends TLS the request reaches us as plain HTTP: the proxy's
# X-Forwarded-Proto says it was https (so the console's CSRF origin check compares
# https with https), and the console's cookies are never sent over plain HTTP. Off by
# default: a server reached directly must not believe a header any client can send.
# A plain-HTTP request that came through the proxy is redirected to https, and browsers
# are told to use https only (HSTS, SECURE_HSTS_*: includeSubDomains covers the names
# below the orchestrator's own host only, and "preload" enrols nothing until someone
# submits the domain, so both are on: `manage.py check --deploy` is clean). /healthz and
# /metrics are exempt: the stack's own healthcheck and Prometheus ask them over the
# internal network in plain HTTP, never through the proxy.
if ORCH.BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    SECURE_HSTS_SECONDS = ORCH.SECURE_HSTS_SECONDS
    SECURE_HSTS_INCLUDE_SUBDOMAINS = ORCH.SECURE_HSTS_INCLUDE_SUBDOMAINS
    SECURE_HSTS_PRELOAD = ORCH.SECURE_HSTS_PRELOAD

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
    "foundation.core.apps.CoreConfig",
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
        # The project's templates/ (admin overrides), through orchestrator/templates: a
        # link in the checkout, the files themselves in a built wheel (make dist).
        "DIRS": [Path(__file__).resolve().parent / "templates"],
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
REQUEST_STATEMENT_TIMEOUT_MS = ORCH.REQUEST_STATEMENT_TIMEOUT_MS
SERVES_REQUESTS = ORCH.ORCHESTRATOR_SERVES_REQUESTS
# JIT compilation costs hundreds of ms on the few large queries here (conflict detection,
# crash sweep, registry) and never pays back on OLTP work.
_POSTGRES_OPTIONS = "-c jit=off"
# The statements prepared on purpose (foundation.core.prepared; Django prepares none)
# are each written for one access path, and Postgres's default plan choice kept planning
# some of them on every run: the claim holders' read spent 1.3 ms planning against
# 0.08 ms running, 12 s of Postgres CPU in two minutes of 1,000 agents across all of them.
# A generic plan is made once per connection; the same bench ran every one of them as fast
# or faster with it (pg_stat_statements, bench/PROFILE.md).
_POSTGRES_OPTIONS += " -c plan_cache_mode=force_generic_plan"
if SERVES_REQUESTS and REQUEST_STATEMENT_TIMEOUT_MS > 0:
    _POSTGRES_OPTIONS += f" -c statement_timeout={REQUEST_STATEMENT_TIMEOUT_MS}"
# Storage quota: each project may store at most this many bytes of task versions
# and checkpoints (their snapshots' JSON text); a write that would pass it answers E1617
# (413) and writes nothing. 0: no limit. Enforced by a trigger (contexts migration 0005)
# that reads it from the connection's settings: set at connect time, it costs no round trip.
STORAGE_QUOTA_BYTES = ORCH.STORAGE_QUOTA_BYTES
_POSTGRES_OPTIONS += f" -c orchestrator.storage_quota_bytes={STORAGE_QUOTA_BYTES}"

# DATABASE_URL's query options (sslmode, sslrootcert, target_session_attrs, ...) are
# passed to libpq as given; its connect_timeout wins over DB_CONNECT_TIMEOUT, and its
# "options" (-c settings) are added after ours.
_URL_OPTIONS = dict(ORCH.database["OPTIONS"])
if _URL_OPTIONS.get("options"):
    _POSTGRES_OPTIONS += " " + _URL_OPTIONS.pop("options")

DATABASES = {
    "default": {
        # django-prometheus's backend with a health check that costs no round trip.
        "ENGINE": "foundation.backends.postgres",
        **ORCH.database,
        "CONN_MAX_AGE": ORCH.DB_CONN_MAX_AGE,
        # A reused connection is checked before a request's first query, so the first
        # request after Postgres cut its connections (restart, failover,
        # pg_terminate_backend) reconnects instead of answering 503. The check asks the
        # socket and sends no "SELECT 1" unless the server spoke unasked
        # (foundation/backends/postgres/base.py).
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            # Also bounds a server that accepts connections and never answers (libpq's
            # minimum is 2 s).
            "connect_timeout": ORCH.DB_CONNECT_TIMEOUT,
            "options": _POSTGRES_OPTIONS,
            # Django turns psycopg's prepared statements off (None). Its own queries bind
            # on the client and are never prepared either way; this lets the few hot
            # statements of foundation.core.prepared ask for it (prepare=True).
            "prepare_threshold": 5,
            **_URL_OPTIONS,
        },
        "TEST": {"NAME": ORCH.TEST_DATABASE_NAME or None},
    }
}
# The web server's processes borrow connections from a pool (Django's psycopg pool):
# each holds DB_POOL_MIN_SIZE to DB_POOL_MAX_SIZE connections whatever its threads
# (WEB_THREADS + TOOL_THREADS, 16 by default, each kept a connection of its own before),
# and a request waits up to DB_POOL_TIMEOUT seconds for one (then 503, E1654's kind). A
# stack then uses at most WEB_WORKERS x DB_POOL_MAX_SIZE connections for web, plus one per
# Celery worker process (docs/operations/deploying.md has the figures). Not in
# manage.py, Celery or the test process: a pool there would only hold idle connections
# (and the pool needs CONN_MAX_AGE 0, which would reconnect for every job).
DB_POOL = SERVES_REQUESTS and ORCH.DB_POOL_MAX_SIZE > 0
if DB_POOL:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # a closed connection goes back to the pool
    # The pool checks each connection it lends with the backend's free socket poll
    # (foundation/backends/postgres/base.py), not Django's round trip per loan.
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": ORCH.DB_POOL_MIN_SIZE, "max_size": ORCH.DB_POOL_MAX_SIZE,
        "timeout": ORCH.DB_POOL_TIMEOUT}
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
# One time format on every page: 24-hour, year first (console/formats/en/formats.py).
FORMAT_MODULE_PATH = ["console.formats"]

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
        "foundation.core.filters.QueryParameterCheck",
        "orchestrator.web.api.ProjectScopeFilter",
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    # ?limit= 1-1000, ?offset= 0-2^31-1; anything else is 400 E1612 (never a failed query)
    "DEFAULT_PAGINATION_CLASS": "foundation.core.pagination.StrictLimitOffsetPagination",
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
MCP_SCHEMA = ORCH.MCP_SCHEMA
MCP_PROJECT_ID = ORCH.MCP_PROJECT_ID
REDIS_URL = ORCH.redis_url
REDIS_KEY_PREFIX = ORCH.REDIS_KEY_PREFIX
REDIS_HOT_CONTEXT_TTL = ORCH.REDIS_HOT_CONTEXT_TTL
REDIS_TASK_CONTEXT_TTL = ORCH.REDIS_TASK_CONTEXT_TTL
REDIS_LOCK_TTL = ORCH.REDIS_LOCK_TTL
REDIS_HEARTBEAT_TTL = 120
# After a refused connection, skip Redis for this long so saves stay fast during an outage.
REDIS_CIRCUIT_OPEN_SECONDS = ORCH.REDIS_CIRCUIT_OPEN_SECONDS
NEO4J_URI = ORCH.NEO4J_URI
NEO4J_USER = ORCH.NEO4J_USER
NEO4J_PASSWORD = ORCH.NEO4J_PASSWORD
NEOMODEL_DATABASE_URL = ORCH.neomodel_url
ENABLE_NEO4J = ORCH.ENABLE_NEO4J
# A Bolt server that accepts connections but does not answer is given up after this long
# (handshake and every statement); the graph then falls back to Postgres.
NEO4J_READ_TIMEOUT_SECONDS = ORCH.NEO4J_READ_TIMEOUT_SECONDS
ENABLE_FILE_SYNC = ORCH.ENABLE_FILE_SYNC
ENABLE_AUTO_RECOVERY_CHECK = ORCH.ENABLE_AUTO_RECOVERY_CHECK
ENABLE_CONFLICT_DETECTION = ORCH.ENABLE_CONFLICT_DETECTION
CONTEXT_DIR = resolve_dir(BASE_DIR, ORCH.CONTEXT_DIR)
RECOVERY_DIR = resolve_dir(BASE_DIR, ORCH.RECOVERY_DIR)
CRASH_THRESHOLD_MINUTES = ORCH.CRASH_THRESHOLD_MINUTES
STALE_SESSION_HOURS = ORCH.STALE_SESSION_HOURS
HEARTBEAT_INTERVAL_MS = ORCH.HEARTBEAT_INTERVAL_MS
# check_recovery lists the tasks completed within this many hours for a
# recovering agent to validate (default 24, the same day STALE_SESSION_HOURS gives a
# silent session before it is closed out).
RECENT_COMPLETION_WINDOW = ORCH.RECENT_COMPLETION_WINDOW
# A paused session is listed by check_recovery (with a resume prompt) this many
# minutes after its resetsAt if nothing resumed it.
PAUSE_RESUME_GRACE_MINUTES = ORCH.PAUSE_RESUME_GRACE_MINUTES
# File claims (claims/): a claim lapses this long after the session last edited the path,
# and a lapsed claim of a live session still warns ("recently held") this long after.
FILE_CLAIM_TTL_SECONDS = ORCH.FILE_CLAIM_TTL_SECONDS
FILE_CLAIM_RECENT_SECONDS = ORCH.FILE_CLAIM_RECENT_SECONDS
# A claim's overlaps (file conflict, the holder's notice) are recorded off the claim's
# path this long after it, once per burst and process; 0: by the claiming call itself.
FILE_CLAIM_OVERLAP_DELAY_MS = ORCH.FILE_CLAIM_OVERLAP_DELAY_MS
FILE_CLAIM_OVERLAP_INTERVAL_MS = ORCH.FILE_CLAIM_OVERLAP_INTERVAL_MS
MAX_VERSIONS_DEFAULT = ORCH.MAX_VERSIONS_DEFAULT
MAX_VERSIONS_LIMIT = ORCH.MAX_VERSIONS_LIMIT
HOT_SYNC_INTERVAL_SECONDS = ORCH.HOT_SYNC_INTERVAL_SECONDS
SLACK_WEBHOOK_URL = ORCH.SLACK_WEBHOOK_URL
# The active sessions a stack is sized for: the alert rules measure against it (/metrics
# exports it as session_orchestration_fleet_capacity_sessions).
FLEET_CAPACITY_SESSIONS = ORCH.FLEET_CAPACITY_SESSIONS
# Posted by the Celery worker (sessions/services/notifications.py); a failed post is tried
# again this many times, the first after SLACK_NOTIFY_RETRY_SECONDS, doubling.
SLACK_NOTIFY_RETRIES = ORCH.SLACK_NOTIFY_RETRIES
SLACK_NOTIFY_RETRY_SECONDS = ORCH.SLACK_NOTIFY_RETRY_SECONDS
# The index files (_registry.json, .tool-history.json) are rewritten off the request path
# at most this often per process (foundation/backends/coalesce.py); 0: by every call.
INDEX_FILE_DELAY_MS = ORCH.INDEX_FILE_DELAY_MS
# A project's RECOVERY_DIR/.tool-history.json (its last 50 tool uses, for a session the
# database cannot vouch for) is rewritten at most this often per process and project: a
# busy repository has several agents flushing a second, and the file is read only after
# a crash, at a resolution of minutes. 0: by every call.
HISTORY_MIRROR_DELAY_MS = ORCH.HISTORY_MIRROR_DELAY_MS
# The graph outbox is drained off the request path this long after a change, once per
# burst and process (graph/services/outbox.py); 0: by the committing call itself.
GRAPH_OUTBOX_DELAY_MS = ORCH.GRAPH_OUTBOX_DELAY_MS
# Periods of the Celery beat jobs (seconds); crash detection runs every HEARTBEAT_INTERVAL_MS.
CONFLICT_DETECTION_INTERVAL_SECONDS = ORCH.CONFLICT_DETECTION_INTERVAL_SECONDS
GRAPH_SYNC_INTERVAL_SECONDS = ORCH.GRAPH_SYNC_INTERVAL_SECONDS
# Beat's graph sync compares counts every GRAPH_SYNC_INTERVAL_SECONDS and makes the full
# pass (every node and edge read back) when they differ or the last one is this old.
GRAPH_FULL_SYNC_INTERVAL_SECONDS = ORCH.GRAPH_FULL_SYNC_INTERVAL_SECONDS
GRAPH_OUTBOX_INTERVAL_SECONDS = ORCH.GRAPH_OUTBOX_INTERVAL_SECONDS
STALE_SESSION_SWEEP_INTERVAL_SECONDS = ORCH.STALE_SESSION_SWEEP_INTERVAL_SECONDS
# Scheduled backups (manage.py backup) into BACKUP_DIR, keeping the newest BACKUP_KEEP;
# no BACKUP_DIR, no scheduled backup.
BACKUP_DIR = ORCH.BACKUP_DIR
BACKUP_INTERVAL_SECONDS = ORCH.BACKUP_INTERVAL_SECONDS
BACKUP_KEEP = ORCH.BACKUP_KEEP
# Directory of pg_dump/pg_restore for backup/restore; empty: the first one that fits.
PG_BIN_DIR = ORCH.PG_BIN_DIR

# --- Retention (orchestrator/ops/retention.py: beat job "retention", manage.py prune) --------
# Context versions: all kept unless the operator sets RETENTION_KEEP_VERSIONS (>= 1; 0, the
# default: keep every version, the spec's audit trail). When set, a task keeps its newest
# RETENTION_KEEP_VERSIONS and every version younger than RETENTION_KEEP_DAYS; versions a
# checkpoint needs, and all versions of a task with an open conflict, are always kept.
RETENTION_KEEP_VERSIONS = ORCH.RETENTION_KEEP_VERSIONS
RETENTION_KEEP_DAYS = ORCH.RETENTION_KEEP_DAYS
# Checkpoints per task beyond the quota go, oldest automatic ones first; checkpoints a
# caller created (any type but "auto") only when RETENTION_PRUNE_LABELLED_CHECKPOINTS.
RETENTION_CHECKPOINTS_PER_TASK = ORCH.RETENTION_CHECKPOINTS_PER_TASK
RETENTION_PRUNE_LABELLED_CHECKPOINTS = ORCH.RETENTION_PRUNE_LABELLED_CHECKPOINTS
# Event logs of ended / recovered sessions (and of sessions already removed).
RETENTION_EVENT_DAYS = ORCH.RETENTION_EVENT_DAYS
RETENTION_BATCH_SIZE = ORCH.RETENTION_BATCH_SIZE
RETENTION_INTERVAL_SECONDS = ORCH.RETENTION_INTERVAL_SECONDS
# Task backup files (CONTEXT_DIR/task-agents/<taskId>.json, per project) of archived tasks,
# and of completed tasks not updated for RETENTION_TASK_FILE_DAYS, are moved by retention
# into the project's archive/task-agents-<YYYY-MM>.jsonl.gz (RETENTION_TASK_FILE_ACTION=
# archive, the default) or deleted (=delete); a later save writes its live file again.
RETENTION_TASK_FILE_DAYS = ORCH.RETENTION_TASK_FILE_DAYS
RETENTION_TASK_FILE_ACTION = ORCH.RETENTION_TASK_FILE_ACTION
# The checkpoint check (contexts/services/checkpoint_check.py, beat job "checkpoint check",
# manage.py check_checkpoints) reads every snapshot back against its hash this often.
CHECKPOINT_CHECK_INTERVAL_SECONDS = ORCH.CHECKPOINT_CHECK_INTERVAL_SECONDS

# --- The web server's processes (orchestrator/asgi.py, orchestrator/web/fastlane.py) -------
# Threads per web worker: Django's pages (WEB_THREADS) and tool calls (TOOL_THREADS), each
# with its own database connection; the GIL switch interval a worker runs with.
WEB_THREADS = ORCH.WEB_THREADS
TOOL_THREADS = ORCH.TOOL_THREADS
WEB_GIL_SWITCH_INTERVAL_MS = ORCH.WEB_GIL_SWITCH_INTERVAL_MS

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
BEAT_LOCK_TIMEOUT_SECONDS = ORCH.BEAT_LOCK_TIMEOUT_SECONDS
CELERY_BEAT_SCHEDULER = "orchestrator.ops.beat.LeaderScheduler"
CELERY_BEAT_MAX_LOOP_INTERVAL = BEAT_LOCK_TIMEOUT_SECONDS / 6

# --- Logging: one JSON object per line (timestamp, level, logger, message, context) --
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "foundation.observability.logformat.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": ORCH.LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "neo4j": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
    },
}

# --- Login throttling and the API rate limit (docs/operations/rate-limits.md) ------------
# Admin logins (django-axes): after AXES_FAILURE_LIMIT failures the same username from
# the same address is refused for AXES_COOLOFF_MINUTES (0: until an operator resets it:
# `manage.py axes_reset_username NAME`, or the console's Axes pages). The pair, not the
# address alone, so one guesser cannot lock everyone out; the attempts live in
# Postgres (the database handler): they survive restarts, every worker sees them and
# the console lists them. The address is REMOTE_ADDR, which uvicorn takes from
# X-Forwarded-For only when the peer is in FORWARDED_ALLOW_IPS (default 127.0.0.1:
# a reverse proxy on the same host).
AXES_ENABLED = ORCH.AXES_ENABLED
AXES_FAILURE_LIMIT = ORCH.AXES_FAILURE_LIMIT
AXES_COOLOFF_TIME = (timedelta(minutes=ORCH.AXES_COOLOFF_MINUTES)
                     if ORCH.AXES_COOLOFF_MINUTES else None)
AXES_LOCKOUT_PARAMETERS = [group[0] if len(group) == 1 else group
                           for group in lockout_groups(ORCH.AXES_LOCKOUT_PARAMETERS)]
AXES_RESET_ON_SUCCESS = True
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_LOCKOUT_TEMPLATE = "admin/locked_out.html"
# REST tools, MCP and browsing: one budget per token (orchestrator.web.ratelimit), e.g.
# "1200/minute" or "50 per 10 seconds"; "off" turns it off.
API_RATE_LIMIT = ORCH.API_RATE_LIMIT
INSTALLED_APPS.append("axes")
# Axes checks a login's address and username before the password (its backend first)
# and answers a locked-out login with AXES_LOCKOUT_TEMPLATE (its middleware, last).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]
MIDDLEWARE.append("axes.middleware.AxesMiddleware")
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["orchestrator.web.api.TokenRateThrottle"]
