"""Enrollment codes (issue 36): how a developer's machine joins the server without anyone
handing it a token.

An operator makes a code for one project (console action, ``manage.py create_enrollment``,
or an admin token's ``create_enrollment`` call); ``orchestrator-agent setup --enroll CODE``
exchanges it once (``POST /api/v1/enroll/``, no token) for a token of the machine's own:
write scope, limited to the code's project, named after the machine and the directory,
listed and revocable with every other token (console, Tokens) with its last use.

The rules: only the code's sha256 is stored (as a token's); a code works for its
``max_uses`` exchanges and never after ``expires_at``; a wrong, used up or expired code is
refused with the same error (E1609), so an answer never says whether a code ever existed.
The exchange is one transaction on the code's row (``select_for_update``): two machines
racing for the last use cannot both get a token.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from foundation.core.errors import OrchestratorError, project_not_found
from foundation.core.models import ApiToken, EnrollmentCode, Project, TokenScope, hash_token
from foundation.core.stamps import iso, now_iso
from foundation.core.tools import Tool, ToolContext, register
from foundation.core.tools.schema import TIMESTAMP, integer, obj, project_id, string

CODE_PREFIX = "enr_"
DEFAULT_USES = 1
DEFAULT_EXPIRES_MINUTES = 60
MAX_USES = 1000
# A week: a code is for a machine joining now, not a standing credential.
MAX_EXPIRES_MINUTES = 7 * 24 * 60
# One message for a code that is wrong, used up or expired: telling them apart would let
# a guesser learn which codes exist.
REFUSED = "Invalid, used up or expired enrollment code"
TOKEN_NAME_LENGTH: int = ApiToken._meta.get_field("name").max_length or 0


def create_enrollment(project: str, *, uses: int = DEFAULT_USES,
                      expires_minutes: int = DEFAULT_EXPIRES_MINUTES,
                      actor: str = "") -> dict[str, Any]:
    """A new code for ``project`` (E1605 if there is none); the code itself is in the
    answer only, never stored."""
    if not Project.objects.filter(pk=project).exists():
        raise project_not_found(project)
    raw = CODE_PREFIX + secrets.token_urlsafe(24)
    code = EnrollmentCode.objects.create(
        code_hash=hash_token(raw), prefix=raw[:12], project_id=project, max_uses=uses,
        expires_at=timezone.now() + timedelta(minutes=expires_minutes),
        created_by=actor[:150])
    return {"success": True, "code": raw, "prefix": code.prefix, "projectId": project,
            "uses": uses, "expiresAt": iso(code.expires_at), "timestamp": now_iso()}


def token_name(machine: str, directory: str, taken: set[str] | None = None) -> str:
    """``agent:<machine>:<directory>``, cut to the column, with `` #2``, `` #3``… when a
    token of that name exists (the same directory enrolled again)."""
    clean = "".join(c if c.isprintable() else "?" for c in f"{machine}:{directory}")
    base = f"agent:{clean}"[:TOKEN_NAME_LENGTH]
    names = taken if taken is not None else set(ApiToken.objects.filter(
        name__startswith=base).values_list("name", flat=True))
    if base not in names:
        return base
    n = 2
    while True:
        suffix = f" #{n}"
        name = base[:TOKEN_NAME_LENGTH - len(suffix)] + suffix
        if name not in names:
            return name
        n += 1


def redeem(raw: str, *, machine: str, directory: str) -> dict[str, Any]:
    """Exchange a code for a new token limited to its project; E1609 (401) for a code
    that is wrong, used up or expired, the same answer for each."""
    now = timezone.now()
    with transaction.atomic():
        code = EnrollmentCode.objects.select_for_update().filter(
            code_hash=hash_token(raw.strip())).first()
        if code is None or code.uses >= code.max_uses or code.expires_at <= now:
            raise OrchestratorError("E1609", REFUSED)
        name = token_name(machine, directory)
        token, secret = ApiToken.issue(name, TokenScope.WRITE, [code.project_id])
        code.uses += 1
        code.last_used_at = now
        code.issued = [*code.issued, token.name]
        code.save(update_fields=["uses", "last_used_at", "issued"])
    return {"token": secret, "tokenName": token.name, "prefix": token.prefix,
            "scope": token.scope, "projectId": code.project_id, "timestamp": now_iso()}


def _actor(context: ToolContext) -> str:
    return context.actor or context.transport


register(Tool(
    name="create_enrollment",
    description=(
        "Create an enrollment code for a project (admin tokens only): a developer's machine "
        "runs `orchestrator-agent setup --url URL --enroll CODE --project-dir DIR`, which "
        "exchanges it (POST /api/v1/enroll/) for a token of its own limited to the project. "
        "The code works `uses` times (default 1) for `expiresMinutes` (default 60) and is "
        "shown only in this answer. E1605 unknown project, E1608 not an admin token."
    ),
    input_schema=obj({
        "projectId": project_id("The project the machines join"),
        "uses": integer("How many machines may use it", minimum=1, maximum=MAX_USES,
                        default=DEFAULT_USES),
        "expiresMinutes": integer("Minutes until it stops working", minimum=1,
                                  maximum=MAX_EXPIRES_MINUTES,
                                  default=DEFAULT_EXPIRES_MINUTES),
    }, ["projectId"]),
    output_schema=obj({"success": {"type": "boolean"}, "code": string(),
                       "prefix": string(), "projectId": string(), "uses": integer(),
                       "expiresAt": TIMESTAMP, "timestamp": TIMESTAMP},
                      ["success", "code", "prefix", "projectId", "uses", "expiresAt"]),
    handler=lambda args, ctx: create_enrollment(
        args["projectId"], uses=args.get("uses", DEFAULT_USES),
        expires_minutes=args.get("expiresMinutes", DEFAULT_EXPIRES_MINUTES),
        actor=_actor(ctx)),
    admin_only=True,
))
