"""Host and Origin on every path the real server answers (orchestrator.web.hosts): a Host
outside ALLOWED_HOSTS is 400 E1670 and a foreign browser Origin 403 E1671 on /mcp,
/mcp/agent, the REST tool lane and Django's pages alike; agents that send no Origin and
pages of this server keep working (the conformance suite's dns-rebinding-protection
scenario: tests/clients/test_conformance_suite.py)."""

from __future__ import annotations

import httpx
import pytest

MCP_INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "host-origin-test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
# (method, path, JSON body): every lane of the ASGI router.
PATHS = [
    ("POST", "/mcp", MCP_INITIALIZE),
    ("POST", "/mcp/agent", MCP_INITIALIZE),
    ("POST", "/api/v1/tools/list_projects/", {}),
    ("GET", "/api/v1/tasks/", None),
    ("GET", "/admin/login/", None),
]


def request(live_api, method: str, path: str, body, **headers: str) -> httpx.Response:
    url, token = live_api
    return httpx.request(method, url + path, json=body, timeout=30,
                         headers={"Authorization": f"Bearer {token}", **MCP_HEADERS, **headers})


def own_host(live_api) -> str:
    return live_api[0].removeprefix("http://")


@pytest.mark.parametrize(("method", "path", "body"), PATHS)
def test_a_host_outside_allowed_hosts_is_refused(live_api, method, path, body):
    for host in ("evil.example.com", "evil.example.com:80", "127.0.0.1.evil.example.com",
                 "bad host"):
        answer = request(live_api, method, path, body, Host=host)
        assert answer.status_code == 400, (host, answer.text)
        assert answer.json()["error"]["code"] == "E1670"
        assert answer.json()["success"] is False


@pytest.mark.parametrize(("method", "path", "body"), PATHS)
def test_a_foreign_browser_origin_is_refused(live_api, method, path, body):
    for origin in ("http://evil.example.com", f"http://{own_host(live_api)}.evil.example.com",
                   "null", "https://evil.example.com:443"):
        answer = request(live_api, method, path, body, Origin=origin)
        assert answer.status_code == 403, (origin, answer.text)
        assert answer.json()["error"]["code"] == "E1671"


@pytest.mark.parametrize(("method", "path", "body"), PATHS)
def test_agents_without_origin_and_this_servers_pages_still_work(live_api, method, path,
                                                                   body):
    url = live_api[0]
    port = url.rsplit(":", 1)[1]
    for origin in (None, url, f"http://localhost:{port}", "http://localhost:3000"):
        answer = request(live_api, method, path, body, **({"Origin": origin} if origin else {}))
        assert answer.status_code == 200, (origin, answer.text)
    # Reached by another allowed name: Host localhost, the page's origin the same.
    answer = request(live_api, method, path, body, Host=f"localhost:{port}",
                     Origin=f"http://localhost:{port}")
    assert answer.status_code == 200, answer.text


def test_django_semantics_of_allowed_hosts_and_trusted_origins(live_api, settings):
    settings.ALLOWED_HOSTS = [".example.org", "127.0.0.1"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://console.example.net", "https://*.corp.example"]
    method, path, body = PATHS[2]
    for host in ("example.org", "api.example.org", "API.Example.org:8443", "api.example.org."):
        assert request(live_api, method, path, body, Host=host).status_code == 200, host
    for host in ("example.org.evil.com", "localhost", "notexample.org"):
        assert request(live_api, method, path, body, Host=host).status_code == 400, host
    for origin in ("https://console.example.net", "https://team.corp.example",
                   "https://api.example.org"):
        assert request(live_api, method, path, body, Origin=origin).status_code == 200, origin
    for origin in ("http://console.example.net", "https://corp.example.evil",
                   "https://localhost"):
        assert request(live_api, method, path, body, Origin=origin).status_code == 403, origin
    # "*" lets any Host in, but never makes every site's pages a trusted origin.
    settings.ALLOWED_HOSTS = ["*"]
    assert request(live_api, method, path, body, Host="anything.test").status_code == 200
    assert request(live_api, method, path, body,
                   Origin="http://evil.example.com").status_code == 403


def test_a_refusal_needs_no_token_and_reads_nothing(live_api):
    url, _ = live_api
    answer = httpx.post(url + "/api/v1/tools/list_projects/", json={}, timeout=30,
                        headers={"Host": "evil.example.com"})
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "E1670"
    answer = httpx.post(url + "/mcp", json=MCP_INITIALIZE, timeout=30,
                        headers={**MCP_HEADERS, "Origin": "http://evil.example.com"})
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "E1671"
