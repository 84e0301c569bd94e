"""add_task_relationship / remove_task_relationship on both backends."""

from __future__ import annotations

from graph.models import TaskRelationship
from tests.graph.conftest import ids


def stored() -> set[tuple[str, str, str]]:
    return set(TaskRelationship.objects.values_list(
        "source_task_id", "target_task_id", "relationship_type"))


def test_inverse_types_are_stored_as_their_canonical_type(graph):
    for t in "abc":
        graph.task(t)
    graph.relate("a", "b", "blocked_by", reason="needs the schema")
    graph.relate("a", "c", "dependency_of", strength=0.5)
    graph.relate("b", "c", "child_of")
    graph.relate("c", "a", "related_to")
    assert stored() == {("b", "a", "blocks"), ("c", "a", "depends_on"),
                        ("c", "b", "parent_of"), ("a", "c", "related_to")}
    body = graph.read(taskId="a", depth=1)
    assert {(e["from"], e["to"], e["type"]) for e in body["edges"]} == {
        ("b", "a", "blocks"), ("c", "a", "depends_on"), ("a", "c", "related_to"),
        ("c", "b", "parent_of")}
    blocks = next(e for e in body["edges"] if e["type"] == "blocks")
    assert blocks["reason"] == "needs the schema"
    assert next(e for e in body["edges"] if e["type"] == "depends_on")["strength"] == 0.5
    focus = body["focus"]
    assert ids(focus["blockedBy"]) == ["b"]
    assert ids(focus["dependencyOf"]) == ["c"] and focus["dependsOn"] == []
    assert ids(focus["relatedTo"]) == ["c"]
    assert ids(graph.read(taskId="b", depth=1)["focus"]["childOf"]) == ["c"]


def test_adding_twice_is_idempotent_and_updates(graph):
    graph.task("a")
    graph.task("b")
    first = graph.relate("a", "b", "blocks", reason="one")
    again = graph.relate("b", "a", "blocked_by", reason="two")
    assert first["created"] is True and again["created"] is False
    assert again["relationship"]["id"] == first["relationship"]["id"]
    assert again["relationship"]["reason"] == "two"
    assert TaskRelationship.objects.count() == 1
    assert graph.read(taskId="a")["edges"] == [
        {"from": "a", "to": "b", "type": "blocks", "reason": "two"}]


def test_cycle_is_refused_with_its_path(graph, tools):
    for t in "abcd":
        graph.task(t)
    graph.relate("a", "b", "blocks")
    graph.relate("b", "c", "blocks")
    graph.relate("c", "d", "blocks")
    response = tools.call("add_task_relationship", {
        "sourceTaskId": "a", "targetTaskId": "d", "relationshipType": "blocked_by"})
    assert response.status == 409 and response.error_code == "E1616"
    assert response.body["error"]["details"]["cycle"] == ["d", "a", "b", "c", "d"]
    assert "d -> a -> b -> c -> d" in response.body["error"]["message"]
    assert ("d", "a", "blocks") not in stored()
    # Another type may run the other way: cycles are checked per relationship type.
    graph.relate("d", "a", "depends_on")
    graph.relate("d", "a", "related_to")


def test_parent_and_dependency_cycles_are_refused(graph, tools):
    for t in "abc":
        graph.task(t)
    graph.relate("a", "b", "parent_of")
    graph.relate("c", "b", "child_of")
    refused = tools.call("add_task_relationship", {
        "sourceTaskId": "a", "targetTaskId": "c", "relationshipType": "child_of"})
    assert refused.error_code == "E1616"
    assert refused.body["error"]["details"] == {"cycle": ["c", "a", "b", "c"],
                                                "relationshipType": "parent_of"}
    graph.relate("a", "b", "depends_on")
    refused = tools.call("add_task_relationship", {
        "sourceTaskId": "b", "targetTaskId": "a", "relationshipType": "depends_on"})
    assert refused.error_code == "E1616"
    assert refused.body["error"]["details"]["cycle"] == ["b", "a", "b"]


def test_bad_input(graph, tools):
    graph.task("a")
    missing = tools.call("add_task_relationship", {
        "sourceTaskId": "a", "targetTaskId": "ghost", "relationshipType": "blocks"})
    assert missing.status == 404 and missing.error_code == "E1610"
    assert missing.body["error"]["details"] == {"taskId": "ghost", "missing": ["ghost"]}
    itself = tools.call("add_task_relationship", {
        "sourceTaskId": "a", "targetTaskId": "a", "relationshipType": "related_to"})
    assert itself.status == 400 and itself.error_code == "E1612"
    unknown = tools.call("add_task_relationship", {
        "sourceTaskId": "a", "targetTaskId": "b", "relationshipType": "owns"})
    assert unknown.status == 400 and unknown.error_code == "E1612"
    strength = tools.call("add_task_relationship", {
        "sourceTaskId": "a", "targetTaskId": "b", "relationshipType": "depends_on",
        "strength": 1.5})
    assert strength.status == 400
    assert TaskRelationship.objects.count() == 0


def test_remove_by_any_name(graph, tools):
    graph.task("a")
    graph.task("b")
    graph.relate("a", "b", "blocks")
    graph.relate("b", "a", "related_to")
    removed = tools.ok("remove_task_relationship", {
        "sourceTaskId": "b", "targetTaskId": "a", "relationshipType": "blocked_by"})
    assert removed["removed"] is True and removed["graphSynced"] is (graph.backend == "neo4j")
    assert removed["relationship"] == {"sourceTaskId": "a", "targetTaskId": "b",
                                       "relationshipType": "blocks"}
    again = tools.ok("remove_task_relationship", {
        "sourceTaskId": "a", "targetTaskId": "b", "relationshipType": "blocks"})
    assert again["removed"] is False
    assert stored() == {("a", "b", "related_to")}
    assert graph.read(taskId="a")["edges"] == [{"from": "a", "to": "b", "type": "related_to"}]
