"""The same tool through REST and through the official MCP client: same result, same error."""

from __future__ import annotations

import httpx
import pytest

from tests import mcp_client


def rest(url: str, token: str | None, tool: str, payload) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{url}/api/v1/tools/{tool}/", json=payload, headers=headers, timeout=30)


def test_rest_and_mcp_give_the_same_result(live_api):
    url, token = live_api
    via_rest = rest(url, token, "get_unified_context", {}).json()
    via_mcp = mcp_client.call_tool(url, token, "get_unified_context", {})
    assert not via_mcp.is_error
    for body in (via_rest, via_mcp.structured_content):
        body["metadata"].pop("loadedAt")
    assert via_rest == via_mcp.structured_content
    assert via_rest["projectId"] == "story-portal-app"


def test_create_task_over_both_transports_and_the_same_error_object(live_api):
    url, token = live_api
    created = rest(url, token, "create_task", {"taskId": "t-rest", "name": "Via REST"})
    assert created.status_code == 200
    assert created.json()["version"] == 1
    via_mcp = mcp_client.call_tool(url, token, "create_task", {"taskId": "t-mcp", "name": "MCP"})
    assert not via_mcp.is_error and via_mcp.structured_content["version"] == 1

    duplicate_rest = rest(url, token, "create_task", {"taskId": "t-mcp", "name": "again"})
    duplicate_mcp = mcp_client.call_tool(url, token, "create_task",
                                         {"taskId": "t-rest", "name": "again"})
    assert duplicate_rest.status_code == 409
    assert duplicate_mcp.is_error
    rest_error = duplicate_rest.json()["error"]
    mcp_error = duplicate_mcp.structured_content["error"]
    assert rest_error["code"] == mcp_error["code"] == "E1614"
    assert duplicate_mcp.content[0].text.startswith("E1614: ")
    assert set(rest_error) == set(mcp_error)


def test_invalid_input_is_e1612_on_both(live_api):
    url, token = live_api
    bad = {"taskId": "../x", "name": "escape"}
    via_rest = rest(url, token, "create_task", bad)
    via_mcp = mcp_client.call_tool(url, token, "create_task", bad)
    assert via_rest.status_code == 400
    assert via_rest.json()["error"]["code"] == "E1612"
    assert via_mcp.is_error and via_mcp.structured_content["error"]["code"] == "E1612"
    assert via_rest.json()["error"]["details"] == via_mcp.structured_content["error"]["details"]


def test_tools_list_matches_rest_schemas(live_api):
    url, token = live_api
    listed = {t.name: t for t in mcp_client.list_tools(url, token).tools}
    for name in ("create_task", "get_unified_context"):
        assert name in listed
    schema = httpx.get(f"{url}/api/schema/?format=json",
                       headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
    body = schema["paths"]["/api/v1/tools/create_task/"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"] == listed["create_task"].input_schema


@pytest.mark.parametrize("header", [None, "Bearer wrong-token", "Basic abc", "Bearer"])
def test_rest_and_mcp_refuse_missing_or_wrong_token(live_api, header):
    url, _ = live_api
    headers = {"Authorization": header} if header else {}
    response = httpx.post(f"{url}/api/v1/tools/get_unified_context/", json={}, headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "E1609"
    mcp = httpx.post(f"{url}/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
                     json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert mcp.status_code == 401
    assert mcp.json()["error"]["code"] == "E1609"


def test_malformed_json_is_a_400_in_spec_format(tools):
    response = tools.call("create_task", raw="{not json")
    assert response.status == 400
    assert response.error_code == "E1612"
    assert response.body["success"] is False and "timestamp" in response.body


def test_rest_tool_calls_answer_errors_like_the_drf_view(live_api, tools):
    """The ASGI tool lane and the DRF view (what a WSGI deployment reaches) give the same
    statuses and error objects: both answer with fastlane.answer."""
    url, token = live_api
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    cases = [
        ("create_task", "{not json", 400, "E1612"),
        ("create_task", '["a list"]', 400, "E1612"),
        ("create_task", '{"taskId": "x"}', 400, "E1612"),
        ("no_such_tool", "{}", 404, "E1615"),
        ("get_unified_context", '{"taskId": "missing"}', 404, "E1610"),
    ]
    for tool, body, status, code in cases:
        live = httpx.post(f"{url}/api/v1/tools/{tool}/", content=body, headers=auth)
        assert (live.status_code, live.json()["error"]["code"]) == (status, code), (tool, body)
        assert live.json()["success"] is False and "timestamp" in live.json()
        if tool != "no_such_tool":  # the DRF view exists only for registered tools
            wsgi = tools.client.post(f"/api/v1/tools/{tool}/", data=body,
                                     content_type="application/json")
            assert (wsgi.status_code, wsgi.json()["error"]["code"]) == (status, code), \
                (tool, body)
    empty = httpx.post(f"{url}/api/v1/tools/get_unified_context/", headers=auth)
    assert empty.status_code == 200 and empty.json()["projectId"] == "story-portal-app"
    huge = httpx.post(f"{url}/api/v1/tools/create_task/", headers=auth,
                      content=b'{"taskId": "big", "name": "' + b"x" * 3_000_000 + b'"}')
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "E1612"
    # Other methods on a tool URL still reach Django (405), not the tool lane.
    assert httpx.get(f"{url}/api/v1/tools/create_task/", headers=auth).status_code == 405
