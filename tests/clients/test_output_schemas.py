"""Every tool's real answers, success and error, against the schemas it declares.

The REST answers are checked here (the production tool lane over HTTP); the MCP answers
through the official SDK clients in test_python_sdk.py and test_typescript_sdk.py.
"""

from __future__ import annotations

import httpx
import jsonschema
import pytest

from foundation.core.errors import REGISTRY
from foundation.core.tools import registry
from foundation.core.tools.schema import ERROR_OBJECT
from graph import backend as graph_backend
from orchestrator.web import mcp
from tests.clients import conformance
from tests.conftest import free_port


def test_the_scenario_calls_every_tool_successfully():
    """Invalid input is generic (run_scenario), a successful call needs a step per tool."""
    succeeding = {step["tool"] for step in conformance.steps() if step["expect"] == "ok"}
    # A tool only admin tokens may call (create_enrollment) is refused to the scenario's
    # write token: its step expects E1608, and its answer's schema is checked where an
    # admin token calls it (tests/projects/test_enrollment.py).
    refused = {step["tool"] for step in conformance.steps() if step["expect"] == "E1608"}
    missing = {t.name for t in registry.tools()
               if not (t.admin_only and t.name in refused)} - succeeding
    assert not missing, f"add successful calls of {sorted(missing)} to {conformance.SCENARIO_FILE}"
    unknown = {step["tool"] for step in conformance.steps()} - {t.name for t in registry.tools()}
    assert not unknown, f"the scenario calls tools that do not exist: {sorted(unknown)}"


def test_every_input_schema_refuses_unknown_fields():
    """The generic invalid call of every tool relies on this."""
    for tool in registry.tools():
        assert tool.input_schema.get("additionalProperties") is False, tool.name


def test_advertised_output_schemas_are_objects_accepting_answer_or_error():
    sample_error = {"success": False, "timestamp": "2026-01-01T00:00:00Z",
                    "error": {"code": "E1612", "message": "bad", "details": [{"field": "x"}]}}
    for listed in mcp.list_tools():
        schema = listed.output_schema
        assert schema["type"] == "object", listed.name  # MCP: the root is an object schema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert conformance.schema_problems(schema, sample_error) == [], listed.name
        # Not vacuous: an error object missing its error, or a bare list, is refused.
        assert conformance.schema_problems(schema, {"success": False,
                                                    "timestamp": "2026-01-01T00:00:00Z"})
        assert conformance.schema_problems(schema, [])


def take_backends_down(settings, tmp_path) -> None:
    """Redis and the graph server at ports where nothing listens, an unwritable file root:
    answers then report partial saves and fallbacks, and must still conform."""
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.NEOMODEL_DATABASE_URL = f"bolt://root:x@127.0.0.1:{free_port()}"
    graph_backend.reset()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    settings.CONTEXT_DIR = blocker / "contexts"
    settings.RECOVERY_DIR = blocker / "recovery"


def test_openapi_documents_the_same_answer_and_error_schemas(admin_client):
    document = admin_client.get("/api/schema/?format=json").json()
    advertised = {listed.name: listed.output_schema for listed in mcp.list_tools()}
    for tool in registry.tools():
        responses = document["paths"][f"/api/v1/tools/{tool.name}/"]["post"]["responses"]
        answer = responses["200"]["content"]["application/json"]["schema"]
        assert answer == tool.output_schema == advertised[tool.name]["anyOf"][0], tool.name
        for status in {str(entry.http_status) for entry in REGISTRY.values()} | {"413"}:
            error = responses[status]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/Error"}, (tool.name, status)
            assert advertised[tool.name]["anyOf"][1] == ERROR_OBJECT, tool.name
    assert document["components"]["schemas"]["Error"] == ERROR_OBJECT


@pytest.mark.slow
@pytest.mark.parametrize("backends", ["bolt-graph", "postgres-graph", "backends-down"])
def test_rest_answers_conform_to_the_declared_schemas(live_api, settings, tmp_path, request,
                                                      backends):
    """Both graph readers, and the answers given while Redis, the graph and files fail."""
    request.addfinalizer(graph_backend.reset)  # the dead graph URL leaves the breaker open
    if backends == "postgres-graph":
        settings.ENABLE_NEO4J = False
    elif backends == "backends-down":
        take_backends_down(settings, tmp_path)
    url, token = live_api
    conformance.seed_crashed_session()
    headers = {"Authorization": f"Bearer {token}"}

    def call(tool: str, arguments: dict) -> conformance.Outcome:
        response = httpx.post(f"{url}/api/v1/tools/{tool}/", json=arguments, headers=headers,
                              timeout=30)
        return conformance.Outcome(tool, arguments, "", response.status_code != 200,
                                   response.json(), response.status_code)

    outcomes = conformance.run_scenario(call)
    problems = conformance.all_problems(outcomes, expectations=backends != "backends-down")
    assert not problems, "\n".join(problems)
    # The HTTP status is the one the error registry gives the answer's code.
    wrong_status = [(o.tool, o.body["error"]["code"], o.status) for o in outcomes
                    if o.is_error and REGISTRY[o.body["error"]["code"]].http_status != o.status]
    assert wrong_status == []
    assert len(outcomes) == len(conformance.steps()) + len(registry.tools())
    if backends != "backends-down":
        assert conformance.unreached_parts(outcomes) == []
