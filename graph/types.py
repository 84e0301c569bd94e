"""The relationship types (blocks, depends_on, related_to, parent_of and their inverses)
and how each one is stored in task_relationships."""

from __future__ import annotations

from dataclasses import dataclass

# Stored ("canonical") types and their graph relationship labels.
GRAPH_LABELS = {
    "blocks": "BLOCKS",
    "depends_on": "DEPENDS_ON",
    "related_to": "RELATED_TO",
    "parent_of": "PARENT_OF",
}
LABEL_TYPES = {label: kind for kind, label in GRAPH_LABELS.items()}
# An inverse type is stored as its canonical type with source and target swapped.
INVERSES = {"blocked_by": "blocks", "dependency_of": "depends_on", "child_of": "parent_of"}
# Types whose edges must never form a cycle.
ACYCLIC = frozenset({"blocks", "depends_on", "parent_of"})


@dataclass(frozen=True)
class StoredEdge:
    source: str
    target: str
    kind: str  # a key of GRAPH_LABELS

    @property
    def label(self) -> str:
        return GRAPH_LABELS[self.kind]


def canonical(source: str, target: str, relationship_type: str) -> StoredEdge:
    """The row that represents ``source -relationship_type-> target``."""
    if relationship_type in INVERSES:
        return StoredEdge(target, source, INVERSES[relationship_type])
    if relationship_type == "related_to":
        # Symmetric: one row per pair whichever way round it was given.
        low, high = sorted((source, target))
        return StoredEdge(low, high, "related_to")
    return StoredEdge(source, target, relationship_type)
