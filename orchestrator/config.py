"""Configuration from the environment (spec section 10, CONTRACT.md) and the optional YAML file.

Precedence: environment variable > ORCHESTRATOR_CONFIG file (spec 10.4 format, with
``${VAR:default}`` interpolation) > built-in default. Anything malformed raises
``ConfigError`` carrying E1690 (invalid) or E1691 (missing) and the setting's name, so
start-up can stop with one line that says what to fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import yaml

CONFIG_INVALID = "E1690"
CONFIG_MISSING = "E1691"


class ConfigError(Exception):
    def __init__(self, code: str, setting: str, message: str):
        self.code = code
        self.setting = setting
        super().__init__(f"{code}: {setting}: {message}")


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")

# Where each flat setting lives in the spec 10.4 YAML file.
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
    """Flatten a spec 10.4 file into {SETTING: value-as-string}."""
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


@dataclass
class Settings:
    """Typed view of every setting; built by ``load_settings``."""

    database: dict[str, Any]
    redis_url: str
    celery_broker_url: str
    mcp_schema: str
    project_id: str
    redis_key_prefix: str
    neo4j_uri: str
    neo4j_user: str
    neo4j_password: str
    neomodel_url: str
    enable_neo4j: bool
    enable_file_sync: bool
    enable_auto_recovery_check: bool
    enable_conflict_detection: bool
    context_dir: Path
    recovery_dir: Path
    crash_threshold_minutes: float
    stale_session_hours: float
    heartbeat_interval_ms: int
    redis_hot_context_ttl: int
    redis_task_context_ttl: int
    redis_lock_ttl: int
    max_versions_default: int
    max_versions_limit: int
    hot_sync_interval_seconds: int
    slack_webhook_url: str
    beat_lock_timeout_seconds: int
    extra: dict[str, str] = field(default_factory=dict)


class _Reader:
    def __init__(self, env: Mapping[str, str], file_values: Mapping[str, str]):
        self.env = env
        self.file_values = file_values

    def raw(self, name: str, default: str | None = None) -> str | None:
        if name in self.env and self.env[name] != "":
            return self.env[name]
        if name in self.file_values and self.file_values[name] != "":
            return self.file_values[name]
        return default

    def string(self, name: str, default: str) -> str:
        return self.raw(name, default) or default

    def integer(self, name: str, default: int, minimum: int = 0) -> int:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(CONFIG_INVALID, name, f"must be an integer, got {value!r}") from None
        if number < minimum:
            raise ConfigError(CONFIG_INVALID, name, f"must be >= {minimum}, got {number}")
        return number

    def number(self, name: str, default: float, minimum: float = 0.0) -> float:
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(CONFIG_INVALID, name, f"must be a number, got {value!r}") from None
        if number <= minimum:
            raise ConfigError(CONFIG_INVALID, name, f"must be > {minimum}, got {number}")
        return number

    def boolean(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise ConfigError(CONFIG_INVALID, name, f"must be true or false, got {value!r}")


_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_:.\-]{1,64}$")


def parse_database_url(url: str) -> dict[str, Any]:
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ConfigError(CONFIG_INVALID, "DATABASE_URL", "must start with postgresql://")
    query = parse_qs(parsed.query)
    host = query.get("host", [parsed.hostname or ""])[0]
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise ConfigError(CONFIG_MISSING, "DATABASE_URL", "has no database name")
    if not host:
        raise ConfigError(CONFIG_MISSING, "DATABASE_URL", "has no host")
    try:
        port = parsed.port
    except ValueError:
        raise ConfigError(CONFIG_INVALID, "DATABASE_URL", "port is not a number") from None
    return {
        "NAME": name,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(port or ""),
    }


def _check_url(name: str, url: str, schemes: tuple[str, ...]) -> str:
    parsed = urlparse(url)
    if parsed.scheme not in schemes:
        raise ConfigError(CONFIG_INVALID, name, f"must start with one of {', '.join(schemes)}")
    try:
        parsed.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise ConfigError(CONFIG_INVALID, name, "port is not a number") from None
    if parsed.scheme != "unix" and not parsed.hostname:
        raise ConfigError(CONFIG_MISSING, name, "has no host")
    return url


def load_settings(env: Mapping[str, str] | None = None, base_dir: Path | None = None) -> Settings:
    env = os.environ if env is None else env
    base_dir = base_dir or Path.cwd()
    file_values: dict[str, str] = {}
    if env.get("ORCHESTRATOR_CONFIG"):
        file_values = load_yaml_settings(env["ORCHESTRATOR_CONFIG"], env)
    read = _Reader(env, file_values)

    schema = read.string("MCP_SCHEMA", "mcp_contexts")
    if not _SCHEMA_NAME.match(schema):
        raise ConfigError(CONFIG_INVALID, "MCP_SCHEMA", f"not a valid schema name: {schema!r}")

    if read.raw("DATABASE_URL"):
        database = parse_database_url(read.raw("DATABASE_URL") or "")
    else:
        database = {
            "NAME": read.string("POSTGRES_DB", "consolidator"),
            "USER": read.string("POSTGRES_USER", "postgres"),
            "PASSWORD": read.string("POSTGRES_PASSWORD", ""),
            "HOST": read.string("POSTGRES_HOST", "localhost"),
            "PORT": str(read.integer("POSTGRES_PORT", 5433, minimum=1)),
        }

    if read.raw("REDIS_URL"):
        redis_url = _check_url(
            "REDIS_URL", read.raw("REDIS_URL") or "", ("redis", "rediss", "unix"))
    else:
        host = read.string("REDIS_HOST", "localhost")
        port = read.integer("REDIS_PORT", 6379, minimum=1)
        redis_url = f"redis://{host}:{port}/0"
    broker = read.raw("CELERY_BROKER_URL") or redis_url

    prefix = read.string("REDIS_KEY_PREFIX", "context:")
    if not _PREFIX.match(prefix):
        raise ConfigError(CONFIG_INVALID, "REDIS_KEY_PREFIX", f"not a valid key prefix: {prefix!r}")

    neo4j_uri = _check_url(
        "NEO4J_URI",
        read.string("NEO4J_URI", "bolt://localhost:7687"),
        ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"),
    )
    neo4j_user = read.string("NEO4J_USER", "neo4j")
    neo4j_password = read.string("NEO4J_PASSWORD", "")
    neomodel_url = read.raw("NEOMODEL_DATABASE_URL") or _neomodel_url(
        neo4j_uri, neo4j_user, neo4j_password
    )

    max_default = read.integer("MAX_VERSIONS_DEFAULT", 5, minimum=1)
    max_limit = read.integer("MAX_VERSIONS_LIMIT", 100, minimum=1)
    if max_default > max_limit:
        raise ConfigError(
            CONFIG_INVALID, "MAX_VERSIONS_DEFAULT", f"({max_default}) exceeds MAX_VERSIONS_LIMIT"
        )

    return Settings(
        database=database,
        redis_url=redis_url,
        celery_broker_url=broker,
        mcp_schema=schema,
        project_id=read.string("MCP_PROJECT_ID", "story-portal-app"),
        redis_key_prefix=prefix,
        neo4j_uri=neo4j_uri,
        neo4j_user=neo4j_user,
        neo4j_password=neo4j_password,
        neomodel_url=neomodel_url,
        enable_neo4j=read.boolean("ENABLE_NEO4J", True),
        enable_file_sync=read.boolean("ENABLE_FILE_SYNC", True),
        enable_auto_recovery_check=read.boolean("ENABLE_AUTO_RECOVERY_CHECK", True),
        enable_conflict_detection=read.boolean("ENABLE_CONFLICT_DETECTION", True),
        context_dir=_resolve(base_dir, read.string("CONTEXT_DIR", ".claude/contexts")),
        recovery_dir=_resolve(base_dir, read.string("RECOVERY_DIR", ".claude/recovery")),
        crash_threshold_minutes=read.number("CRASH_THRESHOLD_MINUTES", 5),
        stale_session_hours=read.number("STALE_SESSION_HOURS", 24),
        heartbeat_interval_ms=read.integer("HEARTBEAT_INTERVAL_MS", 60000, minimum=100),
        redis_hot_context_ttl=read.integer("REDIS_HOT_CONTEXT_TTL", 3600, minimum=1),
        redis_task_context_ttl=read.integer("REDIS_TASK_CONTEXT_TTL", 7200, minimum=1),
        redis_lock_ttl=read.integer("REDIS_LOCK_TTL", 300, minimum=1),
        max_versions_default=max_default,
        max_versions_limit=max_limit,
        hot_sync_interval_seconds=read.integer("HOT_SYNC_INTERVAL_SECONDS", 300, minimum=1),
        slack_webhook_url=read.string("SLACK_WEBHOOK_URL", ""),
        beat_lock_timeout_seconds=read.integer("BEAT_LOCK_TIMEOUT_SECONDS", 30, minimum=2),
    )


def _neomodel_url(uri: str, user: str, password: str) -> str:
    parsed = urlparse(uri)
    auth = f"{user}:{password}@" if user else ""
    return f"{parsed.scheme}://{auth}{parsed.netloc}"


def _resolve(base_dir: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base_dir / path)


# --- Retention (orchestrator/ops/retention.py) --------------------------------------------
# Trimming history is an operator's choice: by default every context version is kept (the
# spec's audit trail, 000 §8.3.3, is the full history; STORAGE_QUOTA_BYTES bounds storage).
# RETENTION_KEEP_VERSIONS=N (N >= 1) turns version pruning on: a task then keeps its newest
# N versions and every version younger than RETENTION_KEEP_DAYS. Empty or 0: keep all.
TASK_FILE_ACTIONS = ("archive", "delete")


def _non_negative(read: _Reader, name: str, default: float) -> float:
    value = read.raw(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(CONFIG_INVALID, name, f"must be a number, got {value!r}") from None
    if not 0 <= number < float("inf"):  # also refuses nan
        raise ConfigError(CONFIG_INVALID, name, f"must be a number >= 0, got {value!r}")
    return number


def load_retention_settings(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The RETENTION_* settings, checked: a bad value is E1690 naming the setting."""
    read = _Reader(os.environ if env is None else env, {})
    action = read.string("RETENTION_TASK_FILE_ACTION", "archive").strip()
    if action not in TASK_FILE_ACTIONS:
        raise ConfigError(CONFIG_INVALID, "RETENTION_TASK_FILE_ACTION",
                          f"must be archive or delete, got {action!r}")
    return {
        "RETENTION_KEEP_VERSIONS": read.integer("RETENTION_KEEP_VERSIONS", 0),
        "RETENTION_KEEP_DAYS": _non_negative(read, "RETENTION_KEEP_DAYS", 30.0),
        "RETENTION_CHECKPOINTS_PER_TASK": read.integer("RETENTION_CHECKPOINTS_PER_TASK", 100),
        "RETENTION_PRUNE_LABELLED_CHECKPOINTS": read.boolean(
            "RETENTION_PRUNE_LABELLED_CHECKPOINTS", False),
        "RETENTION_EVENT_DAYS": _non_negative(read, "RETENTION_EVENT_DAYS", 30.0),
        "RETENTION_BATCH_SIZE": read.integer("RETENTION_BATCH_SIZE", 1000, minimum=1),
        "RETENTION_INTERVAL_SECONDS": read.integer("RETENTION_INTERVAL_SECONDS", 86400,
                                                   minimum=1),
        "RETENTION_TASK_FILE_DAYS": _non_negative(read, "RETENTION_TASK_FILE_DAYS", 30.0),
        "RETENTION_TASK_FILE_ACTION": action,
    }
