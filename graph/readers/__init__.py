"""Two answers to the same graph questions: Cypher on the mirror, SQL on task_relationships.

Both readers return plain dicts in the output shapes of get_task_graph, sorted the
same way, so callers (and the dual-backend tests) can compare them directly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

Node = dict[str, Any]
Edge = dict[str, Any]

def sortable_stamp(value: datetime) -> str:
    """Fixed-width UTC text (always microseconds), so the graph can order stored timestamps
    as strings; the API's own ``iso`` drops zero microseconds."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# Ordering shared by both readers: most urgent first, ties by id.
def node_order(node: Node) -> tuple[int, str]:
    return (-(node.get("priority") or 0), node["taskId"])


def edge_order(edge: Edge) -> tuple[str, str, str]:
    return (edge["from"], edge["to"], edge["type"])


def make_node(task_id: str, name: str | None, status: str | None, phase: str | None,
              priority: int | None, score: float | None) -> Node:
    node: Node = {"taskId": task_id, "name": name or "", "status": status or "pending",
                  "priority": priority if priority is not None else 50}
    if phase is not None:
        node["phase"] = phase
    if score is not None:
        node["score"] = float(score)
    return node


def make_edge(source: str, target: str, kind: str, reason: str | None,
              strength: float | None) -> Edge:
    edge: Edge = {"from": source, "to": target, "type": kind}
    if reason is not None:
        edge["reason"] = reason
    if strength is not None:
        edge["strength"] = float(strength)
    return edge


class GraphReader(Protocol):
    name: str

    def existing(self, task_ids: set[str]) -> set[str]: ...
    def nodes(self, task_ids: set[str] | None) -> list[Node]: ...
    def neighborhood(self, task_id: str, depth: int) -> set[str]: ...
    def edges(self, task_ids: set[str] | None) -> list[Edge]: ...
    def edges_touching(self, task_id: str) -> list[Edge]: ...
    def ready(self, task_ids: set[str] | None) -> list[Node]: ...
    def blocked(self, task_ids: set[str] | None) -> list[Node]: ...
    def unfinished_blockers(self, task_id: str) -> list[Node]: ...
    def agents(self, task_id: str) -> list[dict[str, str]]: ...
    def recent_sessions(self, task_id: str, limit: int) -> list[dict[str, str]]: ...
