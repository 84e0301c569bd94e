"""``python -m bench.hookcost``: the server CPU one hook call costs, call by call.

    .venv/bin/python -m bench.hookcost                  # starts the `make run` stack itself
    .venv/bin/python -m bench.hookcost --calls 300

Capacity (``bench.agents``) is bounded by CPU per request on a 2-core machine, so this
measures that alone: one client, one call at a time (no queueing, no contention), a block
of ``--calls`` calls of one kind, and the CPU every server process group used over the
block (web workers, Postgres backends, Redis, Celery), divided by the calls. The calls are
the hook client's (see bench.agents): start_session (resolveTask, createTask, a bundle,
the recovery check), claim_files of one file (a session's first claim, then the same
file again), record_activity with 3 tool uses (one an Edit of a file new to the task) and
with none (notices, as UserPromptSubmit sends it), heartbeat, end_session with a summary.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
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


def measure(label: str, calls: list[tuple[str, dict]], client: Client, root_pid: int,
            rows: list) -> None:
    meter = CpuMeter(root_pid)
    started = time.perf_counter()
    for tool, arguments in calls:
        client.call(tool, arguments)
    wall = time.perf_counter() - started
    used = meter.seconds()  # role -> (processes, CPU seconds)
    per_call = {role: seconds / len(calls) * 1000 for role, (_, seconds) in used.items()}
    total = sum(v for role, v in per_call.items() if role != GENERATOR)
    rows.append([label, f"{wall / len(calls) * 1000:.1f}",
                 *(f"{per_call.get(role, 0.0):.2f}" for role in ROLES), f"{total:.2f}"])
    print(f"  {label}: {total:.2f} ms CPU per call", file=sys.stderr, flush=True)


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
        warm = [("start_session", start_args(new_session_id(), i, project)) for i in range(8)]
        for tool, arguments in warm:  # the tasks of the 8 branches exist from here on
            client.call(tool, arguments)
        measure("start_session", [("start_session", start_args(s, i, project))
                                  for i, s in enumerate(sessions)], client, root_pid, rows)
        measure("claim_files, a session's first", [("claim_files", {"sessionId": s, "paths": [
            f"src/module_{i % 300}.py"]}) for i, s in enumerate(sessions)], client, root_pid, rows)
        measure("claim_files, a file of its own", [("claim_files", {"sessionId": s, "paths": [
            f"src/module_{i % 300}.py"]}) for i, s in enumerate(sessions)], client, root_pid, rows)
        measure("record_activity, 3 uses", [("record_activity", {
            "sessionId": s, "heartbeat": True, "notices": True, "toolUses": [
                {"tool": "Read", "success": True, "timestamp": iso_now(),
                 "summary": "Read src/a.py"},
                {"tool": "Edit", "success": True, "timestamp": iso_now(),
                 "summary": f"Edit src/module_{i % 300}.py",
                 "filePaths": [f"src/module_{i % 300}.py"]},
                {"tool": "Bash", "success": True, "timestamp": iso_now(),
                 "summary": "Bash pytest -q"}]}) for i, s in enumerate(sessions)],
            client, root_pid, rows)
        measure("record_activity, none", [("record_activity", {
            "sessionId": s, "heartbeat": True, "notices": True, "toolUses": []})
            for s in sessions], client, root_pid, rows)
        measure("heartbeat", [("heartbeat", {"sessionId": s}) for s in sessions],
                client, root_pid, rows)
        measure("end_session", [("end_session", {
            "sessionId": s, "summary": "Claude Code session ended.\nDid things."})
            for s in sessions], client, root_pid, rows)
        print(f"\nServer CPU per hook call (ms; one client, {n} calls per row):")
        header = ["call", "wall", *ROLES, "total"]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print(machine_line())
    finally:
        if stack:
            stack.__exit__()
    return 0


def start_args(session_id: str, i: int, project: str) -> dict:
    return {"sessionId": session_id, "projectDir": f"/home/dev/{project}",
            "agentId": "claude-code", "contextBudgetTokens": 2000, "projectId": project,
            "gitBranch": f"agent-{i % 8}", "processId": 100000 + i, "resolveTask": True,
            "createTask": True}


if __name__ == "__main__":
    sys.exit(main())
