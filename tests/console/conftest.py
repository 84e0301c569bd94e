"""Helpers for the console tests: tasks and sessions are created through the real tools; the
task-graph page runs on both graph backends (the graph suite's fixtures)."""

from __future__ import annotations

from tests.graph.conftest import graph, graph_backend, graph_server  # noqa: F401


