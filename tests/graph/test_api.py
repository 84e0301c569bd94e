"""REST browsing of relationships: /api/v1/relationships/ with filters, a token required.
(The console's task-graph page: tests/console/test_admin_graph.py.)"""

from __future__ import annotations


def test_relationships_api(graph, tools):
    for t in "abc":
        graph.task(t)
    graph.relate("a", "b", "blocks", reason="r")
    graph.relate("c", "b", "related_to")
    listing = tools.get("/api/v1/relationships/")
    assert listing.status == 200 and listing.body["count"] == 2
    first = listing.body["results"][0]
    assert {k: first[k] for k in ("sourceTaskId", "targetTaskId", "relationshipType")} == {
        "sourceTaskId": "a", "targetTaskId": "b", "relationshipType": "blocks"}
    assert first["metadata"] == {"reason": "r"}
    assert tools.get("/api/v1/relationships/", type="related_to").body["count"] == 1
    assert tools.get("/api/v1/relationships/", task="c").body["count"] == 1
    assert tools.get("/api/v1/relationships/", source="b").body["count"] == 1
    one = tools.get(f"/api/v1/relationships/{first['id']}/")
    assert one.status == 200 and one.body["id"] == first["id"]


def test_relationships_api_needs_a_token(client, db):
    assert client.get("/api/v1/relationships/").status_code == 401
