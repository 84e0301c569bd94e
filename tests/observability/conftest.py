"""Fixtures for the observability tests: captured JSON log lines and in-memory spans."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from foundation.observability import tracing
from foundation.observability.logformat import JsonFormatter

# The OpenTelemetry API takes one tracer provider per process: one for the whole run,
# with an exporter each test empties.
EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for one test; the spans it finished are in ``spans.get_finished_spans()``."""
    EXPORTER.clear()
    tracing.install(_PROVIDER)
    try:
        yield EXPORTER
    finally:
        tracing.disable()
        EXPORTER.clear()


@pytest.fixture
def json_logs() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The orchestrator's log lines as the JSON formatter writes them (INFO and up)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("orchestrator")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def lines() -> list[dict[str, Any]]:
        return [json.loads(line) for line in stream.getvalue().splitlines() if line]

    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
