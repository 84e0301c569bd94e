"""Enrollment codes (issue 36): a code works for its uses and no more, expires, is refused
with one answer whatever is wrong with it, and the token it gives reaches only its project;
only admin tokens make codes over the network; every attempt counts against its address."""

from __future__ import annotations

import itertools
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from foundation.core.models import ApiToken, EnrollmentCode, TokenScope, hash_token
from foundation.core.tools import registry
from tests.clients import conformance
from tests.conftest import ToolClient

pytestmark = pytest.mark.django_db
ADDRESSES = (f"10.36.{n // 250}.{n % 250 + 1}" for n in itertools.count())


def enroll(code: str, *, machine: str = "laptop-7", directory: str = "/home/ann/shop",
           address: str | None = None):
    """POST /api/v1/enroll/ as a machine does, from its own address (the limit counts per
    address: each test uses fresh ones unless it tests the limit)."""
    client = Client(REMOTE_ADDR=address or next(ADDRESSES))
    response = client.post("/api/v1/enroll/", {"code": code, "machine": machine,
                                               "directory": directory},
                           content_type="application/json")
    return response.status_code, response.json(), response


def create_code(project: str, *args: str) -> str:
    out = StringIO()
    call_command("create_enrollment", "--project", project, *args, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


@pytest.fixture
def projects(tools):
    for key in ("shop", "bank"):
        tools.ok("create_project", {"projectId": key, "name": key})
    tools.ok("create_task", {"taskId": "bank-task", "name": "b", "projectId": "bank"})
    return tools


def test_a_code_gives_a_token_of_its_own_that_reaches_only_its_project(projects):
    code = create_code("shop")
    assert code.startswith("enr_") and len(code) > 30
    stored = EnrollmentCode.objects.get()
    # Only its hash is stored.
    assert stored.code_hash == hash_token(code) and code not in str(stored.__dict__)
    status, answer, _ = enroll(code)
    assert status == 200, answer
    assert answer["projectId"] == "shop" and answer["scope"] == TokenScope.WRITE
    assert answer["tokenName"] == "agent:laptop-7:/home/ann/shop"
    token = ApiToken.objects.get(name=answer["tokenName"])
    assert token.projects == ["shop"] and token.token_hash == hash_token(answer["token"])
    stored.refresh_from_db()
    assert stored.uses == 1 and stored.last_used_at and stored.issued == [token.name]

    machine = ToolClient(answer["token"])
    listed = machine.ok("list_projects")["projects"]
    assert [p["projectId"] for p in listed] == ["shop"]
    machine.ok("create_task", {"taskId": "shop-task", "name": "s", "projectId": "shop"})
    refused = machine.call("create_task", {"taskId": "x", "name": "x", "projectId": "bank"})
    assert (refused.status, refused.error_code) == (403, "E1608")
    hidden = machine.call("get_unified_context", {"taskId": "bank-task"})
    assert (hidden.status, hidden.error_code) == (404, "E1610")
    # Its use is recorded as any token's (the console lists it with its last use).
    assert ApiToken.objects.get(name=token.name).last_used_at is not None


def test_a_code_works_for_its_uses_and_no_more(projects):
    code = create_code("shop", "--uses", "2")
    first = enroll(code, directory="/w/a")
    second = enroll(code, directory="/w/a")  # the same directory again: a second token
    assert first[0] == second[0] == 200
    assert {first[1]["tokenName"], second[1]["tokenName"]} == {
        "agent:laptop-7:/w/a", "agent:laptop-7:/w/a #2"}
    status, answer, _ = enroll(code, directory="/w/c")
    assert (status, answer["error"]["code"]) == (401, "E1609")
    assert ApiToken.objects.filter(name__startswith="agent:").count() == 2
    assert EnrollmentCode.objects.get().uses == 2


def test_a_wrong_used_or_expired_code_gets_one_indistinguishable_refusal(projects):
    used = create_code("shop")
    assert enroll(used)[0] == 200
    expired = create_code("shop", "--expires-minutes", "5")
    # Five minutes later, as far as the code knows.
    EnrollmentCode.objects.filter(code_hash=hash_token(expired)).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    answers = []
    for code in (used, expired, "enr_" + "x" * 32, "nothing like a code"):
        status, answer, response = enroll(code)
        answer.pop("timestamp")
        answers.append((status, answer, response.headers.get("WWW-Authenticate")))
    assert answers[0][0] == 401
    assert all(a == answers[0] for a in answers), answers
    assert answers[0][1]["error"]["code"] == "E1609"
    assert answers[0][1]["error"]["message"] == "Invalid, used up or expired enrollment code"
    assert ApiToken.objects.filter(name__startswith="agent:").count() == 1


def test_bad_requests_are_400_and_the_attempts_of_one_address_are_limited(projects):
    status, answer, _ = enroll("")
    assert (status, answer["error"]["code"]) == (400, "E1612")
    address = next(ADDRESSES)
    statuses = [enroll("enr_wrong", address=address)[0] for _ in range(10)]
    assert statuses == [401] * 10
    code = create_code("shop")
    status, answer, response = enroll(code, address=address)
    assert (status, answer["error"]["code"]) == (429, "E1618")
    assert int(response.headers["Retry-After"]) >= 1
    # Another address is not held up, and the code was not used by the refused attempt.
    assert enroll(code)[0] == 200


def test_only_admin_tokens_make_codes_over_the_network(projects):
    arguments = {"projectId": "shop", "uses": 3, "expiresMinutes": 10}
    refused = projects.call("create_enrollment", arguments)  # a write token
    assert (refused.status, refused.error_code) == (403, "E1608")
    _, admin = ApiToken.issue(f"admin-{time.monotonic_ns()}", TokenScope.ADMIN)
    made = ToolClient(admin).ok("create_enrollment", arguments)
    assert made["uses"] == 3 and made["code"].startswith("enr_")
    assert not conformance.schema_problems(
        registry.get_tool("create_enrollment").output_schema, made)
    missing = ToolClient(admin).call("create_enrollment", {"projectId": "ghost"})
    assert (missing.status, missing.error_code) == (404, "E1605")
    for bad in ({"projectId": "shop", "uses": 0}, {"projectId": "shop", "expiresMinutes": 0},
                {"projectId": "shop", "uses": 10**6}):
        answer = ToolClient(admin).call("create_enrollment", bad)
        assert (answer.status, answer.error_code) == (400, "E1612"), bad


def test_create_enrollment_command_refuses_an_unknown_project(projects):
    with pytest.raises(CommandError, match="E1605"):
        create_code("ghost")
    assert not EnrollmentCode.objects.exists()


def test_the_enroll_endpoint_is_in_the_openapi_document(projects):
    document = projects.client.get("/api/schema/", {"format": "json"}).json()
    operation = document["paths"]["/api/v1/enroll/"]["post"]
    assert operation["operationId"] == "enroll"
    # No bearer token asked for (tool operations name bearerAuth; there is no global one).
    assert not operation.get("security") and "security" not in document
    assert document["paths"]["/api/v1/tools/create_enrollment/"]["post"]["security"]
    assert {"200", "400", "401", "429"} <= set(operation["responses"])


def test_the_console_makes_a_code_shows_it_once_and_lists_codes_and_tokens(projects,
                                                                          admin_client):
    add = admin_client.get("/admin/orchestrator/enrollmentcode/add/")
    assert add.status_code == 200
    answer = admin_client.post("/admin/orchestrator/enrollmentcode/add/",
                               {"project": "shop", "max_uses": 2, "expires_minutes": 30},
                               follow=True)
    assert answer.status_code == 200
    shown = [str(m) for m in answer.context["messages"]]
    (message,) = [m for m in shown if "Enrollment code for shop" in m]
    code = message.split("): ", 1)[1].split()[0]
    stored = EnrollmentCode.objects.get()
    assert stored.code_hash == hash_token(code) and stored.max_uses == 2
    assert stored.created_by.startswith("admin:")
    assert enroll(code, machine="ci-runner-3")[0] == 200
    listing = admin_client.get("/admin/orchestrator/enrollmentcode/").content.decode()
    assert stored.prefix in listing and "agent:ci-runner-3:/home/ann/shop" in listing
    assert code not in listing
    tokens = admin_client.get("/admin/orchestrator/apitoken/?q=agent").content.decode()
    assert "agent:ci-runner-3:/home/ann/shop" in tokens and ">shop<" in tokens
    # A code of an unknown project cannot be made from the form either.
    refused = admin_client.post("/admin/orchestrator/enrollmentcode/add/",
                                {"project": "ghost", "max_uses": 1, "expires_minutes": 5})
    assert refused.status_code == 200 and EnrollmentCode.objects.count() == 1
