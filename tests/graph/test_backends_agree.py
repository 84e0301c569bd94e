"""The same questions asked of the Bolt mirror and of Postgres give the same answers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from contexts.models import TaskContext
from graph import services
from graph.models import TaskRelationship
from graph.services.sync import sync_graph


def answers(settings, **args):
    settings.ENABLE_NEO4J = True
    from_graph = services.get_task_graph(**args)
    settings.ENABLE_NEO4J = False
    from_postgres = services.get_task_graph(**args)
    assert from_graph["metadata"]["source"] == "neo4j"
    assert from_postgres["metadata"]["source"] == "postgres"
    for result in (from_graph, from_postgres):
        del result["metadata"]
    return from_graph, from_postgres


@pytest.fixture
def mixed(graph_server, db):
    """25 tasks of every status and 30 edges of every type, mirrored by sync_graph."""
    statuses = ["pending", "in_progress", "completed", "blocked", "archived"]
    TaskContext.objects.bulk_create(
        TaskContext(task_id=f"t{i:02}", name=f"Task {i}", status=statuses[i % 5],
                    priority=(i * 37) % 100, current_phase=f"phase-{i % 3}",
                    score=Decimal(i) * Decimal("1.5"), agent_type="backend" if i % 4 else None)
        for i in range(25))
    rows = [TaskRelationship(source_task_id=f"t{i:02}", target_task_id=f"t{i + 1:02}",
                             relationship_type="blocks" if i % 2 else "depends_on",
                             metadata={"reason": f"r{i}"} if i % 2 else {},
                             strength=None if i % 2 else Decimal("0.25"))
            for i in range(24)]
    rows += [TaskRelationship(source_task_id=f"t{i:02}", target_task_id=f"t{i + 5:02}",
                              relationship_type=["related_to", "parent_of"][i % 8 // 4],
                              metadata={})
             for i in range(0, 20, 4)]
    rows.append(TaskRelationship(source_task_id="t03", target_task_id="t20",
                                 relationship_type="blocks", metadata={"reason": "late"}))
    TaskRelationship.objects.bulk_create(rows)
    report = sync_graph()
    assert report["tasks"]["created"] == 25 and report["edges"]["created"] == 30, report


@pytest.mark.parametrize("args", [
    {}, {"include_completed": True},
    {"task_id": "t10", "depth": 0}, {"task_id": "t10", "depth": 1},
    {"task_id": "t10", "depth": 3, "include_completed": True},
    {"task_id": "t00", "depth": 10}, {"task_id": "t24", "depth": 2},
])
def test_same_answer(settings, mixed, args):
    from_graph, from_postgres = answers(settings, **args)
    assert from_graph == from_postgres
    assert from_graph["nodes"]


def test_same_relationships_and_blockers(settings, mixed):
    for task_id in ("t00", "t05", "t20", "t21"):
        settings.ENABLE_NEO4J = True
        graph_side = (services.relationships_for(task_id), services.unfinished_blockers(task_id))
        settings.ENABLE_NEO4J = False
        assert graph_side == (services.relationships_for(task_id),
                              services.unfinished_blockers(task_id))
