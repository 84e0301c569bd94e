"""``python -m bench.instructions``: the instructions a web worker executes per hook call,
counted by valgrind, a figure the machine's load and clock do not move.

    .venv/bin/python -m bench.instructions               # embedded servers, 500 calls a kind
    .venv/bin/python -m bench.instructions --only heartbeat --calls 1000

Why: CPU time per call (``bench.agents``, ``bench.hookcost``) moved by 15-30 % between two
runs of the same code on these shared two-core machines, more than most changes it was
meant to judge. Instructions counted by callgrind are the same for the same code, input
and environment whatever else the machine does (seen here: the same total twice).

What is counted: one process, Django set up as a web worker is, calling the REST tool
lane's own function (``fastlane.handle``: token check, rate limit, registry, the tool) as
a tool thread does, with every background write done inline (delays 0) so that it is
counted in the call that caused it. Per kind of hook call (the hook client's steady ones,
as ``bench.hookcost`` makes them), the process runs once with N calls of that kind after
one session's start, and once with none; the difference over N is the kind's
instructions per call. Postgres's and Redis's work is in their own processes, not
counted. The graph mirror is off (its writes go to another process too).

The servers: embedded ones in a temporary directory (``orchestrator.ops.launcher
--temp``), or yours when DATABASE_URL is set (a dedicated database: this migrates it and
writes to it). Each count runs Python under valgrind, ~50 times slower: two to four
minutes a run, two at once, about fifteen minutes for every kind.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import BENCH_RATE_LIMIT

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "bench-instructions"
STAMP = "2026-11-30T10:00:00Z"
# The hook client's steady calls (bench.hookcost's), by name: (tool, arguments for a
# session id). The file edited is listed on the task and claimed by the session before
# the counted calls, as in a session's steady state.
EDITED = "src/module_1.py"
USES = [{"tool": "Edit", "success": True, "timestamp": STAMP, "summary": f"Edit {EDITED}",
         "filePaths": [EDITED]},
        {"tool": "Read", "success": True, "timestamp": STAMP, "summary": "Read src/module_2.py"},
        {"tool": "Bash", "success": False, "timestamp": STAMP, "summary": "Bash pytest -q"}]
KINDS = {
    "record_activity, 3 uses, a listed file": (
        "record_activity", lambda sid, _: {"sessionId": sid, "toolUses": USES,
                                           "heartbeat": True, "notices": True}),
    # An Edit of a file the task does not list yet: keyFiles appended (a new version, its
    # Redis copy and file), the file claimed; about a third of flushes under agent load.
    "record_activity, 3 uses, a new key file": (
        "record_activity", lambda sid, n: {"sessionId": sid, "toolUses": [
            {**USES[0], "summary": f"Edit src/new_{n}.py", "filePaths": [f"src/new_{n}.py"]},
            *USES[1:]], "heartbeat": True, "notices": True}),
    "record_activity, none": (
        "record_activity", lambda sid, _: {"sessionId": sid, "toolUses": [], "heartbeat": True,
                                           "notices": True}),
    "claim_files, a file of its own": (
        "claim_files", lambda sid, _: {"sessionId": sid, "paths": [EDITED]}),
    "heartbeat": ("heartbeat", lambda sid, _: {"sessionId": sid}),
}
NONE = "none"  # the run with no counted calls
# Each background writer inline, in the call that asked for it.
INLINE = {"INDEX_FILE_DELAY_MS": "0", "HISTORY_MIRROR_DELAY_MS": "0",
          "FILE_CLAIM_OVERLAP_DELAY_MS": "0", "GRAPH_OUTBOX_DELAY_MS": "0",
          "ENABLE_NEO4J": "false", "API_RATE_LIMIT": BENCH_RATE_LIMIT,
          # Hashes (dict and set order) the same in every run.
          "PYTHONHASHSEED": "0"}
COLLECTED = re.compile(r"Collected : (\d+)")


def drive(kind: str, calls: int) -> None:
    """In this process (Django set up): a session's start and first flush, then ``calls``
    calls of ``kind``, then its end. Every answer must be a success."""
    from foundation.core.models import ApiToken
    from orchestrator.web import fastlane

    _, token = ApiToken.issue(f"bench-instructions-{uuid.uuid4().hex}")

    def call(tool: str, arguments: dict, *, ok: bool = True) -> dict:
        status, body, _ = fastlane.handle(tool, f"Bearer {token}",
                                          json.dumps(arguments).encode(), PROJECT)
        if ok and status not in (200, 202):
            raise SystemExit(f"{tool} answered {status}: {body}")
        return body

    call("create_project", {"projectId": PROJECT, "name": "bench instructions"}, ok=False)
    session = f"bi-{uuid.uuid4().hex[:12]}"
    call("start_session", {"sessionId": session, "projectDir": f"/home/dev/{PROJECT}",
                           "agentId": "claude-code", "projectId": PROJECT,
                           "gitBranch": f"bench-{session}", "resolveTask": True,
                           "createTask": True, "contextBudgetTokens": 2000})
    call("record_activity", {"sessionId": session, "toolUses": USES, "heartbeat": True})
    call("claim_files", {"sessionId": session, "paths": [EDITED]})
    if kind != NONE:
        tool, arguments = KINDS[kind]
        for number in range(calls):
            call(tool, arguments(session, number))
    call("end_session", {"sessionId": session, "summary": "bench instructions"})


def count(kind: str, calls: int, env: dict[str, str]) -> int:
    """Instructions of one process driving ``calls`` calls of ``kind``, under callgrind."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               sys.executable, "-m", "bench.instructions", "--drive", kind,
               "--calls", str(calls)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    found = COLLECTED.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"the count of {kind!r} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return int(found[-1])


def per_call(totals: dict[str, int], calls: int) -> dict[str, float]:
    """Instructions per call of each kind: its run's total less the run without calls."""
    return {kind: (total - totals[NONE]) / calls for kind, total in totals.items()
            if kind != NONE}


def measure(calls: int, parallel: int, only: list[str]) -> None:
    env = {**os.environ, **INLINE, "DJANGO_SETTINGS_MODULE": "orchestrator.settings",
           # As in a web worker: the connection pool, request statement timeouts.
           "ORCHESTRATOR_SERVES_REQUESTS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "client" / "src"),
                                                      os.environ.get("PYTHONPATH")]))}
    recovery = tempfile.mkdtemp(prefix="bench-instructions-")
    env.setdefault("RECOVERY_DIR", recovery)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env,
                   check=True)
    # The run without calls twice: how far two runs of the same work differ.
    kinds = [NONE, NONE, *(only or KINDS)]
    print(f"counting {len(kinds)} runs under callgrind, {parallel} at once "
          f"({calls} calls a kind) ...", flush=True)
    with ThreadPoolExecutor(parallel) as pool:
        counted = list(pool.map(lambda kind: count(kind, calls, env), kinds))
    shutil.rmtree(recovery, ignore_errors=True)
    baselines = counted[:2]
    totals = {NONE: min(baselines), **dict(zip(kinds[2:], counted[2:], strict=True))}
    print(f"\nInstructions per hook call (web worker side; {calls} calls a kind; the run "
          f"without calls: {baselines[0]:,} and {baselines[1]:,}, so a kind's figure is "
          f"good to about {abs(baselines[0] - baselines[1]) / calls / 1e6:.3f} M):\n")
    print("| call | instructions per call |")
    print("|---|---|")
    for kind, instructions in per_call(totals, calls).items():
        print(f"| {kind} | {instructions / 1e6:.2f} M |")
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    print(f"\n{version}, Python {sys.version.split()[0]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # The calls cost little beside the process's start under valgrind (~7 G instructions,
    # two minutes), and the start differs by up to ~10 M between runs of the same code
    # (the network waits' timing): 500 calls keep that to ~0.02 M a call.
    parser.add_argument("--calls", type=int, default=500, help="counted calls a kind (500)")
    parser.add_argument("--parallel", type=int, default=2, help="runs at once (2)")
    parser.add_argument("--only", action="append", choices=list(KINDS), default=[],
                        help="count this kind only (repeatable; default every kind)")
    parser.add_argument("--drive", choices=[NONE, *KINDS], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        # Loaded as a web worker is: the ASGI app, and with it the garbage collector tuned
        # (what import made frozen out of its scans). Without that a full collection
        # scanned every object Django made, 20-40 M instructions that fell into one run
        # and not another.
        import orchestrator.asgi  # noqa: F401

        drive(args.drive, args.calls)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if not os.environ.get("DATABASE_URL"):
        # Embedded servers for this run only; this command again inside them.
        raise SystemExit(subprocess.call(
            [sys.executable, "-m", "orchestrator.ops.launcher", "--temp", "--",
             sys.executable, "-m", "bench.instructions", *(argv or sys.argv[1:])],
            cwd=ROOT, env={**os.environ, "ENABLE_NEO4J": "false"}))
    measure(args.calls, args.parallel, args.only)


if __name__ == "__main__":
    main()
