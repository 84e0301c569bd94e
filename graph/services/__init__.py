"""Graph services: the only code that writes task_relationships or the graph mirror.

``relationships_for`` and ``unfinished_blockers`` answer from the preferred reader (the
graph server, else Postgres); the context services read the same facts from Postgres
themselves (contexts.services.relationships, get_unified_context's query).
"""

from graph.services.queries import get_task_graph, relationships_for, unfinished_blockers

__all__ = ["get_task_graph", "relationships_for", "unfinished_blockers"]
