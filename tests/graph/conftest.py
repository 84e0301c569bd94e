"""Graph fixtures: every case runs on both backends against real servers.

``graph_backend`` is "neo4j" (ENABLE_NEO4J on, the Bolt server from NEO4J_URI /
NEOMODEL_DATABASE_URL, emptied first) or "postgres" (ENABLE_NEO4J off). With the graph
enabled in the environment an unreachable server fails the neo4j cases; nothing skips
unless the environment itself turned the graph off.
"""

from __future__ import annotations

from typing import Any

import pytest

from contexts.models import TaskContext
from contexts.signals import task_changed
from graph import backend

BACKENDS = ("neo4j", "postgres")


@pytest.fixture
def graph_server(settings):
    if not settings.ENABLE_NEO4J:
        pytest.fail("the graph suite needs the Bolt server, but ENABLE_NEO4J is false here")
    backend.reset()
    backend.cypher("MATCH (n) DETACH DELETE n")  # the autouse fixture cleans only PG/Redis
    backend.ensure_schema()
    yield
    backend.reset()


@pytest.fixture(params=BACKENDS)
def graph_backend(request, settings, db) -> str:
    if request.param == "neo4j":
        request.getfixturevalue("graph_server")
    else:
        settings.ENABLE_NEO4J = False
    return request.param


class Graph:
    """Builds tasks and relationships through the tools and reads the graph back."""

    def __init__(self, tools, backend_name: str):
        self.tools = tools
        self.backend = backend_name

    def task(self, task_id: str, status: str = "pending", **fields: Any) -> None:
        self.tools.ok("create_task", {"taskId": task_id, "name": f"Task {task_id}",
                                      "status": status, **fields})
        # create_task announces the change on commit, which a test transaction never
        # reaches: send it as the contexts service would.
        task_changed.send(sender=TaskContext, task_id=task_id, change_type="manual")

    def status(self, task_id: str, status: str) -> None:
        TaskContext.objects.filter(task_id=task_id).update(status=status)
        task_changed.send(sender=TaskContext, task_id=task_id, change_type="manual")

    def relate(self, source: str, target: str, kind: str, **extra: Any) -> dict[str, Any]:
        body = self.tools.ok("add_task_relationship", {"sourceTaskId": source,
                                                       "targetTaskId": target,
                                                       "relationshipType": kind, **extra})
        assert body["graphSynced"] is (self.backend == "neo4j"), body
        return body

    def read(self, **args: Any) -> dict[str, Any]:
        body = self.tools.ok("get_task_graph", args)
        assert body["metadata"]["source"] == self.backend, body["metadata"]
        assert body["metadata"]["fallback"] is False
        return body


@pytest.fixture
def graph(tools, graph_backend) -> Graph:
    return Graph(tools, graph_backend)


def ids(nodes: list[dict[str, Any]]) -> list[str]:
    return [n["taskId"] for n in nodes]
