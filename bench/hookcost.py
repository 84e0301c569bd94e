"""``python -m bench.hookcost``: the server CPU one hook call costs, call by call.

    .venv/bin/python -m bench.hookcost                  # starts the `make run` stack itself
    .venv/bin/python -m bench.hookcost --calls 300

Capacity (``bench.agents``) is bounded by CPU per request on a 2-core machine, so this
measures that alone: one client, one call at a time (no queueing, no contention), a block
of ``--calls`` calls of one kind, and the CPU every server process group used over the
block (web workers, Postgres backends, Redis, Celery), divided by the calls. The calls are
the hook client's (see bench.agents): start_session (resolveTask, createTask, a bundle,
the recovery check), claim_files of one file (a session's first claim, then the same
file again), record_activity with 3 tool uses (one an Edit of a file new to the task,
then the same again: the file listed) and with none (notices, as UserPromptSubmit sends
it), heartbeat, end_session with a summary.

Then, on the stack started here, the floor of the same calls (bench.hookfloor): what each
promises, done plainly through the same drivers on the same rows, its CPU counted the same
way (this process's, which does the floor's work, Postgres's and Redis's) plus the CPU
uvicorn's HTTP protocol and a bare ASGI app spend per request, and ours against it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from bench.agents import (
    GENERATOR,
    CpuMeter,
    Stack,
    create_projects,
    iso_now,
    new_session_id,
    project_name,
)
from bench.common import machine_line

ROLES = ("web", "postgres", "redis", "celery worker", "celery beat", "arcadedb")


class Client:
    def __init__(self, url: str, token: str, project: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                        "X-Orchestrator-Project": project}

    def call(self, tool: str, arguments: dict) -> dict:
        self.conn.request("POST", f"/api/v1/tools/{tool}/", json.dumps(arguments),
                          self.headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise SystemExit(f"{tool}: HTTP {response.status} {body[:300]!r}")
        return json.loads(body)


def cpu_per_call(calls: list[Callable[[], Any]], root_pid: int
                 ) -> tuple[float, dict[str, float]]:
    """Run ``calls`` one after the other: (wall ms per call, role -> CPU ms per call)."""
    meter = CpuMeter(root_pid)
    started = time.perf_counter()
    for call in calls:
        call()
    wall = time.perf_counter() - started
    used = meter.seconds()  # role -> (processes, CPU seconds)
    return (wall / len(calls) * 1000,
            {role: seconds / len(calls) * 1000 for role, (_, seconds) in used.items()})


def measure(label: str, calls: list[tuple[str, dict]], client: Client, root_pid: int,
            rows: list) -> float:
    """One block of ``calls`` over HTTP: a row of server CPU per call by role; returns the
    total (ms)."""
    # A new connection per block: the server closes one idle for longer than its
    # keep-alive timeout, as it was during the floors before end_session's block.
    client.conn.close()
    wall, per_call = cpu_per_call([partial(client.call, tool, arguments)
                                   for tool, arguments in calls], root_pid)
    total = sum(v for role, v in per_call.items() if role != GENERATOR)
    rows.append([label, f"{wall:.1f}", *(f"{per_call.get(role, 0.0):.2f}" for role in ROLES),
                 f"{total:.2f}"])
    print(f"  {label}: {total:.2f} ms CPU per call", file=sys.stderr, flush=True)
    return total


def measure_floor(label: str, calls: list[Callable[[], None]], root_pid: int,
                  transport_ms: float, rows: list) -> float:
    """One block of the floor's calls (bench.hookfloor), run in this process: its work is
    this process's CPU (the floor's client), Postgres's and Redis's; plus the transport's
    floor per request. Returns the total (ms)."""
    wall, per_call = cpu_per_call(calls, root_pid)
    parts = [transport_ms, per_call.get(GENERATOR, 0.0), per_call.get("postgres", 0.0),
             per_call.get("redis", 0.0)]
    total = sum(parts)
    rows.append([label, f"{wall:.1f}", *(f"{v:.2f}" for v in parts), f"{total:.2f}"])
    print(f"  floor, {label}: {total:.2f} ms CPU per call", file=sys.stderr, flush=True)
    return total


def table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per block (200)")
    parser.add_argument("--url")
    parser.add_argument("--token")
    args = parser.parse_args(argv)
    stack = None
    if args.url:
        url, token, root_pid = args.url, args.token, None
    else:
        stack = Stack(None).__enter__()
        url, token, root_pid = stack.urls[0], stack.token, stack.process.pid
    try:
        project = project_name(0)
        create_projects(url, token, 1)
        client = Client(url, token, project)
        n = args.calls
        sessions = [new_session_id() for _ in range(n)]
        rows: list = []
        ours: dict[str, float] = {}
        warm = [("start_session", start_args(new_session_id(), i, project)) for i in range(8)]
        for tool, arguments in warm:  # the tasks of the 8 branches exist from here on
            client.call(tool, arguments)
        measure("start_session", [("start_session", start_args(s, i, project))
                                  for i, s in enumerate(sessions)], client, root_pid, rows)
        measure("claim_files, a session's first", [("claim_files", {"sessionId": s, "paths": [
            f"src/module_{i % 300}.py"]}) for i, s in enumerate(sessions)], client, root_pid, rows)
        ours[OWN_CLAIM] = measure(OWN_CLAIM, [("claim_files", {"sessionId": s, "paths": [
            f"src/module_{i % 300}.py"]}) for i, s in enumerate(sessions)], client, root_pid, rows)
        three_uses = [("record_activity", {
            "sessionId": s, "heartbeat": True, "notices": True,
            "toolUses": uses_of(f"src/module_{i % 300}.py")}) for i, s in enumerate(sessions)]
        # The first edit of a file appends it to the task's keyFiles (a new version); the
        # same edits again find it listed, which is most flushes of a long session.
        ours[NEW_KEY_FILE] = measure(NEW_KEY_FILE, three_uses, client, root_pid, rows)
        ours[LISTED_FILE] = measure(LISTED_FILE, three_uses, client, root_pid, rows)
        ours[NO_USES] = measure(NO_USES, [("record_activity", {
            "sessionId": s, "heartbeat": True, "notices": True, "toolUses": []})
            for s in sessions], client, root_pid, rows)
        ours[HEARTBEAT] = measure(HEARTBEAT, [("heartbeat", {"sessionId": s})
                                              for s in sessions], client, root_pid, rows)
        floor_rows = measure_floors(stack, sessions, project, root_pid, n) if stack else []
        measure("end_session", [("end_session", {
            "sessionId": s, "summary": "Claude Code session ended.\nDid things."})
            for s in sessions], client, root_pid, rows)
        print(f"\nServer CPU per hook call (ms; one client, {n} calls per row):")
        table(["call", "wall", *ROLES, "total"], rows)
        if floor_rows:
            print(f"\nThe floor of the same calls (bench.hookfloor; ms of CPU per call, "
                  f"{n} calls per row): the transport's floor, the floor's own work in "
                  "this process, Postgres, Redis:")
            table(["call", "wall", "transport", "work", "postgres", "redis", "total"],
                  [row for row, _ in floor_rows])
            print("\nOurs against the floor:")
            table(["call", "ours ms", "floor ms", "ours / floor"],
                  [[label, f"{ours[label]:.2f}", f"{floor:.2f}", f"{ours[label] / floor:.1f}x"]
                   for (_, floor), label in zip(floor_rows, FLOORED, strict=True)])
        print(machine_line())
    finally:
        if stack:
            stack.__exit__()
    return 0


OWN_CLAIM = "claim_files, a file of its own"
NEW_KEY_FILE = "record_activity, 3 uses, a new key file"
LISTED_FILE = "record_activity, 3 uses, a listed file"
NO_USES = "record_activity, none"
HEARTBEAT = "heartbeat"
# The calls whose floor is measured, in the order measure_floors measures them.
FLOORED = (OWN_CLAIM, NEW_KEY_FILE, LISTED_FILE, NO_USES, HEARTBEAT)


def uses_of(path: str) -> list[dict]:
    """A flush of three tool uses: a Read, an Edit of ``path`` and a Bash."""
    return [{"tool": "Read", "success": True, "timestamp": iso_now(), "summary": "Read src/a.py"},
            {"tool": "Edit", "success": True, "timestamp": iso_now(), "summary": f"Edit {path}",
             "filePaths": [path]},
            {"tool": "Bash", "success": True, "timestamp": iso_now(),
             "summary": "Bash pytest -q"}]


def measure_floors(stack: Stack, sessions: list[str], project: str, root_pid: int,
                   n: int) -> list[tuple[list[str], float]]:
    """The floor of each call of FLOORED, on the stack's own Postgres and Redis and the
    sessions, tasks and claims the calls above made: [(row, total ms)]."""
    from bench.hookfloor import HookFloor, transport_floor

    servers = stack.servers()
    transport = transport_floor(n * 5, json.dumps({"sessionId": sessions[0], "heartbeat": True,
                                                   "toolUses": uses_of("src/a.py")}).encode())
    floor = HookFloor(servers["DATABASE_URL"], servers["REDIS_URL"], stack.tmp / "floor-files")
    out: list[tuple[list[str], float]] = []
    try:
        for i, s in enumerate(sessions):  # the check before the edit claimed the new file
            floor.claim(s, project, [f"src/floor_{i}.py"])
        blocks: list[list[Callable[[], None]]] = [
            [partial(floor.claim, s, project, [f"src/module_{i % 300}.py"])
             for i, s in enumerate(sessions)],
            [partial(floor.flush, s, uses_of(f"src/floor_{i}.py")) for i, s in enumerate(sessions)],
            [partial(floor.flush, s, uses_of(f"src/floor_{i}.py")) for i, s in enumerate(sessions)],
            [partial(floor.heartbeat, s) for s in sessions],
            [partial(floor.heartbeat, s) for s in sessions]]
        for label, calls in zip(FLOORED, blocks, strict=True):
            rows: list = []
            total = measure_floor(label, calls, root_pid, transport, rows)
            out.append((rows[0], total))
    finally:
        floor.close()
    return out


def start_args(session_id: str, i: int, project: str) -> dict:
    return {"sessionId": session_id, "projectDir": f"/home/dev/{project}",
            "agentId": "claude-code", "contextBudgetTokens": 2000, "projectId": project,
            "gitBranch": f"agent-{i % 8}", "processId": 100000 + i, "resolveTask": True,
            "createTask": True}


if __name__ == "__main__":
    sys.exit(main())
