"""Project learnings: what a session learned, left by ``end_session``'s
``learnings`` for the project's next sessions, which see the newest in the WARM tier of
their context bundle (contexts.services.bundle; start_session with contextBudgetTokens,
get_context_bundle, the hook client's SessionStart and compaction answers).

Bounds, so one session cannot crowd out the bundle: at most ``MAX_PER_CALL`` learnings a
call, each ``MAX_LENGTH`` characters at most and not blank (E1612 otherwise, nothing
written); the bundle shows the ``IN_BUNDLE`` newest of the project. All are kept.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from contexts.models import ProjectLearning
from foundation.core.errors import OrchestratorError

MAX_PER_CALL = 20
MAX_LENGTH = 1000
IN_BUNDLE = 10
TABLE = connection.ops.quote_name(ProjectLearning._meta.db_table)


def insert_sql(rows: str) -> str:
    """The statement storing learnings, to run inside the caller's own (``end_session``'s
    one round trip): ``rows`` is a query of (project_id, text, session_id, agent_id,
    created_at), in the order they are kept."""
    return f"INSERT INTO {TABLE} (project_id, text, session_id, agent_id, created_at) {rows}"


def checked(learnings: list[str] | None) -> list[str]:
    """The learnings to store, stripped; E1612 naming the item for a blank one (the input
    schema already bounds count and length)."""
    texts = [text.strip() for text in learnings or []]
    for index, text in enumerate(texts):
        if not text:
            raise OrchestratorError("E1612", "A learning must say something: "
                                    f"learnings[{index}] is blank",
                                    {"field": f"learnings[{index}]", "problem": "blank"})
    return texts


def recent(project_id: str, limit: int = IN_BUNDLE) -> list[dict[str, Any]]:
    """The project's ``limit`` newest learnings, newest first: {text, sessionId, agentId,
    createdAt}."""
    rows = ProjectLearning.objects.filter(project_id=project_id).order_by("-id")[:limit]
    return [{"text": r.text, "sessionId": r.session_id, "agentId": r.agent_id,
             "createdAt": r.created_at.isoformat()} for r in rows]
