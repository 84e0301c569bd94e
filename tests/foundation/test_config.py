"""Configuration: env, the spec 10.4 YAML file with ${VAR:default}, and E1690/E1691 at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.config import ConfigError, load_settings

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
    s = load_settings({}, base_dir=Path("/srv"))
    assert s.mcp_schema == "mcp_contexts"
    assert s.project_id == "story-portal-app"
    assert s.database["HOST"] == "localhost" and s.database["PORT"] == "5433"
    assert s.database["NAME"] == "consolidator"
    assert s.redis_url == "redis://localhost:6379/0"
    assert s.redis_key_prefix == "context:"
    assert (s.redis_hot_context_ttl, s.redis_task_context_ttl, s.redis_lock_ttl) == (3600, 7200, 300)
    assert (s.crash_threshold_minutes, s.stale_session_hours, s.heartbeat_interval_ms) == (5, 24, 60000)
    assert (s.max_versions_default, s.max_versions_limit) == (5, 100)
    assert s.enable_neo4j and s.enable_file_sync and s.enable_conflict_detection
    assert s.context_dir == Path("/srv/.claude/contexts")
    assert s.recovery_dir == Path("/srv/.claude/recovery")
    assert s.beat_lock_timeout_seconds == 30


def test_urls_win_over_parts():
    s = load_settings({"DATABASE_URL": "postgresql://u:p%40ss@h:6000/d", "POSTGRES_HOST": "x",
                       "REDIS_URL": "redis://r:1234/3", "REDIS_HOST": "y"})
    assert s.database == {"NAME": "d", "USER": "u", "PASSWORD": "p@ss", "HOST": "h", "PORT": "6000"}
    assert s.redis_url == "redis://r:1234/3" and s.celery_broker_url == "redis://r:1234/3"


def test_yaml_file_with_interpolation_and_env_precedence(tmp_path):
    config = tmp_path / "orchestrator.yaml"
    config.write_text(SPEC_FILE)
    s = load_settings({"ORCHESTRATOR_CONFIG": str(config), "POSTGRES_PORT": "6543",
                       "REDIS_LOCK_TTL": "60"})
    assert s.database["HOST"] == "db.internal"       # the file's ${VAR:default}
    assert s.database["PORT"] == "6543"              # interpolated from env
    assert s.redis_hot_context_ttl == 1800           # from the file
    assert s.redis_lock_ttl == 60                    # env wins over the file
    assert s.enable_conflict_detection is False


@pytest.mark.parametrize(("env", "code", "setting"), [
    ({"REDIS_PORT": "abc"}, "E1690", "REDIS_PORT"),
    ({"CRASH_THRESHOLD_MINUTES": "-1"}, "E1690", "CRASH_THRESHOLD_MINUTES"),
    ({"ENABLE_NEO4J": "maybe"}, "E1690", "ENABLE_NEO4J"),
    ({"DATABASE_URL": "mysql://h/d"}, "E1690", "DATABASE_URL"),
    ({"DATABASE_URL": "postgresql://h:5432/"}, "E1691", "DATABASE_URL"),
    ({"NEO4J_URI": "http://x"}, "E1690", "NEO4J_URI"),
    ({"MCP_SCHEMA": "bad-schema;drop"}, "E1690", "MCP_SCHEMA"),
    ({"MAX_VERSIONS_DEFAULT": "500"}, "E1690", "MAX_VERSIONS_DEFAULT"),
    ({"BEAT_LOCK_TIMEOUT_SECONDS": "1"}, "E1690", "BEAT_LOCK_TIMEOUT_SECONDS"),
    ({"ORCHESTRATOR_CONFIG": "/nonexistent/config.yaml"}, "E1691", "ORCHESTRATOR_CONFIG"),
])
def test_bad_values_name_the_setting(env, code, setting):
    with pytest.raises(ConfigError) as caught:
        load_settings(env)
    assert caught.value.code == code and caught.value.setting == setting
    assert str(caught.value).startswith(f"{code}: {setting}: ")


def test_invalid_yaml_is_e1690(tmp_path):
    config = tmp_path / "broken.yaml"
    config.write_text("postgres: [unclosed\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({"ORCHESTRATOR_CONFIG": str(config)})
    assert caught.value.code == "E1690"


def test_startup_stops_with_one_line():
    env = {**os.environ, "REDIS_PORT": "not-a-port"}
    env.pop("REDIS_URL", None)
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "E1690: REDIS_PORT: must be an integer, got 'not-a-port'"]
