"""``python -m bench.agents``: how many Claude Code agents one server holds, and two.

    .venv/bin/python -m bench.agents                       # starts the `make run` stacks itself
    .venv/bin/python -m bench.agents --agents 50,200 --seconds 30 --servers 1
    .venv/bin/python -m bench.agents --repeat 3                # what `make bench` runs
    .venv/bin/python -m bench.agents --agents 500 --servers 1  # one level, to profile
    .venv/bin/python -m bench.agents --url http://127.0.0.1:8000 --token TOKEN

(one token for every simulated agent: a server of your own runs with a per-token rate
limit no run reaches, ``API_RATE_LIMIT=100000000/minute``; the stacks started here get it
from bench.common)

N simulated Claude Code sessions, all in this one asyncio process, against the production
stack. Without ``--url`` it starts that stack the way ``make run`` does on a fresh clone:
``orchestrator.ops.launcher -- orchestrator.ops.serve`` (its own embedded Postgres, Redis
and ArcadeDB, then migrate, the web workers, the Celery worker and beat) on a free port,
waits for ``/healthz`` and issues a token with ``manage.py create_api_token`` first. Then
the same with two complete stacks (``serve`` twice, two ports) on one launcher's servers,
each with half of the one stack's web workers (the same cores: ``--stack-workers``),
calls spread round-robin call by call, and a failover run: N agents (one server's
capacity) over the two stacks, one stack SIGKILLed halfway, refused calls passed to the
other, and every save the service acknowledged looked up in Postgres.
Requests go over a pool of keep-alive HTTP/1.1 connections driven by asyncio streams (no
httpx: the generator shares the 2 cores with the server, see ``bench.common.RawHttpClient``).

For each level N the agents start at 25 a second, 10 s pass, then ``--seconds`` (60) are
measured, then every open session is ended. A level prints requests/s, p50/p99 per call,
errors, and the CPU table: server CPU milliseconds per hook call by role (web: every web
worker; postgres: every backend and its background processes; graph: the graph server;
worker: the Celery worker and beat; redis; other: the launcher and ``serve``), the whole
server, web + postgres + graph, and apart the load generator (this process). It is the CPU
the processes used over the measured window (/proc/<pid>/stat utime + stime of the
stack's process tree, and cutime + cstime for the processes that exited and were reaped
meanwhile: ``window_cpu``) divided by the hook calls answered in it. It follows the
machine's speed and grows somewhat on a busy machine (shared caches and cores), but far
less than latency does, so it is the figure to compare between runs, beside the machine
line (the CPU, python ``sum(range(10**6))`` before and after the run, the load average at
its start). Then web's CPU by thread (/proc/<pid>/task/<tid>/stat of the web workers,
named by the server: ``tool`` the tool threads that run the calls, the event loop that
reads and writes HTTP, ``w-*`` the background writers, ``task-events``): what a
``py-spy --gil`` profile cannot give, since it counts a thread's system calls made with
the GIL held as its Python's. Then each web process's share of web's CPU: even shares when
the connections are spread over the workers. A level holds when every hook call's
p99 is <= ``--p99-ms`` (100) with no error. Closed loop: an agent waits for an answer
before it thinks again, like the real client, so a slow server lowers the request rate
rather than piling up requests; read the rate next to the latencies. Tables are markdown,
to paste into a dated page of docs/benchmarks/.

The capacity search steps on a ladder (``--agents``, default 250, 500, 1000, 1500, 2000,
2500, 3000, 4000) from ``--start`` (1000): up while the levels hold, down while they
fail, and it stops once one held and one failed; the capacity is the largest level that
held. ``--repeat N`` runs the search N times on the same stack, the first from
``--start`` and the next ones from the first one's capacity (so each costs about two
levels), and prints each level's median and (min-max) of p99 and CPU per call, and the
capacity as the median of the N runs (the lower middle one of an even count). Then two
stacks, one search from one server's capacity, and the failover run at that capacity.
Why these defaults: on a 2-core machine a level of N agents costs N/25 s of ramp + 10 s
+ 60 s + the ends, 1.5 min at 500 and 2.5 min at 2,000; 60 s holds a minute of the
periodic jobs (beat's schedule) and at 500 agents ~5,000 hook calls, enough for a p99;
starting at 1,000 reaches 2,000 (the target) in three levels and 500 (the capacity
before issue 41) in two. So ``make bench`` (3 repeats) costs about 20 minutes at a
capacity of 500 and about 30 at 2,000. One level alone, to profile the server under a
steady load (py-spy, pg_stat_statements), is ``--agents 500 --servers 1 --seconds 300``.

What one agent sends: the hook client's traffic (client/src/orchestrator_hook/), call for call
-----------------------------------------------------------------------------------------
- SessionStart (handlers.start): ``start_session`` with sessionId (the client's own
  ``session-<ms>-<uuid4>``), projectDir, agentId ``claude-code``, contextBudgetTokens 2000
  (lite.DEFAULT_BUDGET_TOKENS), projectId, gitBranch, processId, resolveTask and
  createTask (no task configured: the branch's task, made on first use). The start marks
  the session flushed (the flush clock starts there).
- UserPromptSubmit (handlers.user_prompt_submit): one ``record_activity`` per turn,
  heartbeat true, notices true, with the tool uses still buffered (none, normally).
- PreToolUse for Edit/Write (edit_check.check_edit, synchronous): ``claim_files``
  {sessionId, paths: [the one file]} before an edit, unless this session claimed that file
  cleanly (no one else on it, edit_check.clean) less than ``claimReuseSeconds`` (300 s,
  lite.DEFAULT_CLAIM_REUSE_SECONDS) ago. The async PreToolUse sends nothing.
- PostToolUse (handlers.post_tool_use / lite.buffer_tool_use): the tool use
  {tool, success, timestamp, summary[, filePaths for Edit/Write]} goes to a local buffer;
  when ``flushSeconds`` (5 s, lite.DEFAULT_FLUSH_SECONDS) have passed since the last flush,
  that PostToolUse sends the buffer in one ``record_activity`` {heartbeat: true,
  notices: true}. So a flush carries what ran in >= 5 s: 1-10 tool uses here.
- Stop (handlers.stop), every turn: ``record_activity`` with the rest of the buffer,
  heartbeat true and a conversationSummary (~600 characters of transcript tail).
- Watchdog (watchdog.py): a ``heartbeat`` {sessionId} once the hooks have been quiet for
  half of HEARTBEAT_INTERVAL_MS (60 s default: 30 s) and then every interval; here only
  in the pauses between turns (user think time).
- The model's own save (``save_task_context`` on /mcp/agent, which is
  ``save_context_snapshot``): at the end of a turn with probability ``--save-every`` (0.25),
  sent here to the REST lane as save_context_snapshot with ~1 KB of immediateContext.
- SessionEnd (handlers.session_end): the unsent tool uses (record_activity, heartbeat
  true), then ``end_session`` with a handoff summary. Then, after a short pause, the agent
  starts a new session: sessions start and end throughout the run.

Assumed (not in the client's code, which only reacts to Claude Code): a turn is 1-12 model
steps; a step runs 1 tool (70%) or 2-5 in parallel (30%); a step takes ``--think`` 2-5 s
(model + tool time); the tools are Read 35%, Bash 20%, Edit 22%, Grep 10%, Glob 5%,
Write 5%, WebFetch 3% (Claude Code transcripts of this repository's own sessions, roughly);
the user needs 5-40 s between turns; a session is 2-8 turns (the first one of each agent
1-8, so that ends are spread from the start). Each agent is its own branch (its own task)
in a repository of ``--team`` (8) agents, so the repositories grow with N (``--projects``
fixes their number instead); a repository has 300 files, an agent edits in its own area of
15 of them (teammates' areas may coincide) and ``--elsewhere`` (15%) of its edits
anywhere in the repository, so claims of two agents meet (warnings, file conflicts,
notices) as they do in a team.

Every level stands on the same footing: its agents' branches are new (``level<K>-agent-<N>``,
K counting the levels this process ran), so each level's agents start tasks of their own
and meet files their tasks do not list yet, whatever ran on the stack before. Branches
reused across levels made a size run a second time (a repeat's search passes through the
sizes the first one ran, with the same seeds) replay the same edits on tasks that already
listed them: ~0-5 % of flushes appended keyFiles (a new version each) against ~30-38 %
the first time, and ~20 % less server CPU per call, so a median of repeats mixed two
different loads. The database still grows from level to level (the tasks and history of
the levels before stay).

Hook calls (the pass criterion): start_session, claim_files, record_activity, heartbeat,
end_session. save_context_snapshot is reported but is the model's call, not a hook's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson
import uvloop

from bench.common import cpu_model, free_port, percentile, python_ms
from foundation.config import web_workers_from_env
from orchestrator_hook.edit_check import clean as claim_was_clean
from orchestrator_hook.lite import DEFAULT_CLAIM_REUSE_SECONDS, DEFAULT_FLUSH_SECONDS

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
HOOK_CALLS = ("start_session", "claim_files", "record_activity", "heartbeat", "end_session")
FLUSH_SECONDS = DEFAULT_FLUSH_SECONDS
CLAIM_REUSE_SECONDS = DEFAULT_CLAIM_REUSE_SECONDS
WATCHDOG_QUIET = 30.0  # half of HEARTBEAT_INTERVAL_MS (60 s)
TOOLS = (("Read", 35), ("Bash", 20), ("Edit", 22), ("Grep", 10), ("Glob", 5), ("Write", 5),
         ("WebFetch", 3))
EDITING = frozenset({"Edit", "Write"})
FILES_PER_PROJECT = 300
AREA_FILES = 15  # an agent works mostly in one area (a module) of its repository
CALL_TIMEOUT = 30.0
SLOW_CALL = 0.1  # a hook call slower than the pass criterion's p99 is logged with its time
RAMP_STARTS_PER_SECOND = 25
# The capacity search's ladder and where it starts (see the module's docstring).
LADDER = (250, 500, 1000, 1500, 2000, 2500, 3000, 4000)
START = 1000
SETTLE_SECONDS = 10.0


# -- a cheap keep-alive HTTP/1.1 client on asyncio streams ---------------------------------

class ServerClosed(Exception):
    """A reused keep-alive connection the server had closed before our request."""


class Pool:
    """Idle keep-alive connections, reused LIFO (the most recently used is the least likely
    to have hit the server's keep-alive timeout); a new one when none is idle."""

    def __init__(self, url: str, token: str, project_header: bool = True) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.auth = f"Authorization: Bearer {token}\r\n"
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.opened = 0
        self.reconnects = 0

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        import socket

        reader, writer = await asyncio.open_connection(self.host, self.port)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.opened += 1
        return reader, writer

    async def post(self, tool: str, body: bytes, project: str | None) -> tuple[int, bytes]:
        head = (f"POST {self.prefix}/api/v1/tools/{tool}/ HTTP/1.1\r\n"
                f"Host: {self.host}:{self.port}\r\n{self.auth}"
                + (f"X-Orchestrator-Project: {project}\r\n" if project else "")
                + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                ).encode() + body
        while self.idle:
            conn = self.idle.pop()
            try:
                return await self._exchange(conn, head)
            except ServerClosed:
                self.reconnects += 1  # the server's keep-alive timeout: not an error
        return await self._exchange(await self._open(), head, fresh=True)

    async def _exchange(self, conn, head: bytes, fresh: bool = False) -> tuple[int, bytes]:
        reader, writer = conn
        try:
            writer.write(head)
            await writer.drain()
            try:
                header = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial and not fresh:
                    raise ServerClosed from None
                raise
            lines = header.split(b"\r\n")
            status = int(lines[0].split()[1])
            length, chunked, close = None, False, False
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding" and b"chunked" in value.lower():
                    chunked = True
                elif name == b"connection" and b"close" in value.lower():
                    close = True
            if chunked:
                parts = []
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    data = await reader.readexactly(size + 2)
                    if not size:
                        break
                    parts.append(data[:-2])
                body = b"".join(parts)
            else:
                body = await reader.readexactly(length or 0)
        except (ConnectionError, OSError) as exc:
            writer.close()
            if not fresh:
                raise ServerClosed from exc
            raise
        except BaseException:
            writer.close()
            raise
        if close:
            writer.close()
        else:
            self.idle.append(conn)
        return status, body

    def close(self) -> None:
        for _reader, writer in self.idle:
            writer.close()
        self.idle.clear()


# -- measurements ------------------------------------------------------------------------

@dataclass
class Stats:
    measuring: bool = False
    samples: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    error_examples: list[str] = field(default_factory=list)
    warned: int = 0
    claims_reused: int = 0
    notices: int = 0
    sessions_started: int = 0
    sessions_ended: int = 0
    loop_lag: list[float] = field(default_factory=list)
    flush_sizes: list[int] = field(default_factory=list)
    # record_activity answers that appended to the task's keyFiles (a new version each)
    key_file_appends: int = 0
    failovers: int = 0  # calls a refused server passed on to the next one
    # (taskId, version, marker) of every save the service acknowledged
    acknowledged_saves: list[tuple[str, int, str]] = field(default_factory=list)
    # (wall-clock time the call was sent, tool, seconds) of calls slower than SLOW_CALL
    slow: list[tuple[float, str, float]] = field(default_factory=list)
    # wall-clock second -> the machine's stall counters then (Pressure.read)
    pressure: dict[int, dict[str, float]] = field(default_factory=dict)
    # wall-clock second -> CPU seconds of each process role in the second before it
    cpu_per_second: dict[int, dict[str, float]] = field(default_factory=dict)

    def add(self, tool: str, seconds: float, sent: float) -> None:
        if self.measuring:
            self.samples.setdefault(tool, []).append(seconds)
            if seconds >= SLOW_CALL:
                self.slow.append((sent, tool, seconds))

    def error(self, tool: str, what: str) -> None:
        if self.measuring:
            self.errors[tool] = self.errors.get(tool, 0) + 1
            if len(self.error_examples) < 5:
                self.error_examples.append(f"{tool}: {what[:300]}")


class Api:
    """Calls spread round-robin over the servers' pools, call by call (so one session's
    calls go through every server). A server that refuses the connection (it is down)
    passes the call to the next one, as a load balancer's retry would: the request never
    reached it. A call cut off in flight is an error: it may or may not have been done."""

    def __init__(self, pools: list[Pool], stats: Stats) -> None:
        self.pools, self.stats = pools, stats
        self.turn = 0

    async def _post(self, tool: str, body: bytes, project: str | None) -> tuple[int, bytes]:
        self.turn += 1
        first = self.turn  # other calls move the turn on while this one waits
        for attempt in range(len(self.pools)):
            pool = self.pools[(first + attempt) % len(self.pools)]
            try:
                return await pool.post(tool, body, project)
            except ConnectionRefusedError:
                if attempt == len(self.pools) - 1:
                    raise
                self.stats.failovers += self.stats.measuring
        raise AssertionError("unreachable")

    async def call(self, tool: str, arguments: dict, project: str | None) -> dict | None:
        # orjson: the generator's JSON is CPU taken from the server it measures.
        body = orjson.dumps(arguments)
        sent = time.time()
        started = time.perf_counter()
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for wraps the call in a task of
            # its own, one more per call in the generator's CPU.
            async with asyncio.timeout(CALL_TIMEOUT):
                status, answer = await self._post(tool, body, project)
        except (TimeoutError, ConnectionError, OSError, asyncio.IncompleteReadError,
                ServerClosed) as exc:
            self.stats.error(tool, f"{type(exc).__name__}: {exc}")
            return None
        self.stats.add(tool, time.perf_counter() - started, sent)
        if status != 200:
            self.stats.error(tool, f"HTTP {status} {answer[:200]!r}")
            return None
        try:
            return orjson.loads(answer)
        except orjson.JSONDecodeError:
            self.stats.error(tool, f"not JSON: {answer[:200]!r}")
            return None


# -- one simulated Claude Code agent -----------------------------------------------------

def new_session_id() -> str:
    h = os.urandom(16).hex()
    return (f"session-{int(time.time() * 1000)}-{h[:8]}-{h[8:12]}-4{h[13:16]}-"
            f"{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}")


def iso_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


TOOL_NAMES = [name for name, _ in TOOLS]
TOOL_WEIGHTS = [weight for _, weight in TOOLS]
SUMMARY = ("Last request: make the login form remember the user and add a test. Last answer: "
           "I added a remember-me checkbox to the form, stored the choice in the session "
           "cookie with a 30-day expiry, and wrote tests for both paths. ") * 3
CONTEXT = "Working through the login flow; tests for the remember-me cookie next. " * 14


# The levels this process has run: each level's agents get branches (and so tasks) of
# their own (the module docstring's footing).
_levels_run = itertools.count(1)


def level_branch(level: int, number: int) -> str:
    """Agent ``number``'s branch in the ``level``-th level this process ran."""
    return f"level{level}-agent-{number}"


class Agent:
    def __init__(self, number: int, api: Api, args: argparse.Namespace, stop: Stop,
                 rng: random.Random, projects: int, level: int) -> None:
        self.number, self.api, self.args, self.stop, self.rng = number, api, args, stop, rng
        self.project = project_name(number % projects)
        # Most edits fall in the agent's own area; teammates' areas can coincide, and a
        # share of edits lands anywhere in the repository: claims meet as in a team.
        self.area = rng.randrange(FILES_PER_PROJECT // AREA_FILES) * AREA_FILES
        self.project_dir = f"/home/dev/{self.project}"
        self.branch = level_branch(level, number)
        self.session_id: str | None = None
        self.task_id: str | None = None
        self.buffer: list[dict] = []
        self.claimed: dict[str, float] = {}  # path -> when a clean check claimed it
        self.last_flush = 0.0
        self.last_call = 0.0
        self.saves = 0

    async def call(self, tool: str, arguments: dict) -> dict | None:
        self.last_call = time.monotonic()
        return await self.api.call(tool, arguments, self.project)

    async def sleep(self, seconds: float) -> bool:
        """Think for ``seconds``; False when the run is over."""
        return await self.stop.sleep(seconds)

    async def run(self, delay: float) -> None:
        if not await self.sleep(delay):
            return
        first = True
        while not self.stop.is_set():
            turns = self.rng.randint(1 if first else 2, 8)
            first = False
            if await self.start():
                for _ in range(turns):
                    if not await self.turn():
                        break
                    if not await self.between_turns():
                        break
                await self.end()
            if not await self.sleep(self.rng.uniform(1, 5)):
                return

    async def start(self) -> bool:
        self.session_id = new_session_id()
        self.buffer, self.last_flush, self.claimed = [], time.monotonic(), {}
        answer = await self.call("start_session", {
            "sessionId": self.session_id, "projectDir": self.project_dir,
            "agentId": "claude-code", "contextBudgetTokens": 2000,
            "projectId": self.project, "gitBranch": self.branch,
            "processId": 100000 + self.number, "resolveTask": True, "createTask": True})
        if not answer:
            self.session_id = None
            return False
        self.task_id = answer.get("taskId")
        self.api.stats.sessions_started += self.api.stats.measuring
        return True

    async def flush(self, *, notices: bool = False, summary: str | None = None) -> None:
        arguments: dict = {"sessionId": self.session_id, "toolUses": self.buffer,
                           "heartbeat": True}
        if self.api.stats.measuring:
            self.api.stats.flush_sizes.append(len(self.buffer))
        self.buffer, self.last_flush = [], time.monotonic()
        if summary:
            arguments["conversationSummary"] = summary
        if notices:
            arguments["notices"] = True
        answer = await self.call("record_activity", arguments)
        if answer and answer.get("notices"):
            self.api.stats.notices += len(answer["notices"])
        if answer and answer.get("keyFilesAdded") and self.api.stats.measuring:
            self.api.stats.key_file_appends += 1

    async def turn(self) -> bool:
        await self.flush(notices=True)  # UserPromptSubmit
        for _ in range(self.rng.randint(1, 12)):
            if not await self.sleep(self.rng.uniform(*self.args.think)):
                return False
            width = 1 if self.rng.random() < 0.7 else self.rng.randint(2, 5)
            for tool in self.rng.choices(TOOL_NAMES, TOOL_WEIGHTS, k=width):
                entry = {"tool": tool, "success": self.rng.random() > 0.03,
                         "timestamp": iso_now()}
                if tool in EDITING:
                    path = f"src/module_{self.edited_file()}.py"
                    await self.check_edit(path)
                    entry["summary"], entry["filePaths"] = f"{tool} {path}", [path]
                elif tool == "Bash":
                    entry["summary"] = "Bash .venv/bin/pytest -q tests/test_login.py"
                else:
                    entry["summary"] = f"{tool} src/module_{self.rng.randrange(40)}.py"
                self.buffer.append(entry)
                if time.monotonic() - self.last_flush >= FLUSH_SECONDS:  # PostToolUse
                    await self.flush(notices=True)
        if self.task_id and self.rng.random() < self.args.save_every:
            self.saves += 1
            marker = f"{self.session_id}/{self.saves}"
            answer = await self.call("save_context_snapshot", {
                "taskId": self.task_id, "sessionId": self.session_id,
                "changeSummary": "progress",
                "updates": {"immediateContext": {"workingOn": CONTEXT,
                                                 "nextStep": f"run the tests ({marker})"}}})
            if answer and answer.get("success") and isinstance(answer.get("version"), int):
                self.api.stats.acknowledged_saves.append(
                    (self.task_id, answer["version"], marker))
        await self.flush(summary=SUMMARY)  # Stop
        return True

    async def check_edit(self, path: str) -> None:
        """edit_check.check_edit: claim the file, unless a clean claim of it by this
        session is younger than claimReuseSeconds."""
        claimed_at = self.claimed.get(path)
        if claimed_at is not None and time.monotonic() - claimed_at < CLAIM_REUSE_SECONDS:
            self.api.stats.claims_reused += self.api.stats.measuring
            return
        answer = await self.call("claim_files", {"sessionId": self.session_id,
                                                 "paths": [path]})
        if answer and answer.get("message"):
            self.api.stats.warned += 1
        if answer and claim_was_clean(answer):
            self.claimed[path] = time.monotonic()

    def edited_file(self) -> int:
        if self.rng.random() < self.args.elsewhere:
            return self.rng.randrange(FILES_PER_PROJECT)
        return self.area + self.rng.randrange(AREA_FILES)

    async def between_turns(self) -> bool:
        """The user reads and types; the watchdog fills a long silence with heartbeats."""
        pause_ends = time.monotonic() + self.rng.uniform(5, 40)
        while True:
            beat_at = self.last_call + WATCHDOG_QUIET
            now = time.monotonic()
            if beat_at >= pause_ends:
                return await self.sleep(pause_ends - now)
            if not await self.sleep(beat_at - now):
                return False
            await self.call("heartbeat", {"sessionId": self.session_id})

    async def end(self) -> None:
        if not self.session_id:
            return
        if self.buffer:
            await self.flush()
        await self.call("end_session", {
            "sessionId": self.session_id,
            "summary": "Claude Code session ended (prompt_input_exit).\n" + SUMMARY})
        self.api.stats.sessions_ended += self.api.stats.measuring
        self.session_id = None


# -- CPU of the processes ------------------------------------------------------------------

# (needle in the command line, also in it, role): a process takes the role of the first of
# itself and its ancestors that matches.
ROLES = (("celery", " worker", "celery worker"), ("celery", " beat", "celery beat"),
         ("orchestrator.ops.webserver", "", "web"), ("postgres", "", "postgres"),
         ("valkey", "", "redis"), ("redis-server", "", "redis"), ("java", "", "arcadedb"),
         ("orchestrator.ops.launcher", "", "launcher"), ("orchestrator.ops.serve", "", "serve"))
GENERATOR = "load generator"
# The roles of the CPU-per-call table: the server's parts, then the generator apart.
GROUPS = {"web": "web", "postgres": "postgres", "arcadedb": "graph",
          "celery worker": "worker", "celery beat": "worker", "redis": "redis",
          "launcher": "other", "serve": "other", "other": "other", GENERATOR: "generator"}
SERVER_GROUPS = ("web", "postgres", "graph", "worker", "redis", "other")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

ProcKey = tuple[int, int]  # (pid, start time in clock ticks since boot): a reused pid differs


@dataclass(frozen=True)
class ProcTimes:
    """CPU seconds of one process from /proc/<pid>/stat: its own (utime + stime, every
    thread) and its reaped children's (cutime + cstime: each child it waited for, with what
    that child had reaped)."""
    own: float = 0.0
    reaped: float = 0.0

    @property
    def total(self) -> float:
        return self.own + self.reaped


def stat_fields(path: str) -> tuple[str, list[str]] | None:
    """(the command name, the fields after it) of a /proc stat file, None when it is gone.
    The name (field 2) may hold spaces and parentheses: the rest starts after its last ')'."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def read_stat(pid: int) -> tuple[ProcKey, int, ProcTimes, str] | None:
    """(key, parent pid, times, state) of a process, None when it is gone (state "Z": it
    exited and its parent has not reaped it)."""
    fields = stat_fields(f"/proc/{pid}/stat")
    if fields is None:
        return None
    _, rest = fields
    utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
    return ((pid, int(rest[19])), int(rest[1]),
            ProcTimes((utime + stime) / CLOCK_TICKS, (cutime + cstime) / CLOCK_TICKS), rest[0])


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def role_of(pid: int, parents: dict[int, int]) -> str | None:
    """The role of the first of the process and its ancestors whose command line names one."""
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        line = command_line(pid)
        for needle, also, role in ROLES:
            if needle in line and also in line:
                return role
        pid = parents.get(pid, 0)
    return None


def window_cpu(first: dict[ProcKey, ProcTimes], last: dict[ProcKey, ProcTimes],
               parent: dict[ProcKey, ProcKey | None], alive: set[ProcKey],
               roles: dict[ProcKey, str],
               zombies: frozenset[ProcKey] = frozenset()) -> dict[str, float]:
    """CPU seconds each role used between the first sample and the last, from the times
    of every process seen (``first``: at the window's start, zero for one born since;
    ``last``: at its last sample). A process alive at the end counts what it and the
    children it reaped meanwhile used (a Postgres backend or a Celery child that exits is
    reaped by its parent, which then holds its whole life's CPU). So a process gone by the
    end takes back only what it had used before the window, when its parent, alive at the
    end, reaped it; one whose parent went first or is a zombie (``zombies``: exited, not
    reaped), as when a stack is killed with its children, was reaped by no process of
    ours and counts up to its last sample (at most a second missed)."""
    used: dict[str, float] = {}
    for key, role in roles.items():
        reaper = parent.get(key)
        if key in alive or reaper not in alive or reaper in zombies:
            delta = last[key].total - first[key].total
        else:
            delta = -first[key].total
        used[role] = used.get(role, 0.0) + delta
    return used


def cpu_ms_per_call(cpu_seconds: dict[str, float], calls: int) -> dict[str, float]:
    """Role -> CPU seconds over a window, as the table's groups' CPU milliseconds per hook
    call, with ``server`` (every group but the generator) and ``web+pg+graph`` (the figure
    issue 41 sets its target on)."""
    grouped = dict.fromkeys((*SERVER_GROUPS, "generator"), 0.0)
    for role, seconds in cpu_seconds.items():
        group = GROUPS.get(role, "other")
        grouped[group] += seconds
    out = {group: 1000 * seconds / calls if calls else float("nan")
           for group, seconds in grouped.items()}
    out["server"] = sum(out[g] for g in SERVER_GROUPS)
    out["web+pg+graph"] = out["web"] + out["postgres"] + out["graph"]
    return out


ThreadKey = tuple[int, int]  # (pid, tid)


def thread_times(pids: list[int]) -> dict[ThreadKey, tuple[str, float]]:
    """(pid, tid) -> (the thread's OS name, its CPU seconds) for every thread of ``pids``,
    from /proc/<pid>/task/<tid>/stat. The server names its own threads
    (foundation.observability.threads)."""
    out: dict[ThreadKey, tuple[str, float]] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            if (fields := stat_fields(f"/proc/{pid}/task/{tid}/stat")) is not None:
                name, rest = fields
                out[(pid, int(tid))] = (name, (int(rest[11]) + int(rest[12])) / CLOCK_TICKS)
    return out


def thread_group(key: ThreadKey, name: str) -> str:
    """What a thread is, for the web-by-thread table: a process's first thread is its
    event loop (uvicorn's), a pool's numbered threads are one row (tool_3 -> tool), and a
    thread the server did not name keeps the process's name."""
    pid, tid = key
    if pid == tid:
        return "event loop (main)"
    return re.sub(r"_\d+$", "", name)


def thread_deltas(before: dict[ThreadKey, tuple[str, float]],
                  after: dict[ThreadKey, tuple[str, float]]
                  ) -> Iterator[tuple[ThreadKey, str, float]]:
    """(thread, its name, CPU seconds) between two ``thread_times``: a thread born between
    them counts from zero; one gone by the second is not counted (the server's threads
    live as long as their process)."""
    for key, (name, seconds) in after.items():
        yield key, name, seconds - before.get(key, (name, 0.0))[1]


def worker_shares(before: dict[ThreadKey, tuple[str, float]],
                  after: dict[ThreadKey, tuple[str, float]]) -> list[float]:
    """Each web process's share of web's CPU between two ``thread_times``, largest first
    (processes under 1 % left out: the supervisor and multiprocessing's helper). Even
    shares mean the connections are spread over the workers; one worker far above the
    others holds most of the busy connections, and its calls queue on its one GIL."""
    used: dict[int, float] = {}
    for (pid, _), _, seconds in thread_deltas(before, after):
        used[pid] = used.get(pid, 0.0) + seconds
    total = sum(used.values())
    return sorted((share for share in (seconds / total for seconds in used.values())
                   if share >= 0.01), reverse=True) if total > 0 else []


def thread_cpu(before: dict[ThreadKey, tuple[str, float]],
               after: dict[ThreadKey, tuple[str, float]]) -> dict[str, float]:
    """Thread group -> CPU seconds between two ``thread_times`` (``thread_deltas``)."""
    used: dict[str, float] = {}
    for key, name, seconds in thread_deltas(before, after):
        group = thread_group(key, name)
        used[group] = used.get(group, 0.0) + seconds
    return used


class CpuMeter:
    """CPU seconds per process role over the measured window, from /proc/<pid>/stat of the
    stack's processes (every descendant of ``root_pid``; without one, this user's
    processes whose command line names a role) and of this process (the load generator).
    Sampled every second (``sample``): processes are found as they start, and the
    per-second figures show what ran when calls were slow (report_stalls). See
    ``window_cpu`` for how a process that exits meanwhile is counted."""

    def __init__(self, root_pid: int | None) -> None:
        self.root_pid = root_pid
        self.t0 = time.monotonic()
        self.first: dict[ProcKey, ProcTimes] = {}
        self.last: dict[ProcKey, ProcTimes] = {}
        self.parent: dict[ProcKey, ProcKey | None] = {}
        self.roles: dict[ProcKey, str] = {}
        self.alive: set[ProcKey] = set()
        self.zombies: frozenset[ProcKey] = frozenset()
        self.per_second: dict[int, dict[str, float]] = {}
        self._total: dict[str, float] = {}
        self._started = False
        self.sample()

    def _scan(self) -> tuple[dict[int, tuple[ProcKey, int, ProcTimes, str]], set[int]]:
        table = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (stat := read_stat(int(entry))) is not None:
                table[int(entry)] = stat
        me = os.getpid()
        if self.root_pid:
            children: dict[int, list[int]] = {}
            for pid, (_, ppid, _, _) in table.items():
                children.setdefault(ppid, []).append(pid)
            wanted, todo = set(), [self.root_pid] if self.root_pid in table else []
            while todo:
                pid = todo.pop()
                wanted.add(pid)
                todo.extend(children.get(pid, ()))
        else:
            uid = os.getuid()
            wanted = {pid for pid in table if pid != me and self._owned(pid, uid)}
        return table, wanted | {me}

    def _owned(self, pid: int, uid: int) -> bool:
        try:
            return os.stat(f"/proc/{pid}").st_uid == uid
        except OSError:
            return False

    def sample(self) -> None:
        table, wanted = self._scan()
        parents = {pid: ppid for pid, (_, ppid, _, _) in table.items()}
        alive, zombies = set(), set()
        for pid in wanted:
            key, ppid, times, state = table[pid]
            if key not in self.roles:
                if pid == os.getpid():
                    role = GENERATOR
                else:
                    role = role_of(pid, parents) or ("other" if self.root_pid else None)
                if role is None:  # without a root: not a process of the stack
                    continue
                self.roles[key] = role
                # Alive at the first sample: count from here; born since: from zero.
                self.first[key] = times if not self._started else ProcTimes()
            parent = table.get(ppid)
            self.parent[key] = parent[0] if parent else None
            self.last[key] = times
            alive.add(key)
            if state == "Z":
                zombies.add(key)
        self.alive, self.zombies = alive, frozenset(zombies)
        self._started = True
        now = window_cpu(self.first, self.last, self.parent, self.alive, self.roles,
                         self.zombies)
        self.per_second[int(time.time())] = {
            role: now[role] - self._total.get(role, 0.0) for role in now}
        self._total = now

    def seconds(self) -> dict[str, tuple[int, float]]:
        """role -> (processes seen, CPU seconds) since the start."""
        self.sample()
        out: dict[str, tuple[int, float]] = {}
        for role in self.roles.values():
            count, _ = out.get(role, (0, 0.0))
            out[role] = (count + 1, self._total.get(role, 0.0))
        return out

    def read(self) -> dict[str, tuple[int, float]]:
        """role -> (processes seen, % of one core) since the start."""
        used = self.seconds()
        wall = time.monotonic() - self.t0
        return {role: (count, 100 * max(0.0, s) / wall) for role, (count, s) in used.items()}


class Pressure:
    """The kernel's stall counters (/proc/pressure, Linux PSI): microseconds in which some
    task waited for I/O, for a CPU, or for memory. Read each second, so a burst of slow
    calls can be set beside what the machine was waiting on then."""

    KINDS = ("io", "cpu", "memory")

    def __init__(self) -> None:
        self.last = self._totals()

    @staticmethod
    def _totals() -> dict[str, float]:
        totals = {}
        for kind in Pressure.KINDS:
            try:
                first = Path(f"/proc/pressure/{kind}").read_text().splitlines()[0]
            except (OSError, IndexError):
                continue
            totals[kind] = float(first.rsplit("total=", 1)[1])
        return totals

    def read(self) -> dict[str, float]:
        """kind -> ms of stall since the last read."""
        now = self._totals()
        delta = {kind: (now[kind] - self.last.get(kind, now[kind])) / 1000 for kind in now}
        self.last = now
        return delta


# -- one load level ------------------------------------------------------------------------

class Stop:
    """The end of a level: what the agents' sleeps wait for. A sleep is one future and one
    timer, woken early by ``set``; ``asyncio.wait_for(event.wait(), seconds)`` made a task
    and a waiter future per sleep, a large share of the generator's CPU, which competes
    with the server's on the same cores."""

    def __init__(self) -> None:
        self._set = False
        self._sleepers: set[asyncio.Future[None]] = set()

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        for sleeper in self._sleepers:
            _wake(sleeper)

    async def sleep(self, seconds: float) -> bool:
        """Wait ``seconds``, or less when the level ends: False once it has ended."""
        if self._set:
            return False
        loop = asyncio.get_running_loop()
        sleeper = loop.create_future()
        timer = loop.call_later(max(0.0, seconds), _wake, sleeper)
        self._sleepers.add(sleeper)
        try:
            await sleeper
        finally:
            timer.cancel()
            self._sleepers.discard(sleeper)
        return not self._set


def _wake(sleeper: asyncio.Future[None]) -> None:
    if not sleeper.done():
        sleeper.set_result(None)


async def loop_lag(stats: Stats, stop: Stop) -> None:
    """How late this process's event loop runs: if high, the generator is the bottleneck."""
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.1)
        if stats.measuring:
            stats.loop_lag.append(time.perf_counter() - started - 0.1)


def level_agents(n: int, api: Api, args: argparse.Namespace, stop: Stop
                 ) -> list[Agent]:
    """A level's N agents: their choices seeded from N (a size run again makes the same
    choices), their branches new to this level."""
    rng = random.Random(n)
    projects = projects_for(n, args)
    level = next(_levels_run)
    return [Agent(i, api, args, stop, random.Random(rng.random()), projects, level)
            for i in range(n)]


def run_on_uvloop(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop's event loop (the server's too): the generator shares the
    cores with the server it measures, and asyncio's own loop in Python cost it more CPU
    per call."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def write_back() -> None:
    """Write every dirty page of the machine to disk before a level (``sync``), so that its
    window does not pay for the write-back of what ran before it: the earlier slices' scale
    data, the last level's files. Seen without it: a level's first seconds stalled on I/O
    a minute after the scale slice had written 10,000 tasks."""
    started = time.monotonic()
    os.sync()
    print(f"(sync before the level: {time.monotonic() - started:.1f} s)", file=sys.stderr,
          flush=True)


async def run_level(n: int, args: argparse.Namespace, urls: list[str], token: str,
                    root_pid: int | None, *, seconds: float | None = None,
                    midway: Callable[[], None] | None = None) -> dict:
    """N agents against ``urls``; ``midway`` (blocking) runs halfway through the measured
    window (the failover run kills a stack there)."""
    seconds = seconds or args.seconds
    await asyncio.to_thread(write_back)
    stats = Stats()
    pools = [Pool(url, token) for url in urls]
    api = Api(pools, stats)
    stop = Stop()
    agents = level_agents(n, api, args, stop)
    # An agent's first session makes its task (a fresh install's day one): ~25 of those a
    # second, then SETTLE_SECONDS for what queued to drain before the window opens.
    ramp = args.ramp if args.ramp is not None else max(5.0, n / RAMP_STARTS_PER_SECOND)
    tasks = [asyncio.create_task(a.run(ramp * i / n)) for i, a in enumerate(agents)]
    lag = asyncio.create_task(loop_lag(stats, stop))
    await asyncio.sleep(ramp + SETTLE_SECONDS)
    meter = CpuMeter(root_pid)
    web_pids = [pid for (pid, _), role in meter.roles.items() if GROUPS.get(role) == "web"]
    threads_before = thread_times(web_pids)
    pressure = Pressure()
    stats.measuring = True
    started = time.monotonic()
    while (left := started + seconds - time.monotonic()) > 0:
        await asyncio.sleep(min(1.0, left))
        stats.pressure[int(time.time())] = pressure.read()
        if midway and time.monotonic() - started >= seconds / 2:
            await asyncio.to_thread(midway)
            midway = None
        await asyncio.to_thread(meter.sample)
    stats.measuring = False
    wall = time.monotonic() - started
    cpu = meter.seconds()
    threads_after = thread_times(web_pids)
    web_threads = thread_cpu(threads_before, threads_after)
    stats.cpu_per_second = meter.per_second
    stop.set()  # agents finish the call in flight and end their sessions
    await asyncio.wait(tasks, timeout=120)
    lag.cancel()
    for pool in pools:
        pool.close()
    return {"n": n, "stats": stats, "wall": wall, "cpu": cpu, "pools": pools,
            "web_threads": web_threads,
            "web_workers": worker_shares(threads_before, threads_after)}


def report(level: dict, p99_limit: float) -> bool:
    stats: Stats = level["stats"]
    wall = level["wall"]
    n = level["n"]
    total = sum(len(s) for s in stats.samples.values())
    errors = sum(stats.errors.values())
    rows = []
    worst = 0.0
    for tool in (*HOOK_CALLS, "save_context_snapshot"):
        samples = stats.samples.get(tool, [])
        if not samples and not stats.errors.get(tool):
            continue
        p50 = percentile(samples, 0.5) * 1000 if samples else float("nan")
        p99 = percentile(samples, 0.99) * 1000 if samples else float("nan")
        if tool in HOOK_CALLS and samples:
            worst = max(worst, p99)
        rows.append([tool, str(len(samples)), f"{len(samples) / wall:.1f}", f"{p50:.1f}",
                     f"{p99:.1f}", f"{max(samples) * 1000:.0f}" if samples else "",
                     str(stats.errors.get(tool, 0))])
    hook = [s for t in HOOK_CALLS for s in stats.samples.get(t, [])]
    if hook:
        rows.append(["all hook calls", str(len(hook)), f"{len(hook) / wall:.1f}",
                     f"{percentile(hook, 0.5) * 1000:.1f}",
                     f"{percentile(hook, 0.99) * 1000:.1f}", f"{max(hook) * 1000:.0f}",
                     str(sum(stats.errors.get(t, 0) for t in HOOK_CALLS))])
    held = bool(hook) and errors == 0 and worst <= p99_limit
    print(f"\n== {n} agents: {total / wall:.1f} requests/s over {wall:.0f} s, "
          f"{errors} errors, worst hook-call p99 {worst:.1f} ms -> "
          f"{'HELD' if held else 'FAILED'}")
    table(["call", "count", "per s", "p50 ms", "p99 ms", "max ms", "errors"], rows)
    lag = stats.loop_lag
    pools: list[Pool] = level["pools"]
    print(f"sessions started {stats.sessions_started}, ended {stats.sessions_ended}; "
          f"claim warnings {stats.warned}, notices {stats.notices}, edit checks skipped "
          f"(file claimed cleanly < {CLAIM_REUSE_SECONDS:.0f} s ago) {stats.claims_reused}; "
          f"connections opened "
          f"{sum(p.opened for p in pools)} (reconnects after keep-alive close "
          f"{sum(p.reconnects for p in pools)}); "
          f"tool uses per record_activity: {flush_mix(stats.flush_sizes)}; "
          f"record_activity that appended keyFiles (a new version): "
          f"{stats.key_file_appends} of {len(stats.flush_sizes)}; "
          f"generator loop lag p99 "
          f"{percentile(lag, 0.99) * 1000 if lag else 0:.1f} ms")
    hook_calls = len(hook)
    print(f"\nCPU per hook call at {n} agents ({hook_calls} hook calls, "
          f"{hook_calls / wall:.1f}/s, over {wall:.0f} s; 100% = one core):\n")
    table(["role", "procs", "CPU", "ms per hook call"], cpu_rows(level["cpu"], hook_calls, wall))
    if level.get("web_threads"):
        print("\nweb's CPU by thread (the tool threads run the calls; the event loop reads and "
              "writes HTTP; w-* are background writers):\n")
        table(["thread", "share of web", "ms per hook call"],
              thread_rows(level["web_threads"], hook_calls))
    if level.get("web_workers"):
        print("\nweb's CPU by process: " + " / ".join(
            f"{100 * share:.0f} %" for share in level["web_workers"]))
    for example in stats.error_examples:
        print(f"  error: {example}")
    report_stalls(stats)
    return held


def cpu_rows(cpu: dict[str, tuple[int, float]], calls: int, wall: float) -> list[list[str]]:
    """The CPU-per-call table's rows from role -> (processes, CPU seconds) over ``wall``
    seconds in which ``calls`` hook calls were answered."""
    per_call = cpu_ms_per_call({role: s for role, (_, s) in cpu.items()}, calls)
    procs: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for role, (count, used) in cpu.items():
        group = GROUPS.get(role, "other")
        procs[group] = procs.get(group, 0) + count
        seconds[group] = seconds.get(group, 0.0) + used
    rows = [[group, str(procs.get(group, 0)), f"{100 * seconds.get(group, 0.0) / wall:.0f}%",
             f"{per_call[group]:.2f}"] for group in (*SERVER_GROUPS, "generator")]
    server = sum(seconds.get(g, 0.0) for g in SERVER_GROUPS)
    rows.insert(len(SERVER_GROUPS), [
        "server (all the above)", str(sum(procs.get(g, 0) for g in SERVER_GROUPS)),
        f"{100 * server / wall:.0f}%", f"{per_call['server']:.2f}"])
    rows.insert(len(SERVER_GROUPS) + 1, [
        "web + postgres + graph", "", "", f"{per_call['web+pg+graph']:.2f}"])
    return rows


def thread_rows(used: dict[str, float], calls: int) -> list[list[str]]:
    """The web-by-thread table's rows, largest first, from group -> CPU seconds."""
    total = sum(used.values())
    return [[group, f"{100 * seconds / total:.0f}%" if total else "",
             f"{1000 * seconds / calls:.2f}" if calls else ""]
            for group, seconds in sorted(used.items(), key=lambda item: -item[1])
            if seconds > 0]


def report_stalls(stats: Stats, shown: int = 8) -> None:
    """The seconds with the most calls slower than SLOW_CALL (by the second each was
    sent), with the machine's I/O and CPU stall time in that second and the next: whether
    slow calls come spread out (queueing) or together (a stall), and what the machine
    waited on then."""
    if not stats.slow:
        return
    by_second: dict[int, list[tuple[str, float]]] = {}
    for sent, tool, seconds in stats.slow:
        by_second.setdefault(int(sent), []).append((tool, seconds))
    worst = sorted(by_second.items(), key=lambda item: -len(item[1]))[:shown]
    clustered = sum(len(calls) for _, calls in worst)
    print(f"calls slower than {SLOW_CALL * 1000:.0f} ms: {len(stats.slow)} in "
          f"{len(by_second)} seconds; the {len(worst)} worst seconds hold {clustered}:")
    rows = []
    for second, calls in sorted(worst):
        tools: dict[str, int] = {}
        for tool, _ in calls:
            tools[tool] = tools.get(tool, 0) + 1
        stall = [stats.pressure.get(s, {}) for s in (second, second + 1)]
        # The sample taken at the end of this second covers it.
        busy = stats.cpu_per_second.get(second + 1, {})
        rows.append([time.strftime("%H:%M:%S", time.localtime(second)), str(len(calls)),
                     f"{max(x for _, x in calls) * 1000:.0f}",
                     ", ".join(f"{t} {c}" for t, c in sorted(tools.items(), key=lambda x: -x[1])),
                     " / ".join(f"{p.get('io', 0):.0f}" for p in stall),
                     " / ".join(f"{p.get('cpu', 0):.0f}" for p in stall),
                     ", ".join(f"{role} {100 * used:.0f}%" for role, used in
                               sorted(busy.items(), key=lambda x: -x[1])[:4] if used >= 0.02)])
    table(["sent at", "slow calls", "max ms", "calls", "io stall ms (s, s+1)",
           "cpu stall ms (s, s+1)", "CPU in that second"], rows)
    seconds = list(stats.pressure.values())
    if seconds:
        print(f"machine stall per second over the window, p50 / max: io "
              f"{percentile([p.get('io', 0) for p in seconds], 0.5):.0f} / "
              f"{max(p.get('io', 0) for p in seconds):.0f} ms, cpu "
              f"{percentile([p.get('cpu', 0) for p in seconds], 0.5):.0f} / "
              f"{max(p.get('cpu', 0) for p in seconds):.0f} ms")


def flush_mix(sizes: list[int]) -> str:
    if not sizes:
        return "-"
    uses = [s for s in sizes if s]
    share = f"{100 * (len(sizes) - len(uses)) / len(sizes):.0f}% empty"
    if not uses:
        return share
    return f"{share}, else mean {sum(uses) / len(uses):.1f}, max {max(uses)}"


def table(header: list[str], rows: list[list[str]]) -> None:
    """A markdown table, so that it pastes into a dated page of docs/benchmarks/."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for i, row in enumerate([header, *rows]):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


# -- the machine ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MachineState:
    """What the machine was like when a run started: numbers from two machines, or from
    one machine busy with something else, compare only beside this."""
    model: str
    cores: int
    python_ms: float  # sum(range(10**6))
    load: tuple[float, float, float]

    def line(self) -> str:
        return (f"{self.model}, {self.cores} cores; python sum(range(10**6)) = "
                f"{self.python_ms:.1f} ms; load average {' '.join(f'{x:.2f}' for x in self.load)}")


def machine_state() -> MachineState:
    return MachineState(cpu_model(), os.cpu_count() or 0, python_ms(), os.getloadavg())


def machine_line_around(before: MachineState) -> str:
    """The machine line of a run: the CPU, sum(range(10**6)) before and after the run (a
    machine that slowed down meanwhile shows here) and the load average at its start."""
    return (f"machine: {before.model}, {before.cores} cores; python sum(range(10**6)) = "
            f"{before.python_ms:.1f} ms before the run, {python_ms():.1f} ms after; load "
            f"average at the start {' '.join(f'{x:.2f}' for x in before.load)}")


# -- the stack -----------------------------------------------------------------------------

# What points a process at servers (orchestrator.ops.launcher skips a configured one) or
# at another process's directories.
CONFIGURED_SERVERS = frozenset({
    "DATABASE_URL", "POSTGRES_HOST", "REDIS_URL", "REDIS_HOST", "CELERY_BROKER_URL",
    "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEOMODEL_DATABASE_URL",
    "ORCHESTRATOR_DATA_DIR", "PROMETHEUS_MULTIPROC_DIR"})


class Stack:
    """``make run``'s stack on free ports with fresh data, and a token. With ``servers``
    > 1: that many complete stacks (web workers, Celery worker and beat: ``serve``), each
    on its own port with its own metrics directory, sharing one launcher's Postgres, Redis
    and graph server and one CONTEXT_DIR / RECOVERY_DIR (a shared volume), as several
    hosts behind a load balancer would."""

    def __init__(self, workers: int | None, servers: int = 1) -> None:
        self.ports = [free_port() for _ in range(servers)]
        self.urls = [f"http://127.0.0.1:{port}" for port in self.ports]
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-agents-"))
        self.workers = workers
        self.process: subprocess.Popen | None = None
        self.token = ""

    def __enter__(self) -> Stack:
        token_file = self.tmp / "token"
        # Servers of its own, as `make run` starts them on a fresh clone: the CPU table
        # then counts them, and `make bench`'s own servers (configured in this process's
        # environment) are not shared with the load.
        env = {k: v for k, v in os.environ.items() if k not in CONFIGURED_SERVERS}
        env.update(CONTEXT_DIR=str(self.tmp / "contexts"), RECOVERY_DIR=str(self.tmp / "recovery"))
        if self.workers:
            env["WEB_WORKERS"] = str(self.workers)
        serves = [f"env PORT={port} ORCHESTRATOR_DATA_DIR={self.tmp / f'stack-{i}'} "
                  f"{PY} -m orchestrator.ops.serve" for i, port in enumerate(self.ports)]
        for i in range(len(self.ports)):
            (self.tmp / f"stack-{i}").mkdir()
        script = (f"{PY} manage.py migrate --noinput -v 0 && "
                  f"{PY} manage.py create_api_token bench-agents | tail -n 1 > {token_file} "
                  "|| exit 1; " + "".join(f"{serve} & " for serve in serves[1:])
                  + f"exec {serves[0]}")
        log = open(self.tmp / "stack.log", "w")  # noqa: SIM115 - lives with the stack
        self.process = subprocess.Popen(
            [PY, "-m", "orchestrator.ops.launcher", "--data-dir", str(self.tmp / "data"),
             "--", "sh", "-c", script],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 300
        for url in self.urls:
            while True:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    tail = (self.tmp / "stack.log").read_text()[-3000:]
                    self.__exit__()
                    raise SystemExit(f"the stack did not start:\n{tail}")
                try:
                    urllib.request.urlopen(f"{url}/healthz", timeout=2).close()
                    break
                except OSError:
                    time.sleep(0.5)
        self.token = token_file.read_text().strip()
        return self

    def servers(self) -> dict[str, str]:
        """The launcher's servers.env: DATABASE_URL, REDIS_URL, ... of the stack's servers."""
        lines = (self.tmp / "data" / "servers.env").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def database_url(self) -> str:
        return self.servers().get("DATABASE_URL") or os.environ["DATABASE_URL"]

    def kill(self, index: int) -> int:
        """SIGKILL one stack (its serve and every process under it); processes killed."""
        import psutil

        victims = []
        for proc in psutil.Process(self.process.pid).children(recursive=True):
            try:
                if "orchestrator.ops.serve" in " ".join(proc.cmdline()) and \
                        proc.environ().get("PORT") == str(self.ports[index]):
                    victims = [proc, *proc.children(recursive=True)]
                    break
            except psutil.Error:
                continue
        for proc in victims:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        return len(victims)

    def __exit__(self, *exc) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def lost_saves(database_url: str, saves: list[tuple[str, int, str]]) -> list[tuple]:
    """Acknowledged saves whose version row (with their marker) is not in Postgres."""
    import psycopg

    versions = f'"{os.environ.get("MCP_SCHEMA", "mcp_contexts")}"."context_versions"'
    if not saves:
        return []
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            f"SELECT w.task_id, w.version, w.marker FROM unnest(%s::text[], %s::int[], "
            f"%s::text[]) AS w(task_id, version, marker) WHERE NOT EXISTS (SELECT 1 FROM "
            f"{versions} v WHERE v.task_id = w.task_id AND "
            "v.version = w.version AND strpos(v.snapshot::text, w.marker) > 0)",
            [[t for t, _, _ in saves], [v for _, v, _ in saves], [m for _, _, m in saves]])
        return rows.fetchall()


def project_name(number: int) -> str:
    return f"bench-agents-{number}"


def projects_for(agents: int, args: argparse.Namespace) -> int:
    """Repositories at a level: --projects when given, else one per --team agents."""
    return args.projects or max(1, -(-agents // args.team))


def create_projects(url: str, token: str, count: int, start: int = 0) -> None:
    for i in range(start, count):
        body = json.dumps({"projectId": project_name(i), "name": f"bench agents {i}"})
        request = urllib.request.Request(
            f"{url}/api/v1/tools/create_project/", data=body.encode(), method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=30).close()
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            if "exist" not in text.lower():
                raise SystemExit(f"create_project failed: {exc.code} {text[:300]}") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=",".join(map(str, LADDER)),
                        help="the ladder of concurrent agents the capacity search steps on, "
                             "comma separated (one value: just that level, e.g. to profile)")
    parser.add_argument("--start", type=int, default=START,
                        help="the level the search starts at (the largest of the ladder at "
                             f"most this; default {START})")
    parser.add_argument("--seconds", type=float, default=60, help="measured per level")
    parser.add_argument("--repeat", type=int, default=1,
                        help="capacity searches on one server; with more than one, each "
                             "level's median and spread and the median capacity are printed")
    parser.add_argument("--ramp", type=float, default=None,
                        help="agents start spread over this many seconds (default: "
                             f"N/{RAMP_STARTS_PER_SECOND}, at least 5)")
    parser.add_argument("--url", help="a running service (default: start `make run`'s stack)")
    parser.add_argument("--token", default=os.environ.get("ORCHESTRATOR_TOKEN"),
                        help="its API token (write scope)")
    parser.add_argument("--workers", type=int,
                        help="WEB_WORKERS of the one stack started here (default: "
                             "$WEB_WORKERS, else the server's default)")
    parser.add_argument("--stack-workers", type=int,
                        help="WEB_WORKERS of each of the --servers stacks (default: --workers "
                             "divided among them, at least 1: the same web workers on the "
                             "same cores as the one stack)")
    parser.add_argument("--team", type=int, default=8,
                        help="agents per repository (a team's repository; the repositories "
                             "grow with N)")
    parser.add_argument("--projects", type=int, default=0,
                        help="a fixed number of repositories instead of one per --team agents")
    parser.add_argument("--elsewhere", type=float, default=0.15,
                        help="share of edits outside the agent's own area of 15 files "
                             f"(of {FILES_PER_PROJECT} per repository)")
    parser.add_argument("--think", type=lambda s: tuple(float(x) for x in s.split("-")),
                        default=(2.0, 5.0), help="seconds per model step, e.g. 2-5")
    parser.add_argument("--save-every", type=float, default=0.25,
                        help="chance that a turn ends with a save")
    parser.add_argument("--p99-ms", type=float, default=100.0,
                        help="a level holds when every hook call's p99 is at most this")
    parser.add_argument("--servers", type=int, default=2,
                        help="also measure this many stacks sharing the servers (1: only one)")
    parser.add_argument("--failover-seconds", type=float, default=60,
                        help="the run that kills one of the stacks halfway (0: none)")
    args = parser.parse_args(argv)
    if args.url and not args.token:
        parser.error("--url needs --token (or ORCHESTRATOR_TOKEN)")
    return args


@dataclass
class LevelResult:
    """What the capacity tables keep of one level's run."""
    n: int
    requests_per_s: float
    hook_p50_ms: float | None
    hook_p99_ms: float | None
    worst: tuple[float, str] | None  # the worst hook call's p99 (ms) and its name
    errors: int
    cpu_percent: float  # every process measured, 100 = one core
    cpu_ms: dict[str, float]  # cpu_ms_per_call's groups
    held: bool


def level_result(level: dict, held: bool) -> LevelResult:
    stats: Stats = level["stats"]
    hook = [x for t in HOOK_CALLS for x in stats.samples.get(t, [])]
    total = sum(len(x) for x in stats.samples.values())
    worst = max(((percentile(stats.samples[t], 0.99) * 1000, t) for t in HOOK_CALLS
                 if stats.samples.get(t)), default=None)
    seconds = {role: used for role, (_, used) in level["cpu"].items()}
    return LevelResult(
        n=level["n"], requests_per_s=total / level["wall"],
        hook_p50_ms=percentile(hook, 0.5) * 1000 if hook else None,
        hook_p99_ms=percentile(hook, 0.99) * 1000 if hook else None,
        worst=worst, errors=sum(stats.errors.values()),
        cpu_percent=100 * sum(seconds.values()) / level["wall"],
        cpu_ms=cpu_ms_per_call(seconds, len(hook)), held=held)


def summary_row(result: LevelResult) -> list[str]:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    return [str(result.n), f"{result.requests_per_s:.0f}", ms(result.hook_p50_ms),
            ms(result.hook_p99_ms),
            f"{result.worst[0]:.1f} ({result.worst[1]})" if result.worst else "-",
            str(result.errors), f"{result.cpu_percent:.0f}%",
            f"{result.cpu_ms['web']:.2f} / {result.cpu_ms['postgres']:.2f} / "
            f"{result.cpu_ms['graph']:.2f} / {result.cpu_ms['worker']:.2f}",
            f"{result.cpu_ms['server']:.2f}", f"{result.cpu_ms['generator']:.2f}",
            "held" if result.held else "FAILED"]


SUMMARY_HEADER = ["agents", "req/s", "hook p50 ms", "hook p99 ms", "worst call's p99 ms",
                  "errors", "CPU", "ms CPU/call web / pg / graph / worker", "server ms/call",
                  "generator ms/call", ""]


def next_level(levels: list[int], start: int, results: dict[int, bool]) -> int | None:
    """The capacity search's next level, or None when it is over: ``start`` first (the
    largest level <= it, else the smallest); while every level run held, the next one up;
    while every one failed, the next one down; once one held and one failed, done (a repeat
    stops at its first failing level)."""
    ladder = sorted(set(levels))
    if not ladder:
        return None
    if not results:
        below = [n for n in ladder if n <= start]
        return below[-1] if below else ladder[0]
    held = [n for n, ok in results.items() if ok]
    failed = [n for n, ok in results.items() if not ok]
    if held and failed:
        return None
    if held:
        up = [n for n in ladder if n > max(held)]
        return up[0] if up else None
    down = [n for n in ladder if n < min(failed)]
    return down[-1] if down else None


def capacity_of(results: list[LevelResult]) -> int:
    """The largest level that held (0: none did)."""
    return max((r.n for r in results if r.held), default=0)


def spread(values: list[float], digits: int = 1) -> str:
    """Median and range of ``values``: "12.3 (10.1-15.0)", or the one value."""
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (f"{statistics.median(values):.{digits}f} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f})")


def repeat_rows(runs: list[list[LevelResult]]) -> list[list[str]]:
    """One row per level over the repeats (each a list of the levels it ran): how many
    runs it held in, the median and min-max of its hook-call p99, of the worst call's p99
    and of the CPU per hook call (web + Postgres + graph, and the whole server)."""
    by_level: dict[int, list[LevelResult]] = {}
    for run in runs:
        for result in run:
            by_level.setdefault(result.n, []).append(result)
    rows = []
    for n, results in sorted(by_level.items()):
        def values(get: Callable[[LevelResult], float | None],
                   results: list[LevelResult] = results) -> list[float]:
            return [v for r in results if (v := get(r)) is not None]

        rows.append([str(n), f"{sum(r.held for r in results)} of {len(results)}",
                     spread(values(lambda r: r.requests_per_s), 0),
                     spread(values(lambda r: r.hook_p99_ms)),
                     spread(values(lambda r: r.worst[0] if r.worst else None)),
                     spread(values(lambda r: r.cpu_ms["web"]), 2),
                     spread(values(lambda r: r.cpu_ms["postgres"]), 2),
                     spread(values(lambda r: r.cpu_ms["web+pg+graph"]), 2),
                     spread(values(lambda r: r.cpu_ms["server"]), 2)])
    return rows


REPEAT_HEADER = ["agents", "held", "req/s", "hook p99 ms", "worst call's p99 ms",
                 "web ms/call", "pg ms/call", "web+pg+graph ms/call", "server ms/call"]


def median_capacity(capacities: list[int]) -> int:
    """The capacity of N repeats: their median, the lower middle one of an even count (a
    level is not held because half the runs held it)."""
    return statistics.median_low(capacities) if capacities else 0


def agents_held(capacity: int, levels: list[int]) -> str:
    """A capacity in words: "1000 agents", or what it is below when no level held."""
    return f"{capacity} agents" if capacity else f"fewer than {min(levels)} agents"


def capacity(args: argparse.Namespace, levels: list[int], urls: list[str], token: str,
             root_pid: int | None, start: int, label: str = "") -> list[LevelResult]:
    """One capacity search (next_level) from ``start``: the levels it ran, in order."""
    results: dict[int, bool] = {}
    ran: list[LevelResult] = []
    created = 0
    while (n := next_level(levels, start, results)) is not None:
        if projects_for(n, args) > created:
            create_projects(urls[0], token, projects_for(n, args), start=created)
            created = projects_for(n, args)
        if label:
            print(f"\n-- {label}: {n} agents", flush=True)
        level = run_on_uvloop(run_level(n, args, urls, token, root_pid))
        held = report(level, args.p99_ms)
        results[n] = held
        ran.append(level_result(level, held))
    return ran


def searches(args: argparse.Namespace, levels: list[int], urls: list[str], token: str,
             root_pid: int | None, stacks: str) -> list[list[LevelResult]]:
    """``--repeat`` capacity searches on the same stack. The first starts at ``--start``;
    the next ones at the first one's capacity (held there: one level up; failed: down), so
    a repeat costs about two levels."""
    runs: list[list[LevelResult]] = []
    for i in range(args.repeat):
        start = args.start if i == 0 else (capacity_of(runs[0]) or args.start)
        label = f"{stacks}, repeat {i + 1} of {args.repeat}" if args.repeat > 1 else stacks
        runs.append(capacity(args, levels, urls, token, root_pid, start, label))
    return runs


def print_runs(stacks: str, runs: list[list[LevelResult]]) -> int:
    """The levels of each repeat, the per-level median and spread, and the capacity."""
    table(["stacks", "run", *SUMMARY_HEADER],
          [[stacks, str(i + 1), *summary_row(r)] for i, run in enumerate(runs) for r in run])
    capacities = [capacity_of(run) for run in runs]
    best = median_capacity(capacities)
    if len(runs) > 1:
        print(f"\n{stacks}, median and (min-max) over {len(runs)} runs:\n")
        table(REPEAT_HEADER, repeat_rows(runs))
        print(f"\n{stacks}: capacity {best} agents, the median of "
              f"{', '.join(map(str, capacities))}")
    return best


def failover(args: argparse.Namespace, n: int, server: Stack) -> list[str]:
    """N agents over two stacks; one is killed (SIGKILL) halfway; the other carries on.
    Every save the service acknowledged must be in Postgres."""
    killed: list[int] = []
    level = run_on_uvloop(run_level(n, args, server.urls, server.token, server.process.pid,
                                    seconds=args.failover_seconds,
                                    midway=lambda: killed.append(server.kill(1))))
    held = report(level, args.p99_ms)
    stats: Stats = level["stats"]
    lost = lost_saves(server.database_url(), stats.acknowledged_saves)
    print(f"failover: stack 2 killed (SIGKILL, {killed[0] if killed else 0} processes) "
          f"{args.failover_seconds / 2:.0f} s into the run; {stats.failovers} calls refused "
          f"by it went to stack 1; {sum(stats.errors.values())} calls cut off in flight; "
          f"{len(stats.acknowledged_saves)} saves acknowledged, {len(lost)} of them missing "
          "from Postgres")
    for row in lost[:5]:
        print(f"  lost: {row}")
    return [f"{n} (one of 2 killed)", *summary_row(level_result(level, held))[1:-1],
            f"{len(lost)} of {len(stats.acknowledged_saves)} acknowledged saves lost"]


def stack_workers(args: argparse.Namespace, servers: int) -> int:
    """WEB_WORKERS of each of ``servers`` stacks. Several stacks on this one machine share
    its cores: by default they split the one stack's web workers between them, so that
    both rows run about as many web processes on the same cores and differ only in being
    two stacks (with twice the processes, the two-stack row measures the extra processes
    competing for two cores rather than the stacks' coordination). Rounded down: of three,
    two stacks get one each."""
    one = args.workers or web_workers_from_env()
    if servers == 1:
        return one
    return args.stack_workers or max(1, one // servers)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    levels = [int(x) for x in args.agents.split(",") if x.strip()]
    before = machine_state()
    print(f"machine at the start: {before.line()}", flush=True)
    if args.url:
        print(f"service: {args.url} (CPU: processes of this user that look like the stack)")
        runs = searches(args, levels, [args.url.rstrip("/")], args.token, None, "1 server")
        print(f"\nCapacity ({args.seconds:.0f} s per level):\n")
        best = print_runs("1 server", runs)
        print(machine_line_around(before))
        print(f"capacity: {agents_held(best, levels)} on one server")
        return 0
    results: dict[int, int] = {}
    fail_row: list[str] | None = None
    all_runs: dict[int, list[list[LevelResult]]] = {}
    for servers in sorted({1, max(1, args.servers)}):
        print(f"\nstarting {servers} `make run` stack(s) (launcher + serve) ...", flush=True)
        started = time.monotonic()
        workers = stack_workers(args, servers)
        stacks = f"{servers} server{'s' if servers > 1 else ''}"
        with Stack(workers, servers) as server:
            print(f"services: {', '.join(server.urls)}, up in "
                  f"{time.monotonic() - started:.0f} s (WEB_WORKERS={workers} each)")
            if servers == 1:
                all_runs[1] = searches(args, levels, server.urls, server.token,
                                       server.process.pid, stacks)
                results[1] = median_capacity([capacity_of(run) for run in all_runs[1]])
            else:
                # Once, from one server's capacity: the row shows the stacks coordinate
                # under load; on shared cores it is not a second capacity figure.
                start = results[1] or args.start
                all_runs[servers] = [capacity(args, levels, server.urls, server.token,
                                              server.process.pid, start, stacks)]
                results[servers] = capacity_of(all_runs[servers][0])
                if args.failover_seconds > 0:
                    n = results[1] or min(levels)
                    print(f"\n-- failover: {n} agents over {servers} stacks, one killed halfway")
                    fail_row = failover(args, n, server)
    print(f"\nCapacity ({args.seconds:.0f} s per level, a level holds with every hook "
          f"call's p99 <= {args.p99_ms:.0f} ms and no error; CPU per call: ms of CPU per "
          "hook call answered in the window):\n")
    for servers, runs in sorted(all_runs.items()):
        print_runs(f"{servers} server{'s' if servers > 1 else ''}", runs)
        print()
    if fail_row:
        table(["stacks", *SUMMARY_HEADER], [["2 servers, failover", *fail_row]])
    print(machine_line_around(before))
    one = results[1]
    repeats = f" (median of {args.repeat} runs)" if args.repeat > 1 else ""
    if len(results) > 1:
        many = max(results)
        print(f"capacity: {agents_held(one, levels)} on one server{repeats}, "
              f"{agents_held(results[many], levels)} on "
              f"{'two' if many == 2 else many}")
    else:
        print(f"capacity: {agents_held(one, levels)} on one server{repeats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
