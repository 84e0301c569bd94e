"""The graph's unique indexes: a new graph has them before its first node, on the real
Bolt server, whichever process writes first; installing them again changes nothing."""

from __future__ import annotations

import io

import pytest
from neomodel import db

from graph import backend
from graph.services.outbox import drain_outbox

EXPECTED = {("Task", "taskId"), ("Task", "status"), ("Session", "sessionId"),
            ("Agent", "agentId")}


def indexed() -> list[tuple[str, str]]:
    """(label, property) of every index on the server, one entry per index."""
    rows, meta = db.cypher_query("SHOW INDEXES")
    found = []
    for row in rows:
        entry = dict(zip(meta, row, strict=True))
        if entry.get("type") == "LOOKUP":  # Neo4j's own token lookup indexes
            continue
        found += [(label, prop) for label in entry["labelsOrTypes"] or []
                  for prop in entry["properties"] or []]
    return found


@pytest.fixture
def new_graph(graph_server):
    """The graph server as a new install finds it: no node, no index, and a process that
    has not installed anything yet."""
    db.remove_all_labels(stdout=io.StringIO())
    backend._schema_url = None
    assert indexed() == []
    yield
    backend.ensure_schema(force=True)


@pytest.mark.django_db(transaction=True)
def test_the_first_write_of_a_process_installs_the_indexes(new_graph, tools):
    tools.ok("start_session", {"sessionId": "s-1", "agentId": "claude"})
    assert drain_outbox()["success"]
    assert backend.cypher("MATCH (s:Session) RETURN s.sessionId") == [["s-1"]]
    assert sorted(indexed()) == sorted(EXPECTED)


@pytest.mark.django_db
def test_installing_again_keeps_one_index_each(new_graph):
    backend.ensure_schema()
    backend.ensure_schema(force=True)  # what the full sync does
    backend._schema_url = None  # another process starting on the same server
    backend.ensure_schema()
    assert sorted(indexed()) == sorted(EXPECTED)


@pytest.mark.django_db
def test_a_schema_neomodel_installed_counts_as_present(new_graph):
    from graph.nodes import NODE_CLASSES

    for cls in NODE_CLASSES:
        db.install_labels(cls, quiet=True, stdout=io.StringIO())
    backend.ensure_schema()
    assert sorted(indexed()) == sorted(EXPECTED)


@pytest.mark.django_db
def test_the_unique_index_refuses_a_second_node_with_the_id(new_graph):
    backend.write([("CREATE (:Session {sessionId: 's-1'})", {})])
    with pytest.raises(Exception):  # noqa: B017 - Neo4j and ArcadeDB raise differently
        backend.write([("CREATE (:Session {sessionId: 's-1'})", {})])
    assert backend.cypher("MATCH (s:Session) RETURN count(s)") == [[1]]
