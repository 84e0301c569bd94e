"""Configuration: env, the spec 10.4 YAML file with ${VAR:default}, and E1690/E1691 at start-up."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from foundation.config import ConfigError, bolt_target, load_settings, resolve_dir

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = """
version: 1
postgres:
  host: ${POSTGRES_HOST:db.internal}
  port: ${POSTGRES_PORT:5433}
  database: ${POSTGRES_DB:consolidator}
  schema: ${MCP_SCHEMA:mcp_contexts}
redis:
  host: ${REDIS_HOST:localhost}
  port: ${REDIS_PORT:6379}
  keyPrefix: ${REDIS_KEY_PREFIX:context:}
  ttl:
    hotContext: 1800
    taskContext: 7200
    locks: 300
neo4j:
  uri: ${NEO4J_URI:bolt://localhost:7687}
  enabled: ${ENABLE_NEO4J:true}
recovery:
  crashThresholdMinutes: 5
  staleSessionHours: 24
  heartbeatIntervalMs: 60000
features:
  enableFileSync: true
  enableAutoRecoveryCheck: true
  enableConflictDetection: false
"""


def test_defaults_match_the_spec():
    s = load_settings({})
    assert s.MCP_SCHEMA == "mcp_contexts"
    assert s.MCP_PROJECT_ID == "story-portal-app"
    assert s.database["HOST"] == "localhost" and s.database["PORT"] == "5433"
    assert s.database["NAME"] == "consolidator"
    assert s.redis_url == "redis://localhost:6379/0"
    assert s.REDIS_KEY_PREFIX == "context:"
    assert (s.REDIS_HOT_CONTEXT_TTL, s.REDIS_TASK_CONTEXT_TTL, s.REDIS_LOCK_TTL) == (3600, 7200, 300)
    assert (s.CRASH_THRESHOLD_MINUTES, s.STALE_SESSION_HOURS, s.HEARTBEAT_INTERVAL_MS) == (5, 24, 60000)
    assert (s.MAX_VERSIONS_DEFAULT, s.MAX_VERSIONS_LIMIT) == (5, 100)
    assert s.ENABLE_NEO4J and s.ENABLE_FILE_SYNC and s.ENABLE_CONFLICT_DETECTION
    assert resolve_dir(Path("/srv"), s.CONTEXT_DIR) == Path("/srv/.claude/contexts")
    assert resolve_dir(Path("/srv"), s.RECOVERY_DIR) == Path("/srv/.claude/recovery")
    assert s.BEAT_LOCK_TIMEOUT_SECONDS == 30
    assert (s.FILE_CLAIM_TTL_SECONDS, s.LOG_LEVEL, s.RETENTION_TASK_FILE_ACTION) == (1800, "INFO", "archive")


def test_urls_win_over_parts():
    s = load_settings({"DATABASE_URL": "postgresql://u:p%40ss@h:6000/d", "POSTGRES_HOST": "x",
                       "REDIS_URL": "redis://r:1234/3", "REDIS_HOST": "y"})
    assert s.database == {"NAME": "d", "USER": "u", "PASSWORD": "p@ss", "HOST": "h", "PORT": "6000",
                          "OPTIONS": {}}
    assert s.redis_url == "redis://r:1234/3" and s.celery_broker_url == "redis://r:1234/3"


def test_a_unix_socket_redis_url_is_the_brokers_too():
    # REDIS_URL alone (as docker-compose.yml gives it) must reach Celery, whose kombu does
    # not know redis-py's unix:// spelling.
    s = load_settings({"REDIS_URL": "unix://:pw@/run/redis/redis.sock?db=0"})
    assert s.redis_url == "unix://:pw@/run/redis/redis.sock?db=0"
    assert s.celery_broker_url == "redis+socket://:pw@/run/redis/redis.sock"
    # Another database of the same Redis: the broker (and the beat's lock) follow it.
    s = load_settings({"REDIS_URL": "unix://:pw@/run/redis/redis.sock?db=3"})
    assert s.celery_broker_url == "redis+socket://:pw@/run/redis/redis.sock?virtual_host=3"


def test_database_url_keeps_its_connection_options():
    s = load_settings({"DATABASE_URL": "postgresql://u@db.internal:5432/d?sslmode=verify-full"
                       "&sslrootcert=/etc/ssl/ca.pem&target_session_attrs=read-write"
                       "&connect_timeout=10&application_name=orchestrator"})
    assert s.database["OPTIONS"] == {
        "sslmode": "verify-full", "sslrootcert": "/etc/ssl/ca.pem",
        "target_session_attrs": "read-write", "connect_timeout": "10",
        "application_name": "orchestrator"}
    # A socket directory given as ?host= is the address, where Django and backup look.
    s = load_settings({"DATABASE_URL": "postgresql://u@/d?host=/run/postgresql&port=5433"})
    assert (s.database["HOST"], s.database["PORT"], s.database["OPTIONS"]) == (
        "/run/postgresql", "5433", {})


def test_bolt_credentials_may_hold_any_character():
    password = "p@ss/w#rd:%41 x"
    s = load_settings({"NEO4J_URI": "bolt://graph:7687", "NEO4J_USER": "r@ot",
                       "NEO4J_PASSWORD": password})
    assert bolt_target(s.neomodel_url) == ("bolt://graph:7687", ("r@ot", password), "")
    # The one-URL form takes them percent-encoded, as any URL does.
    s = load_settings({"NEOMODEL_DATABASE_URL": "neo4j+s://root:p%40ss%2Fw%23rd@graph:7687/db"})
    assert bolt_target(s.neomodel_url) == ("neo4j+s://graph:7687", ("root", "p@ss/w#rd"), "db")


def test_yaml_file_with_interpolation_and_env_precedence(tmp_path):
    config = tmp_path / "orchestrator.yaml"
    config.write_text(SPEC_FILE)
    s = load_settings({"ORCHESTRATOR_CONFIG": str(config), "POSTGRES_PORT": "6543",
                       "REDIS_LOCK_TTL": "60"})
    assert s.database["HOST"] == "db.internal"       # the file's ${VAR:default}
    assert s.database["PORT"] == "6543"              # interpolated from env
    assert s.REDIS_HOT_CONTEXT_TTL == 1800           # from the file
    assert s.REDIS_LOCK_TTL == 60                    # env wins over the file
    assert s.ENABLE_CONFLICT_DETECTION is False


def test_yaml_values_are_checked_like_env_values(tmp_path):
    config = tmp_path / "orchestrator.yaml"
    config.write_text("redis:\n  ttl:\n    locks: -5\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({"ORCHESTRATOR_CONFIG": str(config)})
    assert str(caught.value) == "E1690: REDIS_LOCK_TTL: must be >= 1, got '-5'"


@pytest.mark.parametrize(("env", "code", "setting"), [
    ({"REDIS_PORT": "abc"}, "E1690", "REDIS_PORT"),
    ({"REDIS_PORT": "70000"}, "E1690", "REDIS_PORT"),
    ({"CRASH_THRESHOLD_MINUTES": "-1"}, "E1690", "CRASH_THRESHOLD_MINUTES"),
    ({"CRASH_THRESHOLD_MINUTES": "nan"}, "E1690", "CRASH_THRESHOLD_MINUTES"),
    ({"ENABLE_NEO4J": "maybe"}, "E1690", "ENABLE_NEO4J"),
    ({"DATABASE_URL": "mysql://h/d"}, "E1690", "DATABASE_URL"),
    ({"DATABASE_URL": "postgresql://h:5432/"}, "E1691", "DATABASE_URL"),
    ({"DATABASE_URL": "postgresql://u:p@ss@h:port/d"}, "E1690", "DATABASE_URL"),
    ({"DATABASE_URL": "postgresql://h/d?sslmod=require"}, "E1690", "DATABASE_URL"),
    ({"DATABASE_URL": "postgresql://h/d?sslmode=require&sslmode=disable"}, "E1690", "DATABASE_URL"),
    ({"NEO4J_URI": "http://x"}, "E1690", "NEO4J_URI"),
    ({"NEO4J_URI": "bolt://root:secret@x:7687"}, "E1690", "NEO4J_URI"),
    ({"NEOMODEL_DATABASE_URL": "bolt://root:p@ss#rd@x:7687"}, "E1690", "NEOMODEL_DATABASE_URL"),
    ({"NEOMODEL_DATABASE_URL": "bolt://x:7687"}, "E1691", "NEOMODEL_DATABASE_URL"),
    ({"MCP_SCHEMA": "bad-schema;drop"}, "E1690", "MCP_SCHEMA"),
    ({"MAX_VERSIONS_DEFAULT": "500"}, "E1690", "MAX_VERSIONS_DEFAULT"),
    ({"BEAT_LOCK_TIMEOUT_SECONDS": "1"}, "E1690", "BEAT_LOCK_TIMEOUT_SECONDS"),
    ({"ORCHESTRATOR_CONFIG": "/nonexistent/config.yaml"}, "E1691", "ORCHESTRATOR_CONFIG"),
    # The settings settings.py used to read with int()/float() or not at all.
    ({"FILE_CLAIM_TTL_SECONDS": "abc"}, "E1690", "FILE_CLAIM_TTL_SECONDS"),
    ({"FILE_CLAIM_TTL_SECONDS": "-1"}, "E1690", "FILE_CLAIM_TTL_SECONDS"),
    ({"FILE_CLAIM_RECENT_SECONDS": "-600"}, "E1690", "FILE_CLAIM_RECENT_SECONDS"),
    ({"STORAGE_QUOTA_BYTES": "-1"}, "E1690", "STORAGE_QUOTA_BYTES"),
    ({"DB_CONNECT_TIMEOUT": "0"}, "E1690", "DB_CONNECT_TIMEOUT"),
    ({"NEO4J_READ_TIMEOUT_SECONDS": "0"}, "E1690", "NEO4J_READ_TIMEOUT_SECONDS"),
    ({"RETENTION_BATCH_SIZE": "0"}, "E1690", "RETENTION_BATCH_SIZE"),
    ({"RETENTION_KEEP_DAYS": "-3"}, "E1690", "RETENTION_KEEP_DAYS"),
    ({"RETENTION_TASK_FILE_ACTION": "shred"}, "E1690", "RETENTION_TASK_FILE_ACTION"),
    ({"RETENTION_PRUNE_LABELLED_CHECKPOINTS": "sometimes"}, "E1690",
     "RETENTION_PRUNE_LABELLED_CHECKPOINTS"),
    ({"DJANGO_DEBUG": "maybe"}, "E1690", "DJANGO_DEBUG"),
    ({"DJANGO_CSRF_TRUSTED_ORIGINS": "example.com"}, "E1690", "DJANGO_CSRF_TRUSTED_ORIGINS"),
    ({"LOG_LEVEL": "loud"}, "E1690", "LOG_LEVEL"),
    ({"TOOL_THREADS": "0"}, "E1690", "TOOL_THREADS"),
    ({"WEB_GIL_SWITCH_INTERVAL_MS": "-1"}, "E1690", "WEB_GIL_SWITCH_INTERVAL_MS"),
    ({"PORT": "http"}, "E1690", "PORT"),
])
def test_bad_values_name_the_setting(env, code, setting):
    with pytest.raises(ConfigError) as caught:
        load_settings(env)
    assert caught.value.code == code and caught.value.setting == setting
    assert str(caught.value).startswith(f"{code}: {setting}: ")
    assert "\n" not in str(caught.value)


def test_secrets_are_not_echoed():
    with pytest.raises(ConfigError) as caught:
        load_settings({"DATABASE_URL": "postgresql://u:hunter2@h:port/d"})
    assert "hunter2" not in str(caught.value)


def test_case_of_words_is_free_but_not_their_spelling():
    s = load_settings({"LOG_LEVEL": "debug", "RETENTION_TASK_FILE_ACTION": "Delete",
                       "ENABLE_NEO4J": "Off", "DJANGO_DEBUG": "YES"})
    assert (s.LOG_LEVEL, s.RETENTION_TASK_FILE_ACTION) == ("DEBUG", "delete")
    assert s.ENABLE_NEO4J is False and s.DJANGO_DEBUG is True


def test_invalid_yaml_is_e1690(tmp_path):
    config = tmp_path / "broken.yaml"
    config.write_text("postgres: [unclosed\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({"ORCHESTRATOR_CONFIG": str(config)})
    assert caught.value.code == "E1690"


@pytest.mark.parametrize(("name", "value", "line"), [
    ("REDIS_PORT", "not-a-port", "E1690: REDIS_PORT: must be an integer, got 'not-a-port'"),
    ("FILE_CLAIM_TTL_SECONDS", "abc", "E1690: FILE_CLAIM_TTL_SECONDS: must be an integer, got 'abc'"),
    ("FILE_CLAIM_TTL_SECONDS", "-1", "E1690: FILE_CLAIM_TTL_SECONDS: must be >= 1, got '-1'"),
    ("DATABASE_URL", "postgresql://u@h/d?sslmod=require",
     "E1690: DATABASE_URL: unknown connection option 'sslmod' (libpq keywords only)"),
])
def test_startup_stops_with_one_line(name, value, line):
    env = {**os.environ, name: value}
    env.pop("REDIS_URL", None)
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [line]


@pytest.mark.parametrize(("value", "expected"), [
    ("true", "('HTTP_X_FORWARDED_PROTO', 'https') True True"),
    ("", "None False False"),
])
def test_behind_a_tls_proxy_trusts_its_scheme_and_keeps_cookies_secure(value, expected):
    env = {**os.environ, "BEHIND_TLS_PROXY": value, "DJANGO_SETTINGS_MODULE": "orchestrator.settings"}
    script = ("from django.conf import settings as s; print(s.SECURE_PROXY_SSL_HEADER, "
              "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == expected


def test_a_bad_tls_proxy_flag_stops_start_up():
    env = {**os.environ, "BEHIND_TLS_PROXY": "maybe"}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("E1690: BEHIND_TLS_PROXY:")


# Reads of the process environment outside foundation/config.py, each with its reason.
# Everything else a server module needs is a field of foundation.config.Settings.
ENVIRONMENT_READERS = {
    # make run's launcher and supervisor: they run before Django and set its environment.
    "orchestrator/ops/launcher.py", "orchestrator/ops/embedded.py",
    "orchestrator/ops/localservers.py", "orchestrator/ops/serve.py",
    "orchestrator/ops/webserver.py",
    # make fuzz's runner: starts a web server of its own with the environment it was given.
    "orchestrator/ops/fuzz.py",
    # DJANGO_SETTINGS_MODULE, and prometheus_client's PROMETHEUS_MULTIPROC_DIR before any metric.
    "orchestrator/__init__.py", "orchestrator/celery.py", "orchestrator/asgi.py",
    "orchestrator/wsgi.py", "foundation/observability/metrics.py",
    # OTEL_*: the OpenTelemetry SDK reads its own variables; this only asks whether one is set.
    "foundation/observability/tracing.py",
    # The whole environment handed on to pg_dump / pg_restore.
    "orchestrator/ops/backup.py",
    # The variables handed on to the MCP stdio entry it writes, and where make run serves.
    "orchestrator/ops/management/commands/claude_setup.py",
}
SERVER_PACKAGES = ("orchestrator", "contexts", "sessions", "conflicts", "claims", "graph", "locks",
                   "console")


def test_server_code_reads_settings_not_the_environment():
    readers = set()
    for package in SERVER_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if relative != "foundation/config.py" and re.search(
                    r"\bos\.(environ|getenv)\b|\bgetenv\(", path.read_text()):
                readers.add(relative)
    assert readers <= ENVIRONMENT_READERS, sorted(readers - ENVIRONMENT_READERS)


@pytest.mark.parametrize(("serves", "pool_max", "expected"), [
    ("1", "", "0 2 10"),          # the web server's processes: a pool, 2 to 10
    ("1", "4", "0 2 4"),
    ("1", "0", "60 None None"),   # DB_POOL_MAX_SIZE=0: no pool, persistent connections
    ("", "", "60 None None"),     # manage.py, Celery, the tests: no pool
])
def test_the_web_servers_processes_borrow_from_a_connection_pool(serves, pool_max, expected):
    env = {**os.environ, "ORCHESTRATOR_SERVES_REQUESTS": serves, "DB_POOL_MAX_SIZE": pool_max,
           "DJANGO_SETTINGS_MODULE": "orchestrator.settings"}
    script = ("from django.conf import settings as s; d = s.DATABASES['default']; "
              "p = d['OPTIONS'].get('pool') or {}; "
              "print(d['CONN_MAX_AGE'], p.get('min_size'), p.get('max_size'))")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == expected


def test_a_pool_minimum_above_its_maximum_stops_start_up():
    with pytest.raises(ConfigError, match="DB_POOL_MIN_SIZE"):
        load_settings({"DB_POOL_MIN_SIZE": "5", "DB_POOL_MAX_SIZE": "3"})
