"""Storage quotas by size: per project, the bytes of task versions and
checkpoints, kept by triggers, and a limit checked in the same statement as the write.

Frozen: the SQL this migration ran, not today's code.

- ``<internal>.storage_usage (project_id, slot, bytes)``: the bytes a project stores in
  context_versions and checkpoints, the JSON text length of each row's ``snapshot``
  (``octet_length(snapshot::text)``, the same figure whether the row was just written or
  read back from disk, so what an insert adds a delete takes away exactly). A project's
  use is the sum of its slots. Each connection adds to the slot of its backend pid
  (``pg_backend_pid() % 16``): concurrent saves of one project touch different rows, so
  the counter serialises nothing (one counter row per project would make every save of
  the project wait for the previous one's commit).
- ``account_storage()``: BEFORE INSERT / DELETE on context_versions (versions are
  immutable) and BEFORE INSERT / UPDATE OF snapshot / DELETE on checkpoints. A write that
  adds bytes first compares the project's use plus the new row against the transaction's
  ``orchestrator.storage_quota_bytes`` (Django sets it at connect time from
  STORAGE_QUOTA_BYTES, so it costs no round trip; unset, empty or 0: no limit) and raises
  SQLSTATE OQ413 with the figures as JSON DETAIL when it would pass: the statement, and so
  the save, the task creation or the checkpoint, writes nothing.
- ``recount_storage_usage()`` rebuilds the counters from the tables; it runs here and
  after a TRUNCATE of either table (TRUNCATE fires no row triggers).
"""

from django.conf import settings
from django.db import migrations

S = settings.MCP_SCHEMA
I = f"{S}_internal"  # noqa: E741 - the internal schema, as contexts/0001 names it

FORWARD = f"""
CREATE TABLE "{I}".storage_usage (
  project_id VARCHAR(255) NOT NULL,
  slot SMALLINT NOT NULL,
  bytes BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, slot)
);

CREATE OR REPLACE FUNCTION "{I}".recount_storage_usage()
RETURNS void AS $$
  DELETE FROM "{I}".storage_usage;
  INSERT INTO "{I}".storage_usage (project_id, slot, bytes)
  SELECT project_id, 0, sum(bytes) FROM (
    SELECT project_id, octet_length(snapshot::text)::bigint AS bytes FROM "{S}".context_versions
    UNION ALL
    SELECT project_id, octet_length(snapshot::text)::bigint FROM "{S}".checkpoints
  ) stored GROUP BY project_id;
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION "{I}".recount_storage_after_truncate()
RETURNS TRIGGER AS $$
BEGIN
  PERFORM "{I}".recount_storage_usage();
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION "{I}".account_storage()
RETURNS TRIGGER AS $$
DECLARE
  project VARCHAR(255);
  added BIGINT;
  quota BIGINT;
  used BIGINT;
BEGIN
  IF TG_OP = 'DELETE' THEN
    project := OLD.project_id;
    added := -octet_length(OLD.snapshot::text);
  ELSE
    project := NEW.project_id;
    added := octet_length(NEW.snapshot::text);
    IF TG_OP = 'UPDATE' THEN
      added := added - octet_length(OLD.snapshot::text);
    END IF;
    IF added > 0 THEN
      quota := NULLIF(current_setting('orchestrator.storage_quota_bytes', true), '')::bigint;
      IF quota > 0 THEN
        SELECT COALESCE(sum(u.bytes), 0) INTO used FROM "{I}".storage_usage u
        WHERE u.project_id = project;
        IF used + added > quota THEN
          RAISE EXCEPTION 'storage quota of project % exceeded: % bytes stored + % > % bytes',
                project, used, added, quota
            USING ERRCODE = 'OQ413',
                  DETAIL = json_build_object('projectId', project, 'usedBytes', used,
                                             'writeBytes', added, 'limitBytes', quota)::text;
        END IF;
      END IF;
    END IF;
  END IF;
  IF added <> 0 THEN
    -- A plain UPDATE first: cheaper than INSERT ... ON CONFLICT on the hot path.
    UPDATE "{I}".storage_usage SET bytes = bytes + added
    WHERE project_id = project AND slot = pg_backend_pid() % 16;
    IF NOT FOUND THEN
      INSERT INTO "{I}".storage_usage AS u (project_id, slot, bytes)
      VALUES (project, pg_backend_pid() % 16, added)
      ON CONFLICT (project_id, slot) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
    END IF;
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER context_versions_storage
  BEFORE INSERT OR DELETE ON "{S}".context_versions
  FOR EACH ROW EXECUTE FUNCTION "{I}".account_storage();
CREATE TRIGGER checkpoints_storage
  BEFORE INSERT OR UPDATE OF snapshot OR DELETE ON "{S}".checkpoints
  FOR EACH ROW EXECUTE FUNCTION "{I}".account_storage();
CREATE TRIGGER context_versions_storage_truncate
  AFTER TRUNCATE ON "{S}".context_versions
  FOR EACH STATEMENT EXECUTE FUNCTION "{I}".recount_storage_after_truncate();
CREATE TRIGGER checkpoints_storage_truncate
  AFTER TRUNCATE ON "{S}".checkpoints
  FOR EACH STATEMENT EXECUTE FUNCTION "{I}".recount_storage_after_truncate();

SELECT "{I}".recount_storage_usage();
"""

REVERSE = f"""
DROP TRIGGER IF EXISTS checkpoints_storage_truncate ON "{S}".checkpoints;
DROP TRIGGER IF EXISTS context_versions_storage_truncate ON "{S}".context_versions;
DROP TRIGGER IF EXISTS checkpoints_storage ON "{S}".checkpoints;
DROP TRIGGER IF EXISTS context_versions_storage ON "{S}".context_versions;
DROP FUNCTION IF EXISTS "{I}".account_storage();
DROP FUNCTION IF EXISTS "{I}".recount_storage_after_truncate();
DROP FUNCTION IF EXISTS "{I}".recount_storage_usage();
DROP TABLE IF EXISTS "{I}".storage_usage;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('contexts', '0004_project_scope'),
    ]

    operations = [migrations.RunSQL(FORWARD, REVERSE)]
