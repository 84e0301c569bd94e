"""Configuration: one typed, validated definition of every setting the server reads.

Precedence: environment variable > ORCHESTRATOR_CONFIG file (YAML grouped by backend,
``_YAML_PATHS``, with ``${VAR:default}`` interpolation) > built-in default; an empty
value counts as unset.
``Settings`` (pydantic) declares each variable under its own name with its type and
bounds; anything malformed raises ``ConfigError`` carrying E1690 (invalid) or E1691
(missing) and the setting's name, so start-up stops with one line that says what to fix.

Connection URLs: DATABASE_URL is parsed by dj-database-url, and every query option that
is a libpq connection keyword (sslmode, sslrootcert, target_session_attrs, ...) reaches
the driver; an unknown one is E1690 here rather than a failed connection later. Bolt
credentials are kept apart from the address (``bolt_target``) and handed to the driver
as an auth pair, so a password may hold any character (``@ / # :``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import dj_database_url
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# Web worker processes by default: three on two cores. Each worker runs its tool calls on
# threads that share one GIL, so a call waits for the GIL after each round trip while its
# worker's other calls run; three workers split the same calls three ways. Measured on a
# 2-core machine at 1,500 agents (bench.agents, 90 s levels, alternated): hook-call p99
# 52.9 and 81.3 ms with three, 121.8 and 91.6 with two, at the same server CPU per call
# (4.17-4.24 ms against 3.99-4.17); in `make bench` 51.8, 122.3 and 256.4 ms with three
# against 612.7-2,075.7 with two. Four cost more CPU per call (2,000 agents: 4.20 ms
# against 3.83 with three). The price: one more process (~200 MB) and its pool.
DEFAULT_WEB_WORKERS = 3


def web_workers_from_env() -> int:
    """WEB_WORKERS as make run's supervisor, the web server and the bench read it before
    Django loads (an empty value counts as unset, as for every setting)."""
    return int(os.environ.get("WEB_WORKERS") or DEFAULT_WEB_WORKERS)

CONFIG_INVALID = "E1690"
CONFIG_MISSING = "E1691"


class ConfigError(Exception):
    def __init__(self, code: str, setting: str, message: str):
        self.code = code
        self.setting = setting
        super().__init__(f"{code}: {setting}: {message}")


_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")

# Where each flat setting lives in the ORCHESTRATOR_CONFIG YAML file (postgres:, redis:, ...).
_YAML_PATHS: dict[str, tuple[str, ...]] = {
    "POSTGRES_HOST": ("postgres", "host"),
    "POSTGRES_PORT": ("postgres", "port"),
    "POSTGRES_DB": ("postgres", "database"),
    "POSTGRES_USER": ("postgres", "user"),
    "POSTGRES_PASSWORD": ("postgres", "password"),
    "MCP_SCHEMA": ("postgres", "schema"),
    "REDIS_HOST": ("redis", "host"),
    "REDIS_PORT": ("redis", "port"),
    "REDIS_KEY_PREFIX": ("redis", "keyPrefix"),
    "REDIS_HOT_CONTEXT_TTL": ("redis", "ttl", "hotContext"),
    "REDIS_TASK_CONTEXT_TTL": ("redis", "ttl", "taskContext"),
    "REDIS_LOCK_TTL": ("redis", "ttl", "locks"),
    "NEO4J_URI": ("neo4j", "uri"),
    "ENABLE_NEO4J": ("neo4j", "enabled"),
    "CRASH_THRESHOLD_MINUTES": ("recovery", "crashThresholdMinutes"),
    "STALE_SESSION_HOURS": ("recovery", "staleSessionHours"),
    "HEARTBEAT_INTERVAL_MS": ("recovery", "heartbeatIntervalMs"),
    "ENABLE_FILE_SYNC": ("features", "enableFileSync"),
    "ENABLE_AUTO_RECOVERY_CHECK": ("features", "enableAutoRecoveryCheck"),
    "ENABLE_CONFLICT_DETECTION": ("features", "enableConflictDetection"),
    "MCP_PROJECT_ID": ("project", "id"),
    "CONTEXT_DIR": ("files", "contextDir"),
    "RECOVERY_DIR": ("files", "recoveryDir"),
}

# Never echoed in an error line: they hold (or may hold) a password or a token.
SECRETS = frozenset({
    "DATABASE_URL", "POSTGRES_PASSWORD", "REDIS_URL", "CELERY_BROKER_URL", "NEO4J_PASSWORD",
    "NEOMODEL_DATABASE_URL", "DJANGO_SECRET_KEY", "SLACK_WEBHOOK_URL",
})

Count = Annotated[int, Field(ge=0)]          # 0 allowed: "none" / "by every call"
Positive = Annotated[int, Field(ge=1)]       # intervals, TTLs, sizes: 0 would spin or expire
Port = Annotated[int, Field(ge=1, le=65535)]
Span = Annotated[float, Field(ge=0)]         # days, minutes, seconds: 0 allowed
Duration = Annotated[float, Field(gt=0)]     # timeouts, thresholds: 0 would mean never/always
Text = Annotated[str, Field(min_length=1)]
_BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
# Connection parameters Django or psycopg take besides libpq's own keywords.
_DRIVER_OPTIONS = frozenset({"assume_role", "server_side_binding"})


class Settings(BaseModel):
    """Every setting, named as its environment variable. A new field needs its meaning in
    docs/_gen/settings.yml: the site's settings table is generated from both."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False, str_strip_whitespace=True)

    # Postgres: DATABASE_URL wins over the parts.
    DATABASE_URL: str = ""
    POSTGRES_HOST: Text = "localhost"
    POSTGRES_PORT: Port = 5433
    POSTGRES_DB: Text = "consolidator"
    POSTGRES_USER: Text = "postgres"
    POSTGRES_PASSWORD: str = ""
    MCP_SCHEMA: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]{0,62}$")] = "mcp_contexts"
    TEST_DATABASE_NAME: str = ""
    DB_CONN_MAX_AGE: Count = 60
    DB_CONNECT_TIMEOUT: Positive = 5   # 0 would be libpq's "wait forever"
    # The web server's connection pool, per web worker process (settings.py): 0 turns it off.
    DB_POOL_MIN_SIZE: Count = 2
    DB_POOL_MAX_SIZE: Count = 10
    DB_POOL_TIMEOUT: Duration = 10
    REQUEST_STATEMENT_TIMEOUT_MS: Count = 10000
    ORCHESTRATOR_SERVES_REQUESTS: bool = False
    STORAGE_QUOTA_BYTES: Count = 1024 ** 3
    # Redis: REDIS_URL wins over the parts.
    REDIS_URL: str = ""
    REDIS_HOST: Text = "localhost"
    REDIS_PORT: Port = 6379
    CELERY_BROKER_URL: str = ""
    REDIS_KEY_PREFIX: Annotated[str, Field(pattern=r"^[A-Za-z0-9_:.\-]{1,64}$")] = "context:"
    REDIS_HOT_CONTEXT_TTL: Positive = 3600
    REDIS_TASK_CONTEXT_TTL: Positive = 7200
    REDIS_LOCK_TTL: Positive = 300
    REDIS_CIRCUIT_OPEN_SECONDS: Span = 5
    # Bolt graph: NEOMODEL_DATABASE_URL wins over the parts.
    NEO4J_URI: Text = "bolt://localhost:7687"
    NEO4J_USER: str = "neo4j"
    NEO4J_PASSWORD: str = ""
    NEOMODEL_DATABASE_URL: str = ""
    NEO4J_READ_TIMEOUT_SECONDS: Duration = 3
    ENABLE_NEO4J: bool = True
    # Spec section 10 behaviour.
    MCP_PROJECT_ID: Text = "story-portal-app"
    ENABLE_FILE_SYNC: bool = True
    ENABLE_AUTO_RECOVERY_CHECK: bool = True
    ENABLE_CONFLICT_DETECTION: bool = True
    CONTEXT_DIR: Text = ".claude/contexts"
    RECOVERY_DIR: Text = ".claude/recovery"
    CRASH_THRESHOLD_MINUTES: Duration = 5
    STALE_SESSION_HOURS: Duration = 24
    HEARTBEAT_INTERVAL_MS: Annotated[int, Field(ge=100)] = 60000
    MAX_VERSIONS_DEFAULT: Positive = 5
    MAX_VERSIONS_LIMIT: Positive = 100
    SLACK_WEBHOOK_URL: str = ""
    # Active sessions one stack is sized for: /metrics exports it and the alert rules
    # (deploy/prometheus/alerts.yml) fire relative to it. 1,000: the figure measured on
    # one server (bench/).
    FLEET_CAPACITY_SESSIONS: Positive = 1000
    SLACK_NOTIFY_RETRIES: Count = 5
    SLACK_NOTIFY_RETRY_SECONDS: Duration = 10
    RECENT_COMPLETION_WINDOW: Duration = 24
    PAUSE_RESUME_GRACE_MINUTES: Span = 5
    FILE_CLAIM_TTL_SECONDS: Positive = 1800
    FILE_CLAIM_RECENT_SECONDS: Count = 600
    FILE_CLAIM_OVERLAP_DELAY_MS: Count = 10
    # A web process records claims' overlaps at most this often: after a quiet spell an
    # overlap is recorded FILE_CLAIM_OVERLAP_DELAY_MS after its claim, under load every
    # overlap pending is one batch (one detection, one store, one read). At 10 ms alone,
    # a pass held one overlap at 1,500 agents and the recorder cost 0.47 ms of web CPU
    # per hook call; at most every 500 ms, 0.23.
    FILE_CLAIM_OVERLAP_INTERVAL_MS: Count = 500
    INDEX_FILE_DELAY_MS: Count = 250
    HISTORY_MIRROR_DELAY_MS: Count = 5000
    # A drain costs about the same for one row as for a hundred (a Postgres transaction
    # and one Bolt transaction of a few Cypher statements), and at 700 agents sessions
    # start and end a few times a second: with 50 ms nearly every drain carried one
    # session, and the drains cost web 0.21 ms and the graph server 0.28 ms per hook call;
    # with 1 s, 0.06 and 0.19 (bench.agents). Readers use Postgres while the mirror lags.
    GRAPH_OUTBOX_DELAY_MS: Count = 1000
    # Beat periods (seconds) and leadership.
    HOT_SYNC_INTERVAL_SECONDS: Positive = 300
    CONFLICT_DETECTION_INTERVAL_SECONDS: Positive = 300
    GRAPH_SYNC_INTERVAL_SECONDS: Positive = 300
    GRAPH_FULL_SYNC_INTERVAL_SECONDS: Positive = 3600
    GRAPH_OUTBOX_INTERVAL_SECONDS: Positive = 10
    STALE_SESSION_SWEEP_INTERVAL_SECONDS: Positive = 3600
    BEAT_LOCK_TIMEOUT_SECONDS: Annotated[int, Field(ge=2)] = 30
    # Backups and retention.
    BACKUP_DIR: str = ""
    BACKUP_INTERVAL_SECONDS: Positive = 86400
    BACKUP_KEEP: Positive = 7
    PG_BIN_DIR: str = ""
    # 0: every context version is kept (the audit trail is a task's full
    # history; STORAGE_QUOTA_BYTES bounds storage). N >= 1 is an operator's choice to trim:
    # a task then keeps its newest N versions and every one younger than RETENTION_KEEP_DAYS.
    RETENTION_KEEP_VERSIONS: Count = 0
    RETENTION_KEEP_DAYS: Span = 30
    RETENTION_CHECKPOINTS_PER_TASK: Count = 100
    RETENTION_PRUNE_LABELLED_CHECKPOINTS: bool = False
    RETENTION_EVENT_DAYS: Span = 30
    RETENTION_BATCH_SIZE: Positive = 1000
    RETENTION_INTERVAL_SECONDS: Positive = 86400
    RETENTION_TASK_FILE_DAYS: Span = 30
    RETENTION_TASK_FILE_ACTION: Literal["archive", "delete"] = "archive"
    # The checkpoint check (contexts/services/checkpoint_check.py) verifies every snapshot
    # against its hash this often.
    CHECKPOINT_CHECK_INTERVAL_SECONDS: Positive = 86400
    # Admin logins (django-axes) and the per-token API rate limit (settings.py says how).
    AXES_ENABLED: bool = True
    AXES_FAILURE_LIMIT: Positive = 5
    AXES_COOLOFF_MINUTES: Span = 15
    AXES_LOCKOUT_PARAMETERS: str = "username+ip_address"
    API_RATE_LIMIT: str = "1200/minute"
    # Django and the web server's processes.
    DJANGO_SECRET_KEY: str = ""
    DJANGO_DEBUG: bool = False
    DJANGO_ALLOWED_HOSTS: str = "127.0.0.1,localhost,testserver"
    DJANGO_CSRF_TRUSTED_ORIGINS: str = ""
    # TLS ends at a reverse proxy in front (settings.py says what it turns on).
    BEHIND_TLS_PROXY: bool = False
    # Behind that proxy: Strict-Transport-Security's max-age (0: no header) and its
    # includeSubDomains / preload flags.
    SECURE_HSTS_SECONDS: Count = 31536000
    SECURE_HSTS_INCLUDE_SUBDOMAINS: bool = True
    SECURE_HSTS_PRELOAD: bool = True
    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    # PORT and WEB_WORKERS are read by make run's supervisor (orchestrator.ops.serve) before
    # Django starts; listed here so the migrate it runs first refuses a bad value.
    PORT: Port = 8000
    WEB_WORKERS: Positive = DEFAULT_WEB_WORKERS
    WEB_THREADS: Positive = 8
    TOOL_THREADS: Positive = 8
    WEB_GIL_SWITCH_INTERVAL_MS: Duration = 1

    @field_validator("LOG_LEVEL", mode="before")
    @classmethod
    def _upper_case(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("RETENTION_TASK_FILE_ACTION", mode="before")
    @classmethod
    def _lower_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("DJANGO_CSRF_TRUSTED_ORIGINS", "SLACK_WEBHOOK_URL")
    @classmethod
    def _http_urls(cls, value: str) -> str:
        for url in comma_list(value):
            if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
                raise ValueError("must be http:// or https:// URLs")
        return value

    @field_validator("AXES_LOCKOUT_PARAMETERS")
    @classmethod
    def _lockout_groups(cls, value: str) -> str:
        if not all(group and set(group) <= {"username", "ip_address", "user_agent"}
                   for group in lockout_groups(value)):
            raise ValueError("comma-separated groups of username, ip_address, user_agent "
                             "joined by '+'")
        return value

    @field_validator("API_RATE_LIMIT")
    @classmethod
    def _rate(cls, value: str) -> str:
        if value.lower() not in RATE_LIMIT_OFF:
            from limits import parse

            try:
                parse(value)
            except ValueError:
                raise ValueError("not a rate like '1200/minute'") from None
        return value

    # -- derived values, checked by load_settings -------------------------------------------

    @cached_property
    def database(self) -> dict[str, Any]:
        """Django's DATABASES entry (without ENGINE): DATABASE_URL or the POSTGRES_* parts."""
        if not self.DATABASE_URL:
            return {"NAME": self.POSTGRES_DB, "USER": self.POSTGRES_USER,
                    "PASSWORD": self.POSTGRES_PASSWORD, "HOST": self.POSTGRES_HOST,
                    "PORT": str(self.POSTGRES_PORT), "OPTIONS": {}}
        return parse_database_url(self.DATABASE_URL)

    @cached_property
    def redis_url(self) -> str:
        if self.REDIS_URL:
            return _check_url("REDIS_URL", self.REDIS_URL, ("redis", "rediss", "unix"))
        return f"redis://{self.REDIS_HOST}:{self.REDIS_PORT}/0"

    @cached_property
    def celery_broker_url(self) -> str:
        """CELERY_BROKER_URL, else the Redis of REDIS_URL as kombu spells it: a Unix socket
        ``unix://`` (redis-py's spelling) is kombu's ``redis+socket://``, and its database
        (redis-py's ``?db=N``) kombu's ``?virtual_host=N``: the broker and the beat's lock
        live in the database REDIS_URL names, so stacks given different databases of one
        Redis never share a queue or a leader."""
        if self.CELERY_BROKER_URL:
            return self.CELERY_BROKER_URL
        if self.redis_url.startswith("unix://"):
            location, _, query = self.redis_url[len("unix://"):].partition("?")
            database = dict(parse_qsl(query)).get("db", "0")
            return "redis+socket://" + location + (
                f"?virtual_host={database}" if database not in ("", "0") else "")
        return self.redis_url

    @cached_property
    def neomodel_url(self) -> str:
        """The Bolt server as one URL, credentials percent-encoded (``bolt_target`` reads it)."""
        if self.NEOMODEL_DATABASE_URL:
            bolt_target(self.NEOMODEL_DATABASE_URL, "NEOMODEL_DATABASE_URL")  # checks it
            return self.NEOMODEL_DATABASE_URL
        uri = _check_url("NEO4J_URI", self.NEO4J_URI, _BOLT_SCHEMES)
        parts = urlsplit(uri)
        if parts.username is not None:
            raise ConfigError(CONFIG_INVALID, "NEO4J_URI",
                              "must not hold credentials: set NEO4J_USER and NEO4J_PASSWORD")
        auth = f"{quote(self.NEO4J_USER, safe='')}:{quote(self.NEO4J_PASSWORD, safe='')}@"
        return f"{parts.scheme}://{auth}{parts.netloc}{parts.path}"


RATE_LIMIT_OFF = frozenset({"", "0", "off", "false", "no", "none"})


def lockout_groups(value: str) -> list[list[str]]:
    """AXES_LOCKOUT_PARAMETERS: "username+ip_address,user_agent" -> [[...], [...]]."""
    return [[part.strip() for part in group.split("+") if part.strip()]
            for group in value.split(",")]


def resolve_dir(base_dir: Path, value: str) -> Path:
    """CONTEXT_DIR / RECOVERY_DIR: a relative path is below the checkout (``BASE_DIR``)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base_dir / path)


def comma_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Replace ``${VAR:default}`` in every string of a parsed YAML tree."""
    if isinstance(value, str):
        return _INTERPOLATION.sub(lambda m: env.get(m.group(1), m.group(2) or ""), value)
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    return value


def load_yaml_settings(path: str, env: Mapping[str, str]) -> dict[str, str]:
    """Flatten an ORCHESTRATOR_CONFIG file into {SETTING: value-as-string}."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(CONFIG_MISSING, "ORCHESTRATOR_CONFIG", f"file not found: {path}")
    try:
        tree = yaml.safe_load(file.read_text()) or {}
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        raise ConfigError(CONFIG_INVALID, "ORCHESTRATOR_CONFIG", f"not valid YAML{where}") from exc
    if not isinstance(tree, dict):
        raise ConfigError(CONFIG_INVALID, "ORCHESTRATOR_CONFIG", "top level must be a mapping")
    tree = interpolate(tree, env)
    flat: dict[str, str] = {}
    for setting, keys in _YAML_PATHS.items():
        node: Any = tree
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None and not isinstance(node, dict | list):
            flat[setting] = str(node).lower() if isinstance(node, bool) else str(node)
    return flat


# pydantic's error types, said as this project's one-line messages.
_MESSAGES = {
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_parsing": "must be true or false",
    "string_too_short": "must not be empty",
    "string_pattern_mismatch": "has characters that are not allowed",
}


def _describe(error: Mapping[str, Any]) -> str:
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind == "greater_than_equal":
        return f"must be >= {ctx['ge']}"
    if kind == "greater_than":
        return f"must be > {ctx['gt']}"
    if kind == "less_than_equal":
        return f"must be <= {ctx['le']}"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return _MESSAGES.get(kind, error["msg"][:1].lower() + error["msg"][1:])


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Every setting from ``env`` (default ``os.environ``) over the YAML file, validated."""
    env = os.environ if env is None else env
    file_values: dict[str, str] = {}
    if env.get("ORCHESTRATOR_CONFIG"):
        file_values = load_yaml_settings(env["ORCHESTRATOR_CONFIG"], env)
    raw = {}
    for name in Settings.model_fields:
        value = env.get(name) or file_values.get(name)
        if value is not None and value.strip() != "":
            raw[name] = value
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        name = str(error["loc"][0])
        got = "" if name in SECRETS else f", got {raw.get(name)!r}"
        raise ConfigError(CONFIG_INVALID, name, f"{_describe(error)}{got}") from None
    if settings.DB_POOL_MAX_SIZE and settings.DB_POOL_MIN_SIZE > settings.DB_POOL_MAX_SIZE:
        raise ConfigError(CONFIG_INVALID, "DB_POOL_MIN_SIZE",
                          f"({settings.DB_POOL_MIN_SIZE}) exceeds DB_POOL_MAX_SIZE")
    if settings.MAX_VERSIONS_DEFAULT > settings.MAX_VERSIONS_LIMIT:
        raise ConfigError(CONFIG_INVALID, "MAX_VERSIONS_DEFAULT",
                          f"({settings.MAX_VERSIONS_DEFAULT}) exceeds MAX_VERSIONS_LIMIT")
    # The derived connection settings raise ConfigError themselves: computed now, at start-up.
    settings.database  # noqa: B018
    settings.redis_url  # noqa: B018
    settings.neomodel_url  # noqa: B018
    return settings


# -- connection URLs -------------------------------------------------------------------------

def parse_database_url(url: str) -> dict[str, Any]:
    """DATABASES fields of a ``postgresql://`` URL; its query options go to OPTIONS."""
    name = "DATABASE_URL"
    if urlsplit(url).scheme not in ("postgres", "postgresql"):
        raise ConfigError(CONFIG_INVALID, name, "must start with postgresql://")
    try:
        config = dj_database_url.parse(url)
    except ValueError:  # a bad port, or parts that are not percent-encoded
        raise ConfigError(CONFIG_INVALID, name,
                          "is not a valid URL (percent-encode @ / # : in the password)") from None
    options = {}
    for key, value in (config.get("OPTIONS") or {}).items():
        if isinstance(value, list):
            raise ConfigError(CONFIG_INVALID, name, f"option {key!r} is given twice")
        # dj-database-url reads "5" as 5 and "true" as True; libpq takes the text as written.
        options[key] = str(value).lower() if isinstance(value, bool) else str(value)
    unknown = sorted(set(options) - _libpq_keywords() - _DRIVER_OPTIONS) if options else []
    if unknown:
        raise ConfigError(CONFIG_INVALID, name,
                          f"unknown connection option {unknown[0]!r} (libpq keywords only)")
    # ?host=/socket/dir and ?port= are the address: kept where Django and backup look.
    host = options.pop("host", "") or config.get("HOST") or ""
    port = options.pop("port", "") or str(config.get("PORT") or "")
    if not config.get("NAME") and not options.get("dbname"):
        raise ConfigError(CONFIG_MISSING, name, "has no database name")
    if not host:
        raise ConfigError(CONFIG_MISSING, name, "has no host")
    return {"NAME": config.get("NAME") or options.pop("dbname"), "USER": config.get("USER", ""),
            "PASSWORD": config.get("PASSWORD", ""), "HOST": host, "PORT": port,
            "OPTIONS": options}


def _libpq_keywords() -> set[str]:
    # Asked of libpq itself, so a keyword of a newer libpq is known the day it ships; psycopg
    # is imported only for a URL with options (it costs ~0.3 s, paid later anyway by Django).
    from psycopg import pq

    return {option.keyword.decode() for option in pq.Conninfo.get_defaults()}


def libpq_environment(options: Mapping[str, Any]) -> dict[str, str]:
    """The PG* variables that give a libpq client (pg_dump) the same connection options."""
    if not options:
        return {}
    from psycopg import pq

    names = {o.keyword.decode(): o.envvar.decode() for o in pq.Conninfo.get_defaults()
             if o.envvar}
    return {names[key]: str(value) for key, value in options.items()
            if key in names and key not in ("options", "connect_timeout")}


def bolt_target(url: str, setting: str = "NEOMODEL_DATABASE_URL",
                ) -> tuple[str, tuple[str, str], str]:
    """``(address, (user, password), database)`` of a Bolt URL with percent-encoded credentials.

    neomodel splits a URL itself and neither decodes ``%40`` nor survives a raw ``#`` or
    ``/`` in a password, so the graph backend connects with this address and auth pair.
    """
    parts = urlsplit(url)
    if parts.scheme not in _BOLT_SCHEMES:
        raise ConfigError(CONFIG_INVALID, setting,
                          f"must start with one of {', '.join(_BOLT_SCHEMES)}")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise ConfigError(CONFIG_INVALID, setting,
                          "is not a valid URL (percent-encode @ / # : in the password)") from None
    if parts.fragment or parts.query or not parts.hostname:
        raise ConfigError(CONFIG_INVALID, setting,
                          "is not a valid URL (percent-encode @ / # : in the password)")
    if parts.username is None or parts.password is None:
        raise ConfigError(CONFIG_MISSING, setting, "has no user:password@")
    address = f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[1]}"
    return address, (unquote(parts.username), unquote(parts.password)), parts.path.strip("/")


def _check_url(name: str, url: str, schemes: tuple[str, ...]) -> str:
    parsed = urlsplit(url)
    if parsed.scheme not in schemes:
        raise ConfigError(CONFIG_INVALID, name, f"must start with one of {', '.join(schemes)}")
    try:
        parsed.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise ConfigError(CONFIG_INVALID, name, "port is not a number") from None
    if parsed.scheme != "unix" and not parsed.hostname:
        raise ConfigError(CONFIG_MISSING, name, "has no host")
    return url
