"""Schemathesis over the whole OpenAPI document: every answer is what the document says.

Every operation (tool endpoints and browsing) gets a bounded number of generated requests,
valid (positive) and invalid (negative), with a bearer token, through the WSGI app in the
test's transaction, and each answer passes the checks ``make fuzz`` runs against the real
server (orchestrator/ops/fuzz.py, which says why the others are left out): no server
error, a documented status code, content type and headers, a body matching its schema,
and invalid input refused. Hypothesis runs derandomized with no example database, so a
run is the same on every machine and a failure reproduces.

The operations are only known once the schema is served (it needs the database), so one
test walks them all and reports every failing operation at the end, rather than
schemathesis' pytest plugin, whose subtests do not work with this pytest.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from orchestrator.wsgi import application

# ~116 operation x mode pairs; on a loaded 2-core box an example costs ~0.1 s.
EXAMPLES_PER_OPERATION_AND_MODE = 5
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance, negative_data_rejection]
pytestmark = pytest.mark.django_db


@pytest.fixture
def keep_test_connection():
    """Requests go straight to the WSGI app, whose request signals would close the test's
    database connection (and its transaction); Django's test client unhooks them too."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def nonconforming(operation, mode: GenerationMode, headers: dict[str, str]) -> list[str]:
    found: list[str] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES_PER_OPERATION_AND_MODE, derandomize=True, database=None,
              deadline=None, suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    def call(case) -> None:
        response = case.call(headers=headers)
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (AssertionError, BaseExceptionGroup) as failure:
            if len(found) < 3:
                found.append(f"{operation.label} ({mode}) -> {response.status_code}: "
                             f"{str(failure)[:600]}\n    {response.text[:300]}"
                             f"\n    {case.as_curl_command()[:600]}")

    call()
    return found


def test_every_answer_conforms_to_the_openapi_document(api_token, keep_test_connection):
    headers = {"Authorization": f"Bearer {api_token}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application,
                                            headers=headers)
    # Every case carries the token (a case generated without it would be sent with it, and
    # its other invalid parts then judged as if the missing header were the refusal's
    # reason); the 401s are tests/foundation/test_tokens.py's.
    schema.config.generation.update(with_security_parameters=False)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30  # every tool and every browsing endpoint
    failures: list[str] = []
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            failures += nonconforming(operation, mode, headers)
    assert not failures, "\n".join(failures)
