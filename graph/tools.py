"""Graph tools: get_task_graph and adding / removing task relationships."""

from __future__ import annotations

from typing import Any

from foundation.core.tools import Tool, ToolContext, register
from foundation.core.tools.schema import (
    RELATIONSHIP_TYPES,
    TASK_STATUSES,
    TIMESTAMP,
    array,
    boolean,
    integer,
    number,
    obj,
    project_id,
    safe_id,
    string,
)
from graph.services import get_task_graph
from graph.services.outbox import drain_outbox
from graph.services.relationships import add_relationship, remove_relationship
from graph.services.sync import check_graph, sync_graph

MAX_DEPTH = 10
EDGE_TYPES = ("blocks", "depends_on", "related_to", "parent_of")

NODE = obj({"taskId": string(), "name": string(), "status": string(enum=TASK_STATUSES),
            "phase": string(), "priority": integer(), "score": number(),
            "orphaned": boolean("Present (true) for orphaned work: an unfinished "
                                "task a crashed session worked on and no live session "
                                "works on")},
           ["taskId", "name", "status", "priority"], description="TaskGraphNode")
NODES = array(NODE)
EDGE = obj({"from": string(), "to": string(), "type": string(enum=EDGE_TYPES),
            "reason": string(), "strength": number()}, ["from", "to", "type"])
GRAPH_STATE = string("Mirror write: synced, disabled (ENABLE_NEO4J off) or failed (repaired "
                     "later by sync_graph)", enum=("synced", "disabled", "failed"))


def _get_task_graph(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return get_task_graph(args.get("taskId"), args.get("depth", 2),
                          args.get("includeCompleted", False),
                          project_ids=ctx.visible_projects(args.get("projectId")))


register(Tool(
    name="get_task_graph",
    description=(
        "Task relationship graph. With taskId: tasks within `depth` edges of it "
        "(any direction) and its focus lists; without: the whole graph. readyTasks are pending "
        "tasks that wait on nothing: no unfinished (not completed) task blocks them and none "
        "they depend on (depends_on: the source waits for the target) is unfinished; "
        "blockedTasks are open tasks that wait on one (or have status blocked). Answered by "
        "the graph server when enabled, else (or while it is down) by Postgres; "
        "metadata.source and metadata.fallback say which."
    ),
    input_schema=obj({
        "taskId": safe_id("Focus task; omit for the whole graph"),
        "projectId": project_id("Whole graph of this project only (default: every project "
                                "the caller may reach)"),
        "depth": integer("Edges from the focus task", minimum=0, maximum=MAX_DEPTH, default=2),
        "includeCompleted": boolean(default=False),
    }),
    output_schema=obj({
        "nodes": NODES,
        "edges": array(EDGE),
        "focus": obj({
            "task": NODE, "blockedBy": NODES, "blocks": NODES, "dependsOn": NODES,
            "dependencyOf": NODES, "relatedTo": NODES, "parentOf": NODES, "childOf": NODES,
            "agents": array(obj({"agentId": string(), "type": string()})),
            "recentSessions": array(obj({"sessionId": string(), "startedAt": TIMESTAMP})),
        }),
        "readyTasks": NODES,
        "blockedTasks": NODES,
        "summary": obj({k: integer() for k in
                        ("totalTasks", "inProgress", "blocked", "completed", "pending")}),
        "metadata": obj({"source": string(enum=("neo4j", "postgres")), "fallback": boolean(),
                         "reason": string(),
                         "depth": {"type": ["integer", "null"],
                                   "description": "null for the whole graph (no taskId)"},
                         "includeCompleted": boolean(),
                         "generatedAt": TIMESTAMP}, additional=True),
    }, ["nodes", "edges", "readyTasks", "blockedTasks", "summary", "metadata"]),
    handler=_get_task_graph,
    validation_code="E1612",
    read_only=True,
))

RELATIONSHIP_KEY = {
    "sourceTaskId": safe_id("Task the relationship goes from"),
    "targetTaskId": safe_id("Task the relationship goes to"),
    "relationshipType": string("blocked_by, dependency_of and child_of are stored as the "
                               "inverse blocks, depends_on and parent_of",
                               enum=RELATIONSHIP_TYPES),
}
STORED = obj({"id": string(), "sourceTaskId": string(), "targetTaskId": string(),
              "relationshipType": string(enum=EDGE_TYPES),
              "reason": string(nullable=True), "strength": number(nullable=True),
              "metadata": {"type": "object"}, "createdBy": string(nullable=True),
              "createdAt": string(nullable=True)}, additional=True)


def _add(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return add_relationship(args["sourceTaskId"], args["targetTaskId"], args["relationshipType"],
                            reason=args.get("reason"), strength=args.get("strength"),
                            metadata=args.get("metadata"), created_by=ctx.actor or None)


register(Tool(
    name="add_task_relationship",
    description=(
        "Relate two tasks (blocks, depends_on, related_to, parent_of or an inverse). "
        "Idempotent: an existing relationship is updated (created=false). A blocks / "
        "depends_on / parent_of edge (or an inverse) that would close a cycle is refused "
        "with E1616 and the cycle in error.details.cycle. Unknown tasks: E1610. Stored in "
        "Postgres, then mirrored to the graph (graphSynced=false: repaired by sync_graph)."
    ),
    input_schema=obj({**RELATIONSHIP_KEY,
                      "reason": string("Why (blocks)", max_length=2000, nullable=True),
                      "strength": number("0.0-1.0 (depends_on)", minimum=0, maximum=1,
                                         nullable=True),
                      "metadata": {"type": "object", "description": "Extra JSON stored with it"}},
                     ["sourceTaskId", "targetTaskId", "relationshipType"]),
    output_schema=obj({"success": boolean(), "created": boolean(), "relationship": STORED,
                       "requestedType": string(enum=RELATIONSHIP_TYPES), "graph": GRAPH_STATE,
                       "graphSynced": boolean()},
                      ["success", "created", "relationship", "graph", "graphSynced"]),
    handler=_add,
    task_group=("sourceTaskId", "targetTaskId"),
    task_group_sorted=True,
))


def _remove(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return remove_relationship(args["sourceTaskId"], args["targetTaskId"],
                               args["relationshipType"])


register(Tool(
    name="remove_task_relationship",
    description=(
        "Remove a relationship (any RelationshipType; inverses name the stored edge the "
        "other way round). Removing one that does not exist is not an error (removed=false); "
        "an unknown task is E1610."
    ),
    input_schema=obj(RELATIONSHIP_KEY, ["sourceTaskId", "targetTaskId", "relationshipType"]),
    output_schema=obj({"success": boolean(), "removed": boolean(), "relationship": STORED,
                       "graph": GRAPH_STATE, "graphSynced": boolean()},
                      ["success", "removed", "graph", "graphSynced"]),
    handler=_remove,
    task_group=("sourceTaskId", "targetTaskId"),
    task_group_sorted=True,
))


# -- operations for in-process callers only (beat, cron) --------------------------------------

COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}
MIRROR_STATE = string("synced, checked (checkFirst: the counts agree and the full pass is "
                      "not due), disabled (ENABLE_NEO4J off) or failed (nothing lost: the "
                      "next run tries again)", enum=("synced", "checked", "disabled", "failed"))

register(Tool(
    name="sync_graph",
    description=(
        "Make the Bolt graph mirror match Postgres (tasks, relationships, sessions and who "
        "worked on what), under the outbox drain's lock; a report of what it created, "
        "updated and deleted. manage.py sync_graph runs it once; beat every "
        "GRAPH_SYNC_INTERVAL_SECONDS with checkFirst: counts of each kind on both sides, "
        "and the full pass only when they differ or the last one is older than "
        "GRAPH_FULL_SYNC_INTERVAL_SECONDS."
    ),
    input_schema=obj({"checkFirst": boolean("Compare counts first; the full pass only when "
                                            "they differ or it is due")}),
    output_schema=obj({"success": boolean(), "graph": MIRROR_STATE, "tasks": COUNTS,
                       "agents": COUNTS, "edges": COUNTS, "sessions": COUNTS,
                       "queued": integer("Changes queued meanwhile, applied after"),
                       "counts": {"type": "object", "additionalProperties": COUNTS},
                       "reason": string("checkFirst: why the full pass ran"),
                       "error": string(), "syncedAt": TIMESTAMP},
                      ["success", "graph", "syncedAt"]),
    handler=lambda args, ctx: check_graph() if args.get("checkFirst") else sync_graph(),
    internal=True,
))

register(Tool(
    name="drain_graph_outbox",
    description=(
        "Apply the changes queued in graph_outbox to the graph mirror, in order (with the "
        "graph off: discard them). Beat runs it every GRAPH_OUTBOX_INTERVAL_SECONDS, after "
        "an outage or a restart left some; manage.py drain_graph_outbox runs it once."
    ),
    input_schema=obj({}),
    output_schema=obj({"success": boolean(), "graph": MIRROR_STATE, "applied": integer(),
                       "discarded": integer(), "pending": integer(), "error": string(),
                       "drainedAt": TIMESTAMP}, ["success", "graph", "drainedAt"]),
    handler=lambda args, ctx: drain_outbox(),
    internal=True,
))


# -- what a project-limited token may name (foundation.core.tools.access) ----------------
def _register_project_entities() -> None:
    from foundation.core.errors import task_not_found
    from foundation.core.tools.access import register_argument

    for name in ("sourceTaskId", "targetTaskId"):
        register_argument(name, "task", task_not_found)


_register_project_entities()
