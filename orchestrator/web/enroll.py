"""``POST /api/v1/enroll/``: a machine exchanges an enrollment code for a token of its own
(``foundation.core.enrollment``; issue 36). The one call without a bearer token besides
/healthz: the code is the credential. Every attempt counts against its address's budget
(``ratelimit.attempt_retry_after``), refused with 429 beyond it."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from foundation.core import enrollment
from orchestrator.web import ratelimit


class EnrollRequest(serializers.Serializer):
    code = serializers.CharField(max_length=200, help_text="The enrollment code")
    machine = serializers.CharField(max_length=200, help_text="The machine's host name")
    directory = serializers.CharField(max_length=1000,
                                      help_text="The project directory on that machine")


class EnrollAnswer(serializers.Serializer):
    token = serializers.CharField(help_text="The new token: shown only in this answer")
    tokenName = serializers.CharField()
    prefix = serializers.CharField()
    scope = serializers.CharField()
    projectId = serializers.CharField(help_text="The one project the token reaches")
    timestamp = serializers.DateTimeField()


class EnrollView(APIView):
    authentication_classes: list = []
    permission_classes = [permissions.AllowAny]
    throttle_classes: list = []
    # A bad body, a foreign Origin (E1671, before any view) and a body too large; 401 (a
    # refused code), 429, 500 and 503 every operation documents.
    ERROR_STATUSES = (400, 403, 413)

    @extend_schema(
        operation_id="enroll", tags=["enrollment"], auth=[],
        summary="Exchange an enrollment code for a token limited to its project",
        description=(
            "No bearer token: the code is the credential. A code made with "
            "`manage.py create_enrollment` (or the console, or create_enrollment) works for "
            "its uses until it expires; a wrong, used up or expired code gets the same "
            "401 E1609. At most 10 attempts a minute per address (429 with Retry-After)."),
        request=EnrollRequest,
        responses={200: OpenApiResponse(EnrollAnswer, description="The machine's token")})
    def post(self, request, *args, **kwargs):
        wait = ratelimit.attempt_retry_after(request.META.get("REMOTE_ADDR") or "?")
        if wait is not None:
            status, body, headers = ratelimit.attempt_refusal(wait)
            return Response(body, status=status, headers=headers)
        given = EnrollRequest(data=request.data)
        given.is_valid(raise_exception=True)
        answer = enrollment.redeem(given.validated_data["code"],
                                   machine=given.validated_data["machine"],
                                   directory=given.validated_data["directory"])
        return Response(answer)
