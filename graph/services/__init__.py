"""Graph services: the only code that writes task_relationships or the graph mirror.

``relationships_for`` and ``unfinished_blockers`` are the interface the context service
uses (get_unified_context's relationships, switch_task's blockedBy).
"""

from graph.services.queries import get_task_graph, relationships_for, unfinished_blockers

__all__ = ["get_task_graph", "relationships_for", "unfinished_blockers"]
