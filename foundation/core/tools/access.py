"""Who may call what: token scopes, projects and session ownership (a session is written
only by the token that started it).

A token has a scope (``foundation.core.models.TokenScope``): ``read`` calls only tools the
registry marks read-only (E1608 otherwise); ``write`` calls every tool but writes only
the sessions it started itself (E1604 for another token's session, a session a save or
checkpoint names as its author included; another token's session in a list an app
registers with ``register_list_argument(..., own_sessions=True)`` is dropped); ``admin``
writes every session. A tool declares which session a call writes with
``Tool.writes_session`` (by default its ``sessionId``).
A token made with ``--project`` reaches only its projects, whatever its scope: anything of
another project that an app registered (``register_entity``, and the arguments naming it
with ``register_argument``) answers as if it did not exist, a call naming another project
(``projectId``) is E1608 (``check_projects``).

In-process callers (admin actions, management commands, Celery tasks) are not tokens:
their ``ToolContext.scope`` is None and nothing here restricts them.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connection

from foundation.core import prepared
from foundation.core.errors import OrchestratorError, task_not_found
from foundation.core.models import SessionOwner, TokenScope
from foundation.core.projects import CLIENT_PROJECT_HEADER, check_project_id
from foundation.core.tools.definition import Tool, ToolContext

# Owners seen recently, so that the check does not cost a query on every heartbeat. An
# owner only changes when a session id is deleted (retention) and started again, so a
# minute of staleness is harmless; starting a session here refreshes its entry at once.
# "No owner" (a session started in-process: admin, command, stdio) is remembered too:
# otherwise every heartbeat of such a session paid a query to learn it again.
OWNER_CACHE_SECONDS = 60.0
OWNER_CACHE_SIZE = 10_000
_owners: dict[str, tuple[float, str | None]] = {}
_owners_lock = threading.Lock()


def _remember(session_id: str, owner: str | None) -> None:
    with _owners_lock:
        if len(_owners) >= OWNER_CACHE_SIZE:
            _owners.clear()
        _owners[session_id] = (time.monotonic(), owner)


def forget_session_owners() -> None:
    """Drop the cache (tests roll back the rows it reflects)."""
    with _owners_lock:
        _owners.clear()


def session_argument(arguments: dict[str, Any]) -> str | None:
    """``Tool.writes_session`` for tools whose ``sessionId`` names the session they write."""
    return arguments.get("sessionId")


def owner_of(session_id: str) -> str | None:
    cached = _owners.get(session_id)
    if cached and time.monotonic() - cached[0] < OWNER_CACHE_SECONDS:
        return cached[1]
    # One round trip: the owner, and whether the session exists at all (the "session"
    # kind its app registered). Only an existing session's answer is remembered; a session
    # id not started yet may get an owner any moment, and its first check must see it.
    # Prepared: every live session misses the cache once a minute in every web process,
    # and planning the join cost Postgres ten times what running it did (0.42 of 0.44 ms
    # at 800 agents, pg_stat_statements).
    sessions = _kinds.get(SESSION_KIND)
    if sessions is None:  # no app keeps sessions: only the owner rows tell
        row = prepared.fetch_one(_owner_sql(None), [session_id])
    else:
        row = prepared.fetch_one(_owner_sql(sessions.sql), [[session_id], session_id])
    if row is None:
        return None  # no such session and no owner row: nothing to protect, nothing cached
    owner = row["token_name"]
    _remember(session_id, owner)
    return owner


@functools.cache
def _owner_sql(sessions_sql: str | None) -> str:
    """``owner_of``'s statement: the same text each time, so it is planned once per
    connection."""
    owners = SessionOwner._meta.db_table
    if sessions_sql is None:
        return f"SELECT token_name FROM {owners} WHERE session_id = %s"
    return (f"SELECT o.token_name FROM ({sessions_sql}) AS s(id, project_id) "
            f"LEFT JOIN {owners} o ON o.session_id = s.id "
            f"UNION ALL SELECT token_name FROM {owners} WHERE session_id = %s LIMIT 1")


def owner_upsert_sql(started: str, owner: str) -> str:
    """The statement recording a session's owner, to run inside the caller's own (one round
    trip for a session's start): the owner row of each ``session_id`` the query ``started``
    names (a CTE of the caller), for the token name in the placeholder ``owner``; a
    restarted session takes its new owner. Only this module writes the owner rows."""
    return (f"INSERT INTO {SessionOwner._meta.db_table} (session_id, token_name, created_at) "
            f"SELECT session_id, {owner}::varchar, now() FROM {started} "
            f"WHERE {owner}::varchar IS NOT NULL "
            "ON CONFLICT (session_id) DO UPDATE SET token_name = EXCLUDED.token_name")


def forget_owners_of_removed(existing_sql: str) -> int:
    """Drop the owner rows of sessions that no longer exist: ``existing_sql`` selects the
    ids of those that do, which only the app keeping sessions knows (retention asks it).
    The number dropped."""
    owners = SessionOwner._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {owners} o WHERE NOT EXISTS (SELECT 1 FROM "
                       f"({existing_sql}) AS s(id) WHERE s.id = o.session_id)")
        return cursor.rowcount


def session_owner(context: ToolContext) -> str | None:
    """The owner of a session ``context`` starts: its token's name; None for in-process
    callers, which are not tokens (start_session writes the row)."""
    if context.scope is None or not context.actor:
        return None
    return context.actor


def remember_session_owner(session_id: str, owner: str | None) -> None:
    """A session just started by ``owner`` (``session_owner``): its entry is fresh."""
    if owner is not None:
        _remember(session_id, owner)


def check_access(tool: Tool, arguments: dict[str, Any], context: ToolContext
                 ) -> dict[str, Any]:
    """The arguments the call may go on with; E1608 / E1604, or the not-found error of
    something of another project, when the calling token may not make it."""
    if context.project is not None:
        check_client_project(context)
    if context.projects is not None:
        arguments = check_projects(tool, arguments, context.projects)
    if context.scope is None or context.scope == TokenScope.ADMIN:
        return arguments
    if tool.admin_only:
        raise OrchestratorError("E1608", f"Only an admin token can call {tool.name}",
                                {"tool": tool.name, "scope": context.scope})
    if context.scope == TokenScope.METRICS:  # whatever the transport (auth.metrics_only)
        raise OrchestratorError("E1608", f"A metrics token cannot call {tool.name}: it reads "
                                "/metrics only", {"tool": tool.name, "scope": context.scope})
    if context.scope == TokenScope.READ and not tool.read_only:
        raise OrchestratorError(
            "E1608", f"A read token cannot call {tool.name}: it changes stored data",
            {"tool": tool.name, "scope": context.scope})
    if not tool.read_only:
        arguments = _own_sessions_only(arguments, context)
    session_id = tool.writes_session(arguments) if tool.writes_session else None
    if not session_id:
        return arguments
    owner = owner_of(session_id)
    if owner is not None and owner != context.actor:
        raise OrchestratorError(
            "E1604", f"Session {session_id!r} was started by another token; only that token "
            "or an admin token may change it", {"sessionId": session_id, "tool": tool.name})
    return arguments


# Lists of sessions a write changes where it may (such as ids to mark crashed now; the
# apps register them): another token's session is dropped, as one that is not live is left
# alone, so that no token ends another's session. Nearly always empty, so the hot path
# pays nothing.
_session_lists: dict[str, None] = {}


def _own_sessions_only(arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    for name in _session_lists:
        listed = arguments.get(name)
        if isinstance(listed, list) and listed:
            mine = [s for s in listed if owner_of(s) in (None, context.actor)]
            if len(mine) != len(listed):
                arguments = {**arguments, name: mine}
    return arguments


# -- projects ------------------------------------------------------------------------------
# What lives in a project is the apps' to say, registered from above (each app's tools
# module): the kinds of things (a query for the project of each id) and the arguments that
# name one, each with the error its tool gives for a missing one, which a call naming one of
# a project the token may not reach gets too, so a token learns nothing about other projects.
SESSION_KIND = "session"  # the kind whose ids session owners are kept for


@dataclass(frozen=True)
class EntityKind:
    """``sql``: (id, project id) of each of the ids in its one parameter (a text array);
    ``id_pattern``: the ids it can hold (others are not looked up)."""

    sql: str
    id_pattern: re.Pattern[str] | None = None


NotFound = Callable[[str], OrchestratorError]

_kinds: dict[str, EntityKind] = {}
# Argument (a dotted path for one inside an object) -> (kind, the tool's missing-id error).
_arguments: dict[str, tuple[str, NotFound]] = {}
# Lists of ids a call acts on only where they exist and may be acted on: one of another
# project is dropped, as one that does not exist is ignored.
_filtered: dict[str, str] = {}


def register_entity(kind: str, sql: str, *, id_pattern: re.Pattern[str] | None = None) -> None:
    """Things of ``kind`` live in a project: ``sql`` selects (id, project id) of the ids in
    its one parameter (a text array)."""
    _kinds[kind] = EntityKind(sql, id_pattern)
    forget_entity_projects()


def register_argument(name: str, kind: str, not_found: NotFound) -> None:
    """An argument (``a.b`` for ``b`` inside the object ``a``) holding the id, or a list of
    ids, of something of ``kind``; ``not_found(id)`` is what its tools answer for a missing
    one."""
    _arguments[name] = (kind, not_found)


def register_list_argument(name: str, kind: str, *, own_sessions: bool = False) -> None:
    """A list of ids of ``kind`` a call acts on only where they exist: ids of another project
    are dropped; with ``own_sessions`` (sessions a write changes) another token's too."""
    _filtered[name] = kind
    if own_sessions:
        _session_lists[name] = None


# What project each registered thing is in: that never changes, so a cached answer stays
# right (a deleted id's entry answers as before: its tool says it is gone). Saves the
# restricted token's hot calls (heartbeat, record_activity) a query.
ENTITY_CACHE_SIZE = 100_000
_entity_projects: dict[tuple[str, str], str] = {}
_entity_lock = threading.Lock()


def forget_entity_projects() -> None:
    """Drop the cache (tests roll back the rows it reflects)."""
    with _entity_lock:
        _entity_projects.clear()


def _argument(arguments: dict[str, Any], name: str) -> Any:
    value: Any = arguments
    for part in name.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


Reference = tuple[str, str, str, NotFound | None]


def _references(tool: Tool, arguments: dict[str, Any]) -> list[Reference]:
    """(kind, id, argument, missing-id error) of everything the arguments name: the plain
    arguments, then those inside objects, then the filtered lists; no error for ids in lists
    the tool acts on only where they exist."""
    found: list[Reference] = []
    for name, (kind, not_found) in sorted(_arguments.items(), key=lambda a: "." in a[0]):
        if name in tool.creates:
            continue
        value = _argument(arguments, name)
        ignored = name in tool.only_known
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item:
                found.append((kind, item, name, None if ignored else not_found))
    for name, kind in _filtered.items():
        value = arguments.get(name)
        for item in value if isinstance(value, list) else []:
            if isinstance(item, str):
                found.append((kind, item, name, None))
    return found


def projects_of(keys: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The project of each (kind, id) that exists."""
    with _entity_lock:
        known = {key: _entity_projects[key] for key in keys if key in _entity_projects}
    wanted = keys - set(known)
    ids: dict[str, list[str]] = {}
    for kind, item in wanted:
        entity = _kinds.get(kind)
        if entity is not None and (entity.id_pattern is None or entity.id_pattern.match(item)):
            ids.setdefault(kind, []).append(item)
    if ids:
        kinds = sorted(ids)
        params: list[Any] = []
        for kind in kinds:
            params += [kind, ids[kind]]
        with connection.cursor() as cursor:
            cursor.execute(" UNION ALL ".join(
                f"SELECT %s::text, e.id::text, e.project_id FROM ({_kinds[kind].sql}) "
                "AS e(id, project_id)" for kind in kinds), params)
            rows = cursor.fetchall()
        with _entity_lock:
            if len(_entity_projects) >= ENTITY_CACHE_SIZE:
                _entity_projects.clear()
            for kind, item, project in rows:
                _entity_projects[(kind, item)] = project
                known[(kind, item)] = project
    return known


def check_client_project(context: ToolContext) -> None:
    """The project a client says it works in: a well-formed id (E1612) its token may
    reach (E1608). Whether it exists is the tool's question (E1605 where it matters)."""
    check_project_id(context.project, field=CLIENT_PROJECT_HEADER)
    if context.projects is not None and context.project not in context.projects:
        raise OrchestratorError(
            "E1608", f"This token cannot reach project {context.project!r}",
            {"projectId": context.project, "projects": sorted(context.projects)})


def check_projects(tool: Tool, arguments: dict[str, Any], allowed: frozenset[str]
                   ) -> dict[str, Any]:
    """A token limited to ``allowed``: E1608 for a project argument naming another project;
    for a task, session, conflict or checkpoint of another project, the answer the tool
    gives for a missing one; ids of another project dropped from lists the tool acts on
    only where they exist."""
    project = arguments.get("projectId")
    if isinstance(project, str) and project not in allowed:
        raise OrchestratorError(
            "E1608", f"This token cannot reach project {project!r}",
            {"projectId": project, "projects": sorted(allowed)})
    references = _references(tool, arguments)
    if not references:
        return arguments
    projects = projects_of({(kind, item) for kind, item, _, _ in references})
    foreign = {(kind, item) for (kind, item), owner in projects.items() if owner not in allowed}
    if not foreign:
        return arguments
    hidden = [r for r in references if r[3] and (r[0], r[1]) in foreign]
    if hidden:
        # Where the tool would stop at the first missing one, stop at the first missing
        # or foreign one (whichever comes first in the arguments), as it would.
        def unknown(reference) -> bool:
            return (reference[0], reference[1]) in foreign or \
                (reference[0], reference[1]) not in projects
        group = [r for r in references if r[2] in tool.task_group and r[3]]
        if any((r[0], r[1]) in foreign for r in group):
            missing = list(dict.fromkeys(r[1] for r in group if unknown(r)))
            if tool.task_group_sorted:
                missing.sort()
            raise task_not_found(missing[0], missing=missing)
        kind, item, _, not_found = next(r for r in references if r[3] and unknown(r))
        assert not_found is not None
        raise not_found(item)
    cleaned = dict(arguments)
    for name in {r[2] for r in references if not r[3]}:
        if isinstance(cleaned.get(name), list):
            kind = next(r[0] for r in references if r[2] == name)
            cleaned[name] = [i for i in cleaned[name] if (kind, i) not in foreign]
    return cleaned
