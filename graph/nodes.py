"""neomodel definitions of the graph mirror (tasks, sessions, agents and their edges).

Postgres stays the source of truth; these classes declare the labels, properties and
uniqueness the mirror keeps. Queries and bulk writes use plain Cypher (graph.backend.cypher)
because they must run unchanged on Neo4j 5 and on ArcadeDB's Bolt server.
"""

from __future__ import annotations

from neomodel import (
    FloatProperty,
    IntegerProperty,
    RelationshipFrom,
    RelationshipTo,
    StringProperty,
    StructuredNode,
    StructuredRel,
)


class BlocksRel(StructuredRel):
    reason = StringProperty()


class DependsOnRel(StructuredRel):
    strength = FloatProperty()


class WorksOnRel(StructuredRel):
    # ISO 8601 text: Neo4j and ArcadeDB render temporal values differently.
    startedAt = StringProperty()  # noqa: N815 - the spec's property name


class HandlesRel(StructuredRel):
    # "agentType" (from task_contexts.agent_type) or "session" (from a session's agent).
    via = StringProperty()


class Task(StructuredNode):
    taskId = StringProperty(unique_index=True, required=True)  # noqa: N815
    name = StringProperty()
    status = StringProperty(index=True)
    phase = StringProperty()
    priority = IntegerProperty()
    score = FloatProperty()

    blocks = RelationshipTo("Task", "BLOCKS", model=BlocksRel)
    depends_on = RelationshipTo("Task", "DEPENDS_ON", model=DependsOnRel)
    related_to = RelationshipTo("Task", "RELATED_TO")
    # parent_of is a relationship type the spec's graph table does not list; it is
    # mirrored so the graph answers the same questions as Postgres.
    parent_of = RelationshipTo("Task", "PARENT_OF")
    sessions = RelationshipFrom("Session", "WORKS_ON", model=WorksOnRel)
    agents = RelationshipFrom("Agent", "HANDLES", model=HandlesRel)


class Session(StructuredNode):
    sessionId = StringProperty(unique_index=True, required=True)  # noqa: N815
    status = StringProperty()
    startedAt = StringProperty()  # noqa: N815

    works_on = RelationshipTo("Task", "WORKS_ON", model=WorksOnRel)


class Agent(StructuredNode):
    agentId = StringProperty(unique_index=True, required=True)  # noqa: N815
    type = StringProperty()

    handles = RelationshipTo("Task", "HANDLES", model=HandlesRel)


NODE_CLASSES = (Task, Session, Agent)
