"""The spec's DDL (13.1.1), parameterised by schema, used by the apps' initial migrations.

Differences from the spec's script, on purpose (issue 2):
- save_context_version versions a change to ANY content column (not only four), and
  increment_version bumps the version only then, so version numbers and version rows
  stay one-to-one and consecutive; timestamp-only updates make neither.
- auto_save_context_version also fires AFTER INSERT, so version 1 (the state a task was
  created with) can be rolled back to like any other.
- Who and why come from transaction-local settings (orchestrator.change_type, ...).
- Every name is schema-qualified, so a raw UPDATE from a connection whose search_path
  lacks the schema versions just the same.
- context_versions is immutable: a guard in the internal schema refuses UPDATE/DELETE
  unless the transaction sets orchestrator.allow_version_pruning = 'on'.
"""

from __future__ import annotations

# Columns that are bookkeeping, not content: changing only these makes no version.
NON_CONTENT = "ARRAY['updated_at','last_session_at','version','created_at']"


def internal_schema(schema: str) -> str:
    return f"{schema}_internal"


def create_schema_and_functions(s: str) -> str:
    i = internal_schema(s)
    return f"""
CREATE SCHEMA IF NOT EXISTS "{s}";
CREATE SCHEMA IF NOT EXISTS "{i}";

CREATE OR REPLACE FUNCTION "{s}".update_updated_at()
RETURNS TRIGGER AS $$
BEGIN
  NEW.updated_at = NOW();
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION "{s}".increment_version()
RETURNS TRIGGER AS $$
BEGIN
  IF (to_jsonb(NEW) - {NON_CONTENT}) IS DISTINCT FROM (to_jsonb(OLD) - {NON_CONTENT}) THEN
    NEW.version = COALESCE(OLD.version, 0) + 1;
  ELSE
    NEW.version = OLD.version;
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION "{s}".save_context_version()
RETURNS TRIGGER AS $$
BEGIN
  IF TG_OP = 'UPDATE'
     AND (to_jsonb(NEW) - {NON_CONTENT}) IS NOT DISTINCT FROM (to_jsonb(OLD) - {NON_CONTENT}) THEN
    RETURN NEW;
  END IF;
  INSERT INTO "{s}".context_versions
    (task_id, version, snapshot, change_type, change_summary, session_id, created_by)
  VALUES (
    NEW.task_id, NEW.version, to_jsonb(NEW),
    COALESCE(NULLIF(current_setting('orchestrator.change_type', true), ''), 'auto_save'),
    NULLIF(current_setting('orchestrator.change_summary', true), ''),
    NULLIF(current_setting('orchestrator.session_id', true), ''),
    NULLIF(current_setting('orchestrator.created_by', true), '')
  );
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION "{i}".forbid_mutation()
RETURNS TRIGGER AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('orchestrator.allow_version_pruning', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION '% rows are immutable (% refused)', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""


def drop_schema_and_functions(s: str) -> str:
    i = internal_schema(s)
    return f"""
DROP FUNCTION IF EXISTS "{i}".forbid_mutation();
DROP FUNCTION IF EXISTS "{s}".save_context_version();
DROP FUNCTION IF EXISTS "{s}".increment_version();
DROP FUNCTION IF EXISTS "{s}".update_updated_at();
DROP SCHEMA IF EXISTS "{i}";
DROP SCHEMA IF EXISTS "{s}";
"""


def create_context_tables(s: str, project_id: str) -> str:
    i = internal_schema(s)
    name, description = (
        ("Story Portal App", "Full-stack story collaboration platform")
        if project_id == "story-portal-app" else (project_id, None)
    )
    desc_sql = "NULL" if description is None else f"'{description}'"
    safe_id = project_id.replace("'", "''")
    safe_name = name.replace("'", "''")
    return f"""
CREATE TABLE "{s}".task_contexts (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  task_id VARCHAR(255) UNIQUE NOT NULL,
  name VARCHAR(500) NOT NULL,
  description TEXT,
  agent_type VARCHAR(100),
  status VARCHAR(50) DEFAULT 'pending',
  priority INTEGER DEFAULT 50,
  current_phase VARCHAR(255),
  iteration INTEGER DEFAULT 0,
  score DECIMAL(5,2),
  locked_elements JSONB DEFAULT '[]',
  immediate_context JSONB,
  key_files JSONB,
  technical_decisions JSONB,
  resume_prompt TEXT,
  keywords JSONB,
  token_estimate INTEGER,
  created_at TIMESTAMPTZ DEFAULT NOW(),
  updated_at TIMESTAMPTZ DEFAULT NOW(),
  last_session_at TIMESTAMPTZ,
  version INTEGER DEFAULT 1
);

CREATE TABLE "{s}".context_versions (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  task_id VARCHAR(255) NOT NULL,
  version INTEGER NOT NULL,
  snapshot JSONB NOT NULL,
  change_summary TEXT,
  change_type VARCHAR(50),
  created_by VARCHAR(255),
  session_id VARCHAR(255),
  created_at TIMESTAMPTZ DEFAULT NOW(),
  UNIQUE(task_id, version)
);

CREATE TABLE "{s}".checkpoints (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  checkpoint_id VARCHAR(255) UNIQUE NOT NULL,
  label VARCHAR(500) NOT NULL,
  description TEXT,
  checkpoint_type VARCHAR(50) DEFAULT 'manual',
  task_id VARCHAR(255),
  scope VARCHAR(50) NOT NULL,
  included_tasks JSONB DEFAULT '[]',
  snapshot JSONB NOT NULL,
  es_memory_id VARCHAR(255),
  created_by VARCHAR(255),
  session_id VARCHAR(255),
  created_at TIMESTAMPTZ DEFAULT NOW()
);

CREATE TABLE "{s}".global_context (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id VARCHAR(255) UNIQUE NOT NULL,
  project_name VARCHAR(500) NOT NULL,
  description TEXT,
  hard_rules JSONB DEFAULT '[]',
  tech_stack JSONB DEFAULT '[]',
  key_paths JSONB DEFAULT '{{}}',
  services JSONB DEFAULT '{{}}',
  active_task_id VARCHAR(255),
  orchestrator_context JSONB DEFAULT '{{}}',
  created_at TIMESTAMPTZ DEFAULT NOW(),
  updated_at TIMESTAMPTZ DEFAULT NOW(),
  version INTEGER DEFAULT 1
);

CREATE INDEX idx_task_contexts_status ON "{s}".task_contexts(status);
CREATE INDEX idx_task_contexts_priority ON "{s}".task_contexts(priority);
CREATE INDEX idx_task_contexts_updated ON "{s}".task_contexts(updated_at DESC);
CREATE INDEX idx_task_contexts_keywords ON "{s}".task_contexts USING GIN(keywords);

CREATE INDEX idx_context_versions_task ON "{s}".context_versions(task_id);
CREATE INDEX idx_context_versions_created ON "{s}".context_versions(created_at DESC);
CREATE INDEX idx_context_versions_session ON "{s}".context_versions(session_id);

CREATE INDEX idx_checkpoints_task ON "{s}".checkpoints(task_id);
CREATE INDEX idx_checkpoints_type ON "{s}".checkpoints(checkpoint_type);
CREATE INDEX idx_checkpoints_created ON "{s}".checkpoints(created_at DESC);
CREATE INDEX idx_checkpoints_label ON "{s}".checkpoints(label);

CREATE TRIGGER update_task_contexts_timestamp
  BEFORE UPDATE ON "{s}".task_contexts
  FOR EACH ROW EXECUTE FUNCTION "{s}".update_updated_at();

CREATE TRIGGER increment_task_version
  BEFORE UPDATE ON "{s}".task_contexts
  FOR EACH ROW EXECUTE FUNCTION "{s}".increment_version();

CREATE TRIGGER auto_save_context_version
  AFTER INSERT OR UPDATE ON "{s}".task_contexts
  FOR EACH ROW EXECUTE FUNCTION "{s}".save_context_version();

CREATE TRIGGER update_global_context_timestamp
  BEFORE UPDATE ON "{s}".global_context
  FOR EACH ROW EXECUTE FUNCTION "{s}".update_updated_at();

CREATE TRIGGER increment_global_version
  BEFORE UPDATE ON "{s}".global_context
  FOR EACH ROW EXECUTE FUNCTION "{s}".increment_version();

CREATE TRIGGER context_versions_immutable
  BEFORE UPDATE OR DELETE ON "{s}".context_versions
  FOR EACH ROW EXECUTE FUNCTION "{i}".forbid_mutation();

INSERT INTO "{s}".global_context (project_id, project_name, description)
VALUES ('{safe_id}', '{safe_name}', {desc_sql})
ON CONFLICT (project_id) DO NOTHING;
"""


def drop_context_tables(s: str) -> str:
    return f"""
DROP TABLE IF EXISTS "{s}".global_context;
DROP TABLE IF EXISTS "{s}".checkpoints;
DROP TABLE IF EXISTS "{s}".context_versions;
DROP TABLE IF EXISTS "{s}".task_contexts;
"""


def create_sessions_table(s: str) -> str:
    return f"""
CREATE TABLE "{s}".active_sessions (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  session_id VARCHAR(255) UNIQUE NOT NULL,
  task_id VARCHAR(255),
  status VARCHAR(50) DEFAULT 'active',
  started_at TIMESTAMPTZ DEFAULT NOW(),
  last_heartbeat TIMESTAMPTZ DEFAULT NOW(),
  ended_at TIMESTAMPTZ,
  context_snapshot JSONB,
  recovery_needed BOOLEAN DEFAULT FALSE,
  recovery_type VARCHAR(50),
  conversation_summary TEXT,
  unsaved_changes JSONB,
  project_dir VARCHAR(1000),
  git_branch VARCHAR(255)
);
CREATE INDEX idx_sessions_status ON "{s}".active_sessions(status);
CREATE INDEX idx_sessions_heartbeat ON "{s}".active_sessions(last_heartbeat DESC);
CREATE INDEX idx_sessions_recovery ON "{s}".active_sessions(recovery_needed)
  WHERE recovery_needed = TRUE;
CREATE INDEX idx_sessions_task ON "{s}".active_sessions(task_id);
"""


def create_conflicts_table(s: str) -> str:
    return f"""
CREATE TABLE "{s}".context_conflicts (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  task_a_id VARCHAR(255) NOT NULL,
  task_b_id VARCHAR(255),
  conflict_type VARCHAR(50) NOT NULL,
  description TEXT NOT NULL,
  severity VARCHAR(20) NOT NULL,
  strength DECIMAL(3,2),
  evidence JSONB,
  resolution_status VARCHAR(50) DEFAULT 'unresolved',
  resolution JSONB,
  resolved_by VARCHAR(255),
  detected_at TIMESTAMPTZ DEFAULT NOW(),
  resolved_at TIMESTAMPTZ,
  detected_by VARCHAR(100),
  detection_method VARCHAR(255)
);
CREATE INDEX idx_conflicts_task_a ON "{s}".context_conflicts(task_a_id);
CREATE INDEX idx_conflicts_task_b ON "{s}".context_conflicts(task_b_id);
CREATE INDEX idx_conflicts_status ON "{s}".context_conflicts(resolution_status);
CREATE INDEX idx_conflicts_severity ON "{s}".context_conflicts(severity);
CREATE INDEX idx_conflicts_unresolved ON "{s}".context_conflicts(resolution_status)
  WHERE resolution_status = 'unresolved';
"""


def create_relationships_table(s: str) -> str:
    return f"""
CREATE TABLE "{s}".task_relationships (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  source_task_id VARCHAR(255) NOT NULL,
  target_task_id VARCHAR(255) NOT NULL,
  relationship_type VARCHAR(50) NOT NULL,
  metadata JSONB DEFAULT '{{}}',
  strength DECIMAL(3,2),
  created_by VARCHAR(255),
  created_at TIMESTAMPTZ DEFAULT NOW(),
  UNIQUE(source_task_id, target_task_id, relationship_type)
);
CREATE INDEX idx_relationships_source ON "{s}".task_relationships(source_task_id);
CREATE INDEX idx_relationships_target ON "{s}".task_relationships(target_task_id);
CREATE INDEX idx_relationships_type ON "{s}".task_relationships(relationship_type);
"""
