"""A project's edit policy for live file claims (claims.services): what happens when an
agent is about to edit a file another live session on another task holds, and which
paths never count.

It lives in the project's global context, ``orchestratorContext.fileClaims``, editable
like the rest of it (update_global_context, the console's global context page)::

    {"policy": "warn" | "block", "ignore": ["*.lock", "dist/*", ...]}

``warn`` (the default): the edit goes on and the agent is told who else is editing the
file. ``block``: the edit is refused with that reason. ``ignore``: glob patterns
(``fnmatch``; ``*`` also crosses ``/``) matched against the path relative to the
repository root; a pattern without ``/`` also matches the file name in any folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from foundation.core import prepared
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError

POLICIES = ("warn", "block")
DEFAULT_POLICY = "warn"
MAX_IGNORE_PATTERNS = 200
MAX_PATTERN_LENGTH = 500
POLICY_KEY = "fileClaims"


@dataclass(frozen=True)
class EditPolicy:
    mode: str = DEFAULT_POLICY
    ignore: tuple[str, ...] = ()

    def ignores(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        return any(fnmatchcase(path, pattern)
                   or ("/" not in pattern and fnmatchcase(name, pattern))
                   for pattern in self.ignore)

    def as_dict(self) -> dict[str, Any]:
        return {"policy": self.mode, "ignore": list(self.ignore)}


def _invalid(problem: str) -> OrchestratorError:
    field = f"orchestratorContext.{POLICY_KEY}"
    return OrchestratorError("E1612", f"Invalid update: {field}: {problem}",
                             {"field": field, "problem": problem})


def validate_policy(value: Any) -> dict[str, Any]:
    """The stored form of ``orchestratorContext.fileClaims``; E1612 naming what is wrong."""
    if not isinstance(value, dict):
        raise _invalid("must be an object with policy and ignore")
    unknown = sorted(set(value) - {"policy", "ignore"})
    if unknown:
        raise _invalid(f"unknown key {unknown[0]!r} (policy, ignore)")
    mode = value.get("policy", DEFAULT_POLICY)
    if mode not in POLICIES:
        raise _invalid(f"policy must be one of {', '.join(POLICIES)}")
    ignore = value.get("ignore", [])
    if not isinstance(ignore, list) or len(ignore) > MAX_IGNORE_PATTERNS or any(
            not isinstance(p, str) or not p.strip() or len(p) > MAX_PATTERN_LENGTH
            for p in ignore):
        raise _invalid(f"ignore must be a list of at most {MAX_IGNORE_PATTERNS} glob "
                       f"patterns of 1-{MAX_PATTERN_LENGTH} characters")
    return {"policy": mode, "ignore": list(ignore)}


def policy_from(orchestrator_context: Any) -> EditPolicy:
    """The policy stored in a global context's orchestratorContext (the default when it
    holds none, or something written before validation existed)."""
    raw = orchestrator_context.get(POLICY_KEY) if isinstance(orchestrator_context, dict) \
        else None
    try:
        valid = validate_policy(raw) if raw is not None else {}
    except OrchestratorError:
        valid = {}
    return EditPolicy(valid.get("policy", DEFAULT_POLICY), tuple(valid.get("ignore", ())))


_POLICIES = (f"SELECT project_id, orchestrator_context FROM {qualified('global_context')} "
             "WHERE project_id = ANY(%s::text[])")


def policies_of(project_ids: set[str]) -> dict[str, EditPolicy]:
    """Each project's policy (the default for a project without a global context row).
    Prepared: the claim-overlap recorder asks for every batch, and the ORM's query cost it
    more than the read."""
    found = {project: json.loads(stored) if isinstance(stored, str) else stored
             for project, stored in prepared.fetch_all(_POLICIES, [sorted(project_ids)])}
    return {project: policy_from(found.get(project)) for project in project_ids}
