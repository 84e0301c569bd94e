"""The compiled validator only ever accepts what the Python validator accepts.

``registry.validate_input`` skips the Python pass when the Rust validator says "valid" and
the input holds no float; if the two ever disagreed that way, bad input would reach the
services. Hypothesis puts arbitrary JSON into every field of every tool's input, and near
misses of the id pattern and the date-time format, where the two libraries differ most.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foundation.core.tools import registry
from foundation.core.tools.input_checks import scan_input
from tests.fuzz.test_tool_inputs import fields, minimal_value, with_value

ANCHORS = {"taskId": "t-1", "taskAId": "t-1", "taskBId": "t-2", "fromTaskId": "t-1",
           "toTaskId": "t-2", "sessionId": "s-1", "label": "quick"}
NEAR_MISSES = ["t-1\n", "t-1 ", " t-1", "-t", "t" * 255, "t" * 256, "ü", "t/1", "",
               "2026-11-23T10:00:00Z", "2026-11-23T10:00:00", "2026-11-23 10:00:00Z",
               "2026-13-23T10:00:00Z", "2026-11-23T10:00:00+01:00", "2026-11-23t10:00:00z",
               "2026-11-23T24:00:00Z", "2026-11-23T10:00:60Z", "١٢٣"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
    | st.sampled_from(NEAR_MISSES),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12)
CASES = [(tool, path) for tool in registry.tools()
         for path, _ in fields(tool.input_schema)]


def python_accepts(tool: registry.Tool, arguments: Any) -> bool:
    return not any(True for _ in tool.validator.iter_errors(arguments))


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=st.sampled_from(CASES), value=json_values)
def test_quick_acceptance_implies_python_acceptance(case, value):
    tool, path = case
    arguments = with_value(minimal_value(tool.input_schema, "", ANCHORS), path, value)
    unstorable, has_float = scan_input(arguments)
    if not has_float and tool.quick_validator.is_valid(arguments):
        assert python_accepts(tool, arguments), (tool.name, path, value)


def test_every_tools_minimal_input_takes_the_quick_path():
    for tool in registry.tools():
        arguments = minimal_value(tool.input_schema, "", ANCHORS)
        assert tool.quick_validator.is_valid(arguments), tool.name
        assert python_accepts(tool, arguments), tool.name
