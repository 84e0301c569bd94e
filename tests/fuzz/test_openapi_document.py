"""The OpenAPI document says what the server answers, and the answers schemathesis found
wrong are right (orchestrator/web/openapi.py; ``make fuzz`` runs the whole check)."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def document(api_token) -> dict:
    response = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}").get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def test_every_operation_documents_its_error_answers(document):
    error_ref = {"$ref": "#/components/schemas/Error"}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            expected = {"401", "429", "500", "503"} | (
                {"400"} if method == "get" else
                # The enrollment exchange is no tool: a bad body, a foreign Origin, a body
                # too large are all it adds.
                {"400", "403", "413"} if path == "/api/v1/enroll/" else
                {"400", "403", "404", "409", "413", "500", "502", "503"})
            assert expected <= responses.keys(), (method, path, sorted(responses))
            for status in expected:
                assert responses[status]["content"]["application/json"]["schema"] == error_ref
            assert "Retry-After" in responses["429"]["headers"]
            if method == "get" and "{" in path:
                assert "404" in responses, path
    assert "E1654" in document["paths"]["/api/v1/tasks/"]["get"]["responses"]["503"][
        "description"]


def test_list_and_detail_shapes_are_separate(document):
    schemas = document["components"]["schemas"]
    assert "snapshot" not in schemas["Checkpoint"]["properties"]
    assert "snapshot" in schemas["CheckpointDetail"]["required"]
    assert "snapshot" not in schemas["Version"]["properties"]
    # A detail action answering a page is documented as a page.
    events = document["paths"]["/api/v1/sessions/{session_id}/events/"]["get"]
    ref = events["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.endswith("/PaginatedEventList")
    # Nullable JSON: any value (oneOf [{}, null] never validates null).
    assert schemas["Session"]["properties"]["unsavedChanges"] == {}


def test_a_tool_with_required_fields_requires_a_body(document):
    tool = document["paths"]["/api/v1/tools/add_task_relationship/"]["post"]
    assert tool["requestBody"]["required"] is True


def test_an_unknown_api_address_is_a_json_404(tools):
    response = tools.client.get("/api/v1/checkpoints/%C2%84/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "E1610"


@pytest.mark.parametrize("value", ["yes", "null", "2"])
def test_a_boolean_filter_refuses_what_is_not_a_boolean(tools, value):
    for path, name in (("/api/v1/handoffs/", "active"), ("/api/v1/sessions/", "recoveryNeeded")):
        response = tools.get(path, **{name: value})
        assert response.status == 400, (path, response.body)
        assert response.error_code == "E1612"
        assert tools.get(path, **{name: "true"}).status == 200
        assert tools.get(path, **{name: ""}).status == 200  # empty: as if absent


def test_a_blank_tool_body_is_malformed_json(tools):
    assert tools.call("list_projects", raw="").status == 200  # no body: no arguments
    response = tools.call("list_projects", raw="\n")
    assert response.status == 400
    assert response.error_code == "E1612"
