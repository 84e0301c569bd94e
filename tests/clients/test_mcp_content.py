"""Prompts, resources, subscriptions and progress over MCP (orchestrator.web.mcp_content):
all an agent without hooks (Aider, Roo Code) has, through the official Python MCP client
over Streamable HTTP against the live server, on both endpoints and both protocol eras
(the initialize handshake, and 2026-07-28 that the client picks by itself)."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError

from foundation.core.models import ApiToken, TokenScope
from foundation.core.projects import CLIENT_PROJECT_HEADER
from orchestrator.web import mcp_content
from tests import processes
from tests.conftest import free_port

pytestmark = pytest.mark.slow

TASK_URI = "orchestrator://tasks/{}/context"


@asynccontextmanager
async def connect(url: str, token: str, path: str = "/mcp/agent", *, mode: str = "auto",
                  headers: dict[str, str] | None = None):
    """The official client; ``mode="auto"`` negotiates 2026-07-28 with this server,
    ``"legacy"`` the initialize handshake."""
    sent = {"Authorization": f"Bearer {token}", **(headers or {})}
    async with (httpx2.AsyncClient(headers=sent, timeout=30) as http,
                Client(streamable_http_client(f"{url}{path}", http_client=http),
                       mode=mode, cache=None) as client):
        yield client


def run(url: str, token: str, action, **options):
    async def main():
        async with connect(url, token, **options) as client:
            return await action(client)

    return anyio.run(main)


def rest(url: str, token: str, tool: str, arguments: dict, *,
         headers: dict[str, str] | None = None) -> dict:
    response = httpx.post(f"{url}/api/v1/tools/{tool}/", json=arguments, timeout=30,
                          headers={"Authorization": f"Bearer {token}", **(headers or {})})
    assert response.status_code == 200, response.text
    return response.json()


def outcome_error(call) -> BaseException:
    """What ``call()`` fails with, out of the client's task groups."""
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - unwrapped for the caller to check
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return exc
    raise AssertionError("no error")


def refusal(url: str, token: str, action, **options) -> MCPError:
    """The MCP error ``action`` fails with (out of the client's task groups)."""
    error = outcome_error(lambda: run(url, token, action, **options))
    assert isinstance(error, MCPError), repr(error)
    return error


def assert_clean(error: MCPError) -> None:
    """An error a client may show: its E16xx code first, nothing of the server's insides."""
    text = json.dumps({"message": error.message, "data": error.data})
    for inside in ("Traceback", "File \"", "psycopg", "SELECT", "django", ".py"):
        assert inside not in text, text


# -- what the server offers ----------------------------------------------------------------

@pytest.mark.parametrize("path", ["/mcp", "/mcp/agent"])
def test_both_eras_see_prompts_and_resources_subscribe_only_where_it_works(live_api, path):
    url, token = live_api

    async def offered(client):
        return (client.protocol_version, client.server_capabilities,
                [p.name for p in (await client.list_prompts()).prompts],
                [t.uri_template for t in
                 (await client.list_resource_templates()).resource_templates])

    modern = run(url, token, offered, path=path)
    legacy = run(url, token, offered, path=path, mode="legacy")
    assert modern[0] == "2026-07-28" and legacy[0] == "2025-11-25"
    for _, capabilities, prompts, templates in (modern, legacy):
        assert prompts == ["resume", "task_briefing"]
        assert templates == ["orchestrator://tasks/{taskId}/context",
                             "orchestrator://projects/{projectId}/handoff"]
        assert capabilities.prompts is not None and capabilities.resources is not None
    # Stateless HTTP keeps no session to send a later notification on: the handshake era
    # is told there is no resources/subscribe; 2026-07-28 subscribes with
    # subscriptions/listen, whose answer is the stream.
    assert modern[1].resources.subscribe is True
    assert legacy[1].resources.subscribe is False


# -- prompts ---------------------------------------------------------------------------------

def test_task_briefing_is_the_context_bundle(live_api):
    url, token = live_api
    rest(url, token, "create_task", {"taskId": "brief-1", "name": "Parser",
                                     "status": "in_progress"})
    rest(url, token, "save_context_snapshot", {"taskId": "brief-1", "updates": {
        "immediateContext": {"workingOn": "the lexer", "nextStep": "error recovery"}}})
    bundle = rest(url, token, "get_context_bundle", {"taskId": "brief-1",
                                                     "budgetTokens": 500})

    async def briefing(client):
        return await client.get_prompt("task_briefing", {"taskId": "brief-1",
                                                         "budgetTokens": "500"})

    for path in ("/mcp/agent", "/mcp"):
        for mode in ("auto", "legacy"):
            prompt = run(url, token, briefing, path=path, mode=mode)
            assert [m.role for m in prompt.messages] == ["user"]
            assert prompt.messages[0].content.text == bundle["text"]
            assert "the lexer" in bundle["text"] and "brief-1" in prompt.description


def test_resume_is_the_resume_prompt_the_session_start_injects(live_api):
    url, token = live_api
    for task_id in ("crash-a", "crash-b"):
        rest(url, token, "create_task", {"taskId": task_id, "name": task_id,
                                         "status": "in_progress"})
    rest(url, token, "start_session", {"sessionId": "s-crashed", "taskId": "crash-a",
                                       "agentId": "aider-dev"})
    rest(url, token, "save_context_snapshot", {"taskId": "crash-a", "updates": {
        "immediateContext": {"workingOn": "retry logic", "nextStep": "backoff"}}})
    report = rest(url, token, "check_recovery", {"crashedSessionIds": ["s-crashed"]})
    injected = next(s for s in report["sessions"] if s["sessionId"] == "s-crashed")

    async def resume(client, **arguments):
        return await client.get_prompt("resume", arguments)

    for arguments in ({"taskId": "crash-a"}, {"agentId": "aider-dev"}, {}):
        prompt = run(url, token, lambda c, a=arguments: resume(c, **a))
        assert prompt.messages[0].content.text == injected["resumePrompt"]
        assert "s-crashed" in prompt.description
    assert "retry logic" in injected["resumePrompt"]
    for arguments in ({"taskId": "crash-b"}, {"agentId": "someone-else"}):
        nothing = run(url, token, lambda c, a=arguments: resume(c, **a))
        assert nothing.messages[0].content.text.startswith("No crashed, abandoned or paused")


def test_prompts_refuse_bad_arguments_with_codes(live_api):
    url, token = live_api
    rest(url, token, "create_task", {"taskId": "bad-args", "name": "x"})
    _, reader = ApiToken.issue("mcp-reader", TokenScope.READ)
    cases = [
        (token, "nope", {}, "E1612: No prompt named 'nope'"),
        (token, "task_briefing", {}, "E1612: Prompt task_briefing needs a taskId"),
        (token, "task_briefing", {"taskId": "bad-args", "extra": "1"},
         "E1612: Prompt task_briefing takes no argument 'extra'"),
        (token, "task_briefing", {"taskId": "bad-args", "budgetTokens": "many"},
         "E1612: budgetTokens must be a whole number"),
        (token, "task_briefing", {"taskId": "bad-args", "budgetTokens": "0"}, "E1612: "),
        (token, "task_briefing", {"taskId": "missing"}, "E1610: "),
        (token, "task_briefing", {"taskId": "../../etc"},
         "E1612: Invalid input for get_context_bundle: taskId"),
        (token, "resume", {"taskId": "missing"}, "E1610: "),
        (token, "resume", {"agentId": "a" * 300}, "E1612: agentId is longer"),
        # The resume prompt runs the crash sweep (check_recovery): not for a read token.
        (reader, "resume", {}, "E1608: A read token cannot call check_recovery"),
    ]
    for who, name, arguments, start in cases:
        error = refusal(url, who, lambda c, n=name, a=arguments: c.get_prompt(n, a))
        assert error.message.startswith(start), (name, arguments, error.message)
        assert error.code == -32602
        assert error.data["error"]["code"] == start[:5]
        assert_clean(error)


# -- resources -------------------------------------------------------------------------------

def test_a_task_context_resource_is_get_unified_context(live_api):
    url, token = live_api
    rest(url, token, "create_task", {"taskId": "res-1", "name": "Res", "keyFiles": ["a.py"]})
    expected = rest(url, token, "get_unified_context", {"taskId": "res-1"})

    async def read(client):
        return await client.read_resource(TASK_URI.format("res-1"))

    for path in ("/mcp/agent", "/mcp"):
        contents = run(url, token, read, path=path).contents
        assert [c.mime_type for c in contents] == ["application/json"]
        body = json.loads(contents[0].text)
        assert body["task"] == expected["task"] and body["projectId"] == "story-portal-app"


def test_the_handoff_note_resource(live_api):
    url, token = live_api
    uri = "orchestrator://projects/story-portal-app/handoff"

    async def read(client):
        return json.loads((await client.read_resource(uri)).contents[0].text)

    assert run(url, token, read) == {"projectId": "story-portal-app", "handoff": None}
    rest(url, token, "start_session", {"sessionId": "s-leaving"})
    rest(url, token, "end_session", {"sessionId": "s-leaving", "summary": "Parser done",
                                     "openItems": ["error messages"]})
    note = run(url, token, read)["handoff"]
    assert note["summary"] == "Parser done" and note["openItems"] == ["error messages"]
    assert note["fromSessionId"] == "s-leaving" and note["consumedAt"] is None


def test_resources_list_names_the_callers_unfinished_tasks_bounded(live_api, monkeypatch):
    url, token = live_api
    monkeypatch.setattr(mcp_content, "LISTED_TASKS", 3)  # the live server runs in-process
    for project in ("list-a", "list-b"):
        rest(url, token, "create_project", {"projectId": project, "name": project})
    for number in range(5):
        rest(url, token, "create_task", {"taskId": f"la-{number}", "name": f"A{number}",
                                         "projectId": "list-a"})
    rest(url, token, "create_task", {"taskId": "la-done", "name": "done",
                                     "projectId": "list-a", "status": "completed"})
    rest(url, token, "create_task", {"taskId": "lb-1", "name": "B", "projectId": "list-b"})
    _, limited = ApiToken.issue("mcp-list-a", TokenScope.WRITE, ["list-a"])

    async def listed(client):
        return [r.uri for r in (await client.list_resources()).resources]

    assert run(url, limited, listed) == [
        TASK_URI.format("la-4"), TASK_URI.format("la-3"), TASK_URI.format("la-2"),
        "orchestrator://projects/list-a/handoff"]
    in_b = run(url, token, listed, headers={CLIENT_PROJECT_HEADER: "list-b"})
    assert in_b == [TASK_URI.format("lb-1"), "orchestrator://projects/list-b/handoff"]
    error = refusal(url, limited, listed, headers={CLIENT_PROJECT_HEADER: "list-b"})
    assert error.message.startswith("E1608: This token cannot reach project 'list-b'")


def test_resources_keep_a_tokens_projects_and_refuse_hostile_uris(live_api):
    url, token = live_api
    for project in ("res-a", "res-b"):
        rest(url, token, "create_project", {"projectId": project, "name": project})
    rest(url, token, "create_task", {"taskId": "rb-secret", "name": "b", "projectId": "res-b"})
    _, limited = ApiToken.issue("mcp-res-a", TokenScope.WRITE, ["res-a"])

    def read(uri):
        return lambda client: client.read_resource(uri)

    # Another project's task answers exactly as a missing one: the token learns nothing.
    foreign = refusal(url, limited, read(TASK_URI.format("rb-secret")))
    missing = refusal(url, limited, read(TASK_URI.format("rb-nothing")))
    assert foreign.message == "E1610: Task 'rb-secret' does not exist"
    assert missing.message == "E1610: Task 'rb-nothing' does not exist"
    assert foreign.data["error"]["code"] == missing.data["error"]["code"] == "E1610"
    cases = [
        (limited, "orchestrator://projects/res-b/handoff", "E1608: This token cannot reach"),
        (token, "orchestrator://projects/no-such/handoff", "E1605: "),
        (token, "orchestrator://projects/..%2F..%2Fetc/handoff", "E1612: projectId must be"),
        (token, "orchestrator://tasks/..%2F..%2Fetc%2Fpasswd/context", "E1612: taskId must be"),
        (token, "file:///etc/passwd", "E1612: Unknown resource URI"),
        (token, "orchestrator://tasks/rb-secret/context/../x", "E1612: Unknown resource URI"),
        (token, "orchestrator://tasks//context", "E1612: Unknown resource URI"),
        (token, "orchestrator://tasks/rb-secret/context?x=1", "E1612: Unknown resource URI"),
        (token, "orchestrator://tasks/" + "x" * 5000 + "/context", "E1612: taskId must be"),
        (token, "", "E1612: Unknown resource URI"),
    ]
    for who, uri, start in cases:
        error = refusal(url, who, read(uri))
        assert error.message.startswith(start), (uri, error.message)
        assert len(error.message) < 600
        assert_clean(error)
    # The same on the handshake era.
    legacy = refusal(url, limited, read(TASK_URI.format("rb-secret")), mode="legacy")
    assert legacy.message == foreign.message


# -- subscriptions ---------------------------------------------------------------------------

def test_a_subscribed_task_context_hears_of_a_save_made_in_another_process(
        live_api, tmp_path: Path):
    """Two agents: the first listens (subscriptions/listen) through one web server, the
    second saves over REST through another process; the change crosses on Redis."""
    url, token = live_api
    _, other_agent = ApiToken.issue("mcp-other-agent", TokenScope.WRITE)
    for task_id in ("sub-watched", "sub-other"):
        rest(url, token, "create_task", {"taskId": task_id, "name": task_id})
    port = free_port()
    web_url = f"http://127.0.0.1:{port}"
    log = tmp_path / "web.log"
    watched = TASK_URI.format("sub-watched")
    with processes.running({"web": processes.web(port, workers=2)},
                           processes.service_env(tmp_path), log):
        processes.wait_until_serving(web_url, log)

        async def listen_and_read_again(client):
            events = []
            async with client.listen(resource_subscriptions=[watched]) as subscription:
                assert subscription.honored.resource_subscriptions == [watched]
                # A task nobody subscribed to first: its change must not arrive.
                for task_id in ("sub-other", "sub-watched"):
                    await anyio.to_thread.run_sync(
                        lambda t=task_id: rest(url, other_agent, "save_context_snapshot", {
                            "taskId": t, "updates": {"currentPhase": "review"}}))
                with anyio.fail_after(15):
                    async for event in subscription:
                        events.append(event)
                        break
            body = json.loads((await client.read_resource(watched)).contents[0].text)
            return events, body

        events, body = run(web_url, token, listen_and_read_again)
    assert [event.uri for event in events] == [watched]
    assert body["task"]["currentPhase"] == "review" and body["task"]["version"] == 2


def test_a_process_subscribes_to_task_changes_only_while_a_stream_is_open(live_api):
    """Every save is broadcast; a web process with no listen stream open takes none of it
    (no subscription to parse messages for nobody)."""
    from contexts.services import events
    from foundation.backends import redis_store
    from tests.waiting import wait_for

    url, token = live_api
    rest(url, token, "create_task", {"taskId": "relay-lazy", "name": "r"})

    def subscribers() -> int:
        return dict(redis_store.client().pubsub_numsub(events.channel()))[events.channel()]

    assert subscribers() == 0

    async def while_listening(client):
        async with client.listen(resource_subscriptions=[TASK_URI.format("relay-lazy")]):
            return await anyio.to_thread.run_sync(subscribers)

    assert run(url, token, while_listening) == 1
    assert wait_for(lambda: subscribers() == 0, timeout=10, interval=0.1)


def test_subscriptions_refuse_what_the_caller_may_not_read(live_api):
    url, token = live_api
    for project in ("sub-a", "sub-b"):
        rest(url, token, "create_project", {"projectId": project, "name": project})
    rest(url, token, "create_task", {"taskId": "sb-secret", "name": "b", "projectId": "sub-b"})
    _, limited = ApiToken.issue("mcp-sub-a", TokenScope.WRITE, ["sub-a"])

    def listen(*uris):
        async def action(client):
            async with client.listen(resource_subscriptions=list(uris)):
                pass
        return action

    cases = [
        (limited, [TASK_URI.format("sb-secret")], "E1610: Task 'sb-secret' does not exist"),
        (token, [TASK_URI.format("nothing")], "E1610: "),
        (token, ["orchestrator://projects/sub-a/handoff"],
         "E1612: Only task contexts (orchestrator://tasks/{taskId}/context) can be"),
        (token, ["https://example.com/"], "E1612: Unknown resource URI"),
        (token, [TASK_URI.format(f"t{n}") for n in range(101)],
         "E1612: A subscription watches at most 100 resources"),
    ]
    for who, uris, start in cases:
        error = refusal(url, who, listen(*uris))
        assert error.message.startswith(start), error.message
        assert_clean(error)


def test_a_token_holds_a_bounded_number_of_streams(live_api, monkeypatch):
    url, token = live_api
    monkeypatch.setattr(mcp_content, "STREAMS_PER_TOKEN", 1)  # the live server is in-process
    rest(url, token, "create_task", {"taskId": "streams-1", "name": "s"})
    uri = [TASK_URI.format("streams-1")]
    _, other = ApiToken.issue("mcp-streams-other", TokenScope.WRITE)

    async def second_stream(client):
        async with client.listen(resource_subscriptions=uri):
            # Another token has places of its own.
            async with (connect(url, other) as another,
                        another.listen(resource_subscriptions=uri)):
                pass
            async with client.listen(resource_subscriptions=uri):
                pass

    error = refusal(url, token, second_stream)
    assert error.message == ("E1618: This token has 1 subscription streams open already: "
                             "close one first")

    async def after_closing(client):  # the closed stream freed its place
        async with client.listen(resource_subscriptions=uri) as subscription:
            return subscription.honored.resource_subscriptions

    assert run(url, token, after_closing) == uri


def test_a_revoked_tokens_stream_ends_with_e1609(live_api, monkeypatch):
    """A listen stream outlives the request that checked its token: revoking the token ends
    the stream with E1609 at the next check of its token."""
    url, token = live_api
    monkeypatch.setattr(mcp_content, "TOKEN_RECHECK_SECONDS", 0.2)  # in-process server
    rest(url, token, "create_task", {"taskId": "revoked-watch", "name": "w"})
    row, listener = ApiToken.issue("mcp-revoked-listener", TokenScope.WRITE)
    uri = TASK_URI.format("revoked-watch")

    async def listen_through_a_revocation(client):
        heard = []
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            await anyio.to_thread.run_sync(lambda: rest(url, token, "save_context_snapshot", {
                "taskId": "revoked-watch", "updates": {"currentPhase": "before"}}))
            with anyio.fail_after(15):
                async for event in subscription:
                    heard.append(event.uri)
                    break
            row.revoked = True
            await anyio.to_thread.run_sync(row.save)
            with anyio.fail_after(15):
                async for event in subscription:  # ends with the server's error
                    heard.append(event.uri)
        return heard

    # The official client ends the stream as lost, with the server's error as the cause.
    lost = outcome_error(lambda: run(url, listener, listen_through_a_revocation))
    assert isinstance(lost, SubscriptionLost), repr(lost)
    error = lost.__cause__
    assert isinstance(error, MCPError), repr(error)
    assert error.message == "E1609: The token of this subscription stream was revoked"
    assert_clean(error)


# -- progress --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_long_tools_report_progress_when_asked(live_api, mode):
    url, token = live_api
    for number in range(3):
        rest(url, token, "create_task", {"taskId": f"prog-{number}", "name": "p"})

    def calling(tool):
        async def action(client):
            seen = []

            async def progress(done, total, message):
                seen.append((done, total))

            result = await client.call_tool(tool, {}, progress_callback=progress)
            assert not result.is_error, result.content
            return seen
        return action

    # check_conflicts: five methods, then storing; sync_hot_context: one chunk of tasks.
    assert run(url, token, calling("check_conflicts"), mode=mode) == \
        [(n, 6.0) for n in range(1, 7)]
    assert run(url, token, calling("sync_hot_context"), path="/mcp", mode=mode) == \
        [(3.0, 3.0)]


def test_only_a_request_asking_for_progress_gets_a_stream(live_api):
    url, token = live_api
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25",
               "Accept": "application/json, text/event-stream"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "check_conflicts", "arguments": {}}}
    plain = httpx.post(f"{url}/mcp/agent", json=call, headers=headers, timeout=30)
    assert plain.headers["content-type"].startswith("application/json")
    assert not plain.json()["result"]["isError"]
    call["params"]["_meta"] = {"progressToken": "p1"}
    streamed = httpx.post(f"{url}/mcp/agent", json=call, headers=headers, timeout=30)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    frames = [json.loads(line[5:]) for line in streamed.text.splitlines()
              if line.startswith("data:") and line[5:].strip()]
    assert [f.get("method") for f in frames] == ["notifications/progress"] * 6 + [None]
    assert frames[0]["params"]["progressToken"] == "p1"
    assert frames[-1]["id"] == 1 and not frames[-1]["result"]["isError"]


# -- stdio -----------------------------------------------------------------------------------

def test_mcp_stdio_offers_the_same_prompts_resources_and_subscriptions(transactional_db):
    """``manage.py mcp_stdio`` (a process, the official client on its stdin/stdout, MCP
    2026-07-28 picked by the client): the same prompts and resources, and a subscription
    hears of a save made by another process (this test's, through Redis)."""
    import os
    import sys

    from mcp.client.stdio import StdioServerParameters, stdio_client

    from foundation.core.tools import registry
    from foundation.core.tools.definition import ToolContext
    from tests.ops.test_commands import ROOT, _env_for_test_database

    here = ToolContext("command")
    registry.call_tool("create_task", {"taskId": "stdio-res", "name": "over stdio"}, here)
    params = StdioServerParameters(command=sys.executable,
                                   args=["manage.py", "mcp_stdio", "--agent-tools"],
                                   env=_env_for_test_database(), cwd=str(ROOT))
    uri = TASK_URI.format("stdio-res")

    async def session():
        with open(os.devnull, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
                prompts = [p.name for p in (await client.list_prompts()).prompts]
                body = json.loads((await client.read_resource(uri)).contents[0].text)
                async with client.listen(resource_subscriptions=[uri]) as subscription:
                    await anyio.to_thread.run_sync(lambda: registry.call_tool(
                        "save_context_snapshot",
                        {"taskId": "stdio-res", "updates": {"currentPhase": "x"}}, here))
                    with anyio.fail_after(15):
                        event = await subscription.__anext__()
                return client.protocol_version, prompts, body, event

    version, prompts, body, event = anyio.run(session)
    assert version == "2026-07-28" and prompts == ["resume", "task_briefing"]
    assert body["task"]["taskId"] == "stdio-res" and event.uri == uri
