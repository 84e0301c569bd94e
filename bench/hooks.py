"""Benchmark of the Claude Code hook client. Not a test: it prints one table.

    DATABASE_URL=postgresql://.../orch_bench REDIS_URL=redis://127.0.0.1:6379/9 \\
        python -m bench.hooks [--url http://127.0.0.1:8000] [--runs 40]

Wall time of one hook process per event, as Claude Code runs it: the very command
``manage.py claude_setup`` writes into the project's ``.claude/settings.json``, through
``sh -c`` (fork, exec, the shell, Python start-up, the event's work, exit), fed the
protocol fixtures of ../shared/claude-code/fixtures, with the service up
(``python -m orchestrator.ops.webserver`` started for the run, or ``--url``) and down (a port
with nothing listening). PostToolUse is shown twice: a call inside the flush interval
only appends to the local buffer; a flushing one also sends the batch with a heartbeat
(one round trip). The floor rows are Python's own start-up, with and without ``site``
(the hooks run with ``-S``).

PreEdit is the check before an edit (``edit_check``: the synchronous PreToolUse group for
Edit|Write|MultiEdit|NotebookEdit, which calls claim_files), for one session started by
the SessionStart hook and kept: service up with no other holder (clear); up with a file
held by another live session of another task, the first edit of each (session, file)
pair (it warns, records the file_conflict and the holder's notice) and the edits after
(said once: silent); service down (nothing listening), the check that tries to connect
(its ``down-until`` marker cleared before each) and the one after it (marker set); and
service slow, a listener of the bench's own that accepts and never answers, the same
two. Every PreEdit answer is checked (a warning exactly where one is due), counted on
the ``PreEdit answers`` line.

Then what our MCP tools cost the model: the real ``claude`` (tests/claude_code, the
pinned version, ``npm ci`` on first use) runs once per endpoint, the lean /mcp/agent and
the full /mcp, in a project whose .mcp.json points at it, with tool search off
(ENABLE_TOOL_SEARCH=false) and the scripted model stand-in of tests/claude_code as its
API; ``tool definitions: N bytes (M tools)`` is the JSON of the ``mcp__orchestrator__``
tools in its first model request. ``--no-claude`` skips it.

Last, command hook against Claude Code's ``http`` hook (issue 36), per tool use as the
agent pays it: the real ``claude`` runs a script of ``--tool-uses`` Bash calls (``true``)
once per kind of PostToolUse handler, every kind ``--claude-runs`` times, interleaved.
One tool use is the time between two requests of the run to the model stand-in (the
tool, its hooks, Claude Code's own work); a hook's cost is the median of its tool uses
less the median with no PostToolUse hook (medians of every tool use of every run: the
machine's noise spreads the quartiles, not the medians). Kinds: ours (the command claude_setup writes:
``python -S launch.py``, which appends to the local buffer and flushes every
ORCHESTRATOR_FLUSH_SECONDS), the same with ``async: true`` (Claude Code does not wait for
it; a notice it prints arrives a turn later), and an ``http`` handler POSTing the event to a listener of
the bench's own that answers 200 at once (the floor of any endpoint), to the orchestrator
(a tool call, ``heartbeat``: token, input check, answer), and to a port with nothing
listening; each with the service up and down. Every run has our SessionStart hook (it
maps the session; the command's buffer needs it). ``http dispatched`` counts the POSTs
the listener received against the tool uses.

With embedded servers:

    .venv/bin/python -m orchestrator.ops.launcher --temp -- .venv/bin/python -m bench.hooks
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.common import ServerProcess, free_port, percentile, print_table, setup_django

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "claude-code" / "fixtures"
TARGETS = {("PostToolUse (buffered)", "up"): "p50 <= 60", ("PostToolUse (flush)", "up"): "p50 <= 60",
           ("SessionStart", "up"): "p50 <= 250", ("SessionEnd", "up"): "p99 < 1000",
           ("PreEdit (clear)", "up"): "p50 <= 60",
           ("PreEdit (held, first warning)", "up"): "p50 <= 60",
           ("PreEdit (held, warned before)", "up"): "p50 <= 60"}
# The edit waits for a service that is down or does not answer at most this long.
EDIT_DOWN_TARGET = "max <= 300"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="base URL of a running server (default: start one)")
    parser.add_argument("--runs", type=int, default=40, help="hook processes per row")
    parser.add_argument("--no-claude", action="store_true",
                        help="skip what needs the real Claude Code (tool definitions, "
                             "command vs http hooks)")
    parser.add_argument("--tool-uses", type=int, default=30,
                        help="tool uses per Claude Code run (command vs http hooks)")
    parser.add_argument("--claude-runs", type=int, default=3,
                        help="Claude Code runs per hook kind (command vs http hooks)")
    parser.add_argument("--only-hook-kinds", action="store_true",
                        help="measure only command vs http hooks")
    return parser.parse_args()


def payload(name: str, **overrides) -> dict:
    return {**json.loads((FIXTURES / f"{name}.json").read_text()), **overrides}


def run_hook(command: str, project: Path, data: dict, env: dict[str, str]) -> float:
    return run_hook_output(command, project, data, env)[0]


def run_hook_output(command: str, project: Path, data: dict, env: dict[str, str]
                    ) -> tuple[float, str]:
    """Seconds of one hook process, and what it printed (Claude Code's answer)."""
    data = {**data, "cwd": str(project)}
    started = time.perf_counter()
    done = subprocess.run(["sh", "-c", command], input=json.dumps(data).encode(),
                          capture_output=True, check=True, cwd=project,
                          env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(project),
                               **env})
    return time.perf_counter() - started, done.stdout.decode()


def install_hooks(project: Path, url: str, token: str, task: str) -> dict[str, str]:
    """``manage.py claude_setup`` for the project, as a user runs it; returns the command
    it wrote for each event."""
    from django.conf import settings
    from django.core.management import call_command

    from orchestrator_hook import install

    project.mkdir(parents=True, exist_ok=True)
    # The bench's task is in the default project; a temporary directory would otherwise
    # be a project of its own (claude_setup refuses a task of another project).
    call_command("claude_setup", "--project-dir", str(project), "--url", url, "--token", token,
                 "--task", task, "--project", settings.MCP_PROJECT_ID, stdout=io.StringIO())
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    # Keyed by the command's own event word: PreToolUse has two groups of ours, the
    # asynchronous note (PreToolUse) and the check before an edit (PreEdit).
    return {shlex.split(hook["command"])[-1]: hook["command"]
            for groups in settings["hooks"].values()
            for group in groups for hook in group["hooks"]
            if install.is_our_command(hook.get("command"))}


def configure(project: Path, url: str, token: str, task: str) -> None:
    state = project / ".claude" / "orchestrator"
    state.mkdir(parents=True, exist_ok=True)
    (state / "config.json").write_text(json.dumps({"url": url, "token": token, "taskId": task}))
    (state / "down-until").unlink(missing_ok=True)


def bench_events(project: Path, commands: dict[str, str], runs: int, service: str
                 ) -> list[list[str]]:
    rows = []

    def row(name: str, samples: list[float]) -> None:
        ms = [s * 1000 for s in samples]
        rows.append([name, service, str(len(ms)), f"{percentile(ms, 0.5):.1f}",
                     f"{percentile(ms, 0.99):.1f}", f"{max(ms):.1f}",
                     TARGETS.get((name, service), "<= 300" if service == "down" else "")])

    starts, buffered, flushes, stops, ends, pre = [], [], [], [], [], []
    slow = {"ORCHESTRATOR_FLUSH_SECONDS": "3600"}
    fast = {"ORCHESTRATOR_FLUSH_SECONDS": "0"}
    for i in range(runs):
        claude = f"bench-{time.time_ns()}-{i}"
        starts.append(run_hook(commands["SessionStart"], project,
                               payload("session_start_startup", session_id=claude), slow))
        edit = payload("post_tool_use_edit", session_id=claude)
        edit["tool_input"]["file_path"] = str(project / "src" / f"file{i % 5}.ts")
        pre.append(run_hook(commands["PreToolUse"], project,
                            {**payload("pre_tool_use_bash", session_id=claude),
                             "tool_use_id": edit["tool_use_id"]}, slow))
        buffered.append(run_hook(commands["PostToolUse"], project, edit, slow))
        flushes.append(run_hook(commands["PostToolUse"], project, edit, fast))
        stops.append(run_hook(commands["Stop"], project, payload("stop", session_id=claude), slow))
        ends.append(run_hook(commands["SessionEnd"], project,
                             payload("session_end_other", session_id=claude), slow))
    row("SessionStart", starts)
    row("PostToolUse (buffered)", buffered)
    row("PostToolUse (flush)", flushes)
    row("PreToolUse (async)", pre)
    row("Stop", stops)
    row("SessionEnd", ends)
    return rows


def edit_payload(project: Path, claude: str, path: str, n: int) -> dict:
    """Claude Code's PreToolUse input for an Edit of ``path`` (relative to ``project``)."""
    return payload("pre_tool_use_bash", session_id=claude, tool_name="Edit",
                   tool_use_id=f"toolu_bench_{claude[-12:]}_{n}",
                   tool_input={"file_path": str(project / path), "old_string": "a",
                               "new_string": "b", "replace_all": False})


def warned(output: str) -> bool:
    """Whether a PreEdit answer warned the model (allowed, with additionalContext)."""
    said = json.loads(output).get("hookSpecificOutput", {}) if output.strip() else {}
    return bool(said.get("additionalContext")) and "permissionDecision" not in said


class Answers:
    """What the PreEdit answers were against what each row expects; with the service up,
    the checks that gave up on it (no answer within CALL_SECONDS: the edit allowed
    unchecked, the down-until marker written)."""

    def __init__(self) -> None:
        self.checked, self.wrong = 0, []
        self.timed_out: dict[str, int] = {}

    def expect(self, row: str, output: str, warning: bool) -> None:
        self.checked += 1
        if warned(output) != warning or (not warning and output.strip()):
            self.wrong.append(f"{row}: {output.strip()[:200] or '(nothing)'}")

    def gave_up(self, row: str, output: str) -> None:
        self.checked += 1
        self.timed_out[row] = self.timed_out.get(row, 0) + 1
        if output.strip():
            self.wrong.append(f"{row} (gave up): {output.strip()[:200]}")

    def lines(self) -> list[str]:
        lines = [f"PreEdit answers: {self.checked - len(self.wrong)} of {self.checked} as "
                 "expected (a warning exactly where due)" if not self.wrong else
                 f"PreEdit answers: {len(self.wrong)} of {self.checked} NOT as expected, "
                 f"first: {self.wrong[0]}"]
        if self.timed_out:
            counts = ", ".join(f"{row} {n}" for row, n in self.timed_out.items())
            lines.append(f"PreEdit checks that gave up on the live service (no answer within "
                         f"the call limit; edit allowed unchecked, marker cleared before the "
                         f"next run): {counts}")
        return lines


def timing_row(name: str, service: str, samples: list[float], target: str) -> list[str]:
    ms = [s * 1000 for s in samples]
    return [name, service, str(len(ms)), f"{percentile(ms, 0.5):.1f}",
            f"{percentile(ms, 0.99):.1f}", f"{max(ms):.1f}", target]


def start_edit_session(project: Path, commands: dict[str, str]) -> tuple[str, str]:
    """A Claude Code session started by the SessionStart hook and kept live: (Claude's
    session id, the orchestrator session it maps to in sessions.json)."""
    claude = f"bench-edit-{time.time_ns()}"
    run_hook(commands["SessionStart"], project,
             payload("session_start_startup", session_id=claude),
             {"ORCHESTRATOR_FLUSH_SECONDS": "3600"})
    sessions = json.loads((project / ".claude" / "orchestrator" / "sessions.json").read_text())
    return claude, sessions[claude]["sessionId"]


def bench_edit_up(project: Path, commands: dict[str, str], runs: int, claude: str,
                  session_id: str, answers: Answers) -> list[list[str]]:
    """PreEdit with the service up: clear, then files another task's live session holds."""
    from claims.services.claiming import claim
    from contexts.services.tasks import create_task
    from sessions.models import ActiveSession
    from sessions.services.lifecycle import end_session, start_session

    check, env = commands["PreEdit"], {"ORCHESTRATOR_FLUSH_SECONDS": "3600"}
    marker = project / ".claude" / "orchestrator" / "down-until"

    def attempt(row: str, path: str, n: int, warning: bool) -> float:
        """One check; a check that gave up wrote the down-until marker, which is removed
        so that the next run calls the service again."""
        seconds, output = run_hook_output(check, project,
                                          edit_payload(project, claude, path, n), env)
        if marker.exists():
            marker.unlink()
            answers.gave_up(row, output)
        else:
            answers.expect(row, output, warning)
        return seconds

    clear = [attempt("PreEdit (clear)", f"src/clear{i % 5}.ts", i, False)
             for i in range(runs)]
    # Another live session, of another task, in the same project and directory, holding
    # one file per run: the first edit of each is a new (holder, file) pair.
    ours = ActiveSession.objects.get(session_id=session_id)
    other_task = f"bench-hooks-other-{time.time_ns()}"
    create_task(other_task, {"name": "Hook bench, the other task",
                             "immediateContext": {"workingOn": "holding the files"}})
    holder = f"bench-holder-{time.time_ns()}"
    start_session(session_id=holder, task_id=other_task, project_id=ours.project_id,
                  project_dir=ours.project_dir, agent_id="bench-holder")
    held = [f"src/held{i}.ts" for i in range(runs)]
    claim(holder, held, source="tool")
    try:
        first = [attempt("PreEdit (held, first warning)", path, runs + i, True)
                 for i, path in enumerate(held)]
        again = [attempt("PreEdit (held, warned before)", held[i % 5], 2 * runs + i, False)
                 for i in range(runs)]
    finally:
        end_session(holder)
    return [timing_row(name, "up", samples, TARGETS[(name, "up")]) for name, samples in (
        ("PreEdit (clear)", clear), ("PreEdit (held, first warning)", first),
        ("PreEdit (held, warned before)", again))]


class SilentListener:
    """A service that does not answer: a TCP listener that accepts every connection and
    never reads or writes; the connections stay open until it stops."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(128)
        self.server.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.accepted: list[socket.socket] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.serve, name="silent-listener", daemon=True)

    def serve(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(connection)

    def __enter__(self) -> SilentListener:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join()
        for connection in self.accepted:
            connection.close()
        self.server.close()


def bench_edit_unreachable(project: Path, commands: dict[str, str], runs: int, claude: str,
                           service: str, answers: Answers) -> list[list[str]]:
    """PreEdit with a service that refuses (down) or does not answer (slow), as configured:
    the check that tries (the down-until marker cleared first), then the one after it."""
    check, env = commands["PreEdit"], {"ORCHESTRATOR_FLUSH_SECONDS": "3600"}
    marker = project / ".claude" / "orchestrator" / "down-until"
    tries, skips = [], []
    for i in range(runs):
        marker.unlink(missing_ok=True)
        for samples, name in ((tries, "first check"), (skips, "down marker")):
            seconds, output = run_hook_output(
                check, project, edit_payload(project, claude, f"src/clear{i % 5}.ts", i), env)
            answers.expect(f"PreEdit ({name}), {service}", output, warning=False)
            samples.append(seconds)
        if not marker.exists():
            raise RuntimeError(f"PreEdit with the service {service} left no down-until marker")
    marker.unlink(missing_ok=True)
    return [timing_row("PreEdit (first check)", service, tries, EDIT_DOWN_TARGET),
            timing_row("PreEdit (down marker)", service, skips, EDIT_DOWN_TARGET)]


# What claude_setup names our MCP server in .mcp.json, hence Claude Code's tool prefix.
MCP_SERVER = "orchestrator"
TOOL_PREFIX = f"mcp__{MCP_SERVER}__"
MCP_ENDPOINTS = (("/mcp/agent", "lean: the agent tools"), ("/mcp", "full: every tool"))


def tool_definition_bytes(url: str, token: str, path: str) -> tuple[int, int]:
    """(bytes, tools) of our tool definitions in the first model request the real Claude
    Code sends with an HTTP MCP entry at ``url`` + ``path`` and tool search off."""
    from tests.agent_runner import ClaudeCode
    from tests.claude_code.installation import ensure_claude_code
    from tests.model_standins import ClaudeStandIn

    binary, version = ensure_claude_code()
    with tempfile.TemporaryDirectory() as temp:
        project = Path(temp) / "project"
        project.mkdir()
        entry = {"type": "http", "url": f"{url}{path}",
                 "headers": {"Authorization": f"Bearer {token}"}}
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {MCP_SERVER: entry}}))
        claude = ClaudeCode(binary, version, home=Path(temp) / "home")
        with ClaudeStandIn([]) as model:
            run = claude.run(project, "Say hello.", model.url,
                             env={"ENABLE_TOOL_SEARCH": "false"})
            if run.returncode != 0:
                raise RuntimeError(f"claude exited {run.returncode}: {run.stderr[-2000:]}")
            first = next(r for r in model.requests if r.body.get("tools"))
    ours = [tool for tool in first.body["tools"]
            if str(tool.get("name", "")).startswith(TOOL_PREFIX)]
    size = sum(len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False).encode())
               for tool in ours)
    return size, len(ours)


def bench_tool_definitions(url: str, token: str) -> list[str]:
    lines = []
    for path, label in MCP_ENDPOINTS:
        size, count = tool_definition_bytes(url, token, path)
        lines.append(f"tool definitions: {size} bytes ({count} tools) via {path} ({label})")
    return lines


class CountingListener:
    """An HTTP endpoint that answers every POST with 200 ``{}`` at once and counts them:
    the cheapest server an ``http`` hook could have."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        listener = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                listener.posts += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.posts = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> CountingListener:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def hook_settings(commands: dict[str, str], kind: str, target: str | None) -> dict:
    """.claude/settings.local.json of one run: our SessionStart, and the PostToolUse
    handler being measured (none, ours, or an http one POSTing to ``target``)."""
    hooks: dict = {"SessionStart": [{"hooks": [{"type": "command", "timeout": 15,
                                                "command": commands["SessionStart"]}]}]}
    if kind in ("command", "command async"):
        handler = {"type": "command", "command": commands["PostToolUse"], "timeout": 10}
        if kind == "command async":
            handler["async"] = True
        hooks["PostToolUse"] = [{"matcher": "*", "hooks": [handler]}]
    elif kind == "http":
        hooks["PostToolUse"] = [{"matcher": "*", "hooks": [
            {"type": "http", "url": target, "timeout": 10,
             "headers": {"Authorization": "Bearer $ORCHESTRATOR_TOKEN"},
             "allowedEnvVars": ["ORCHESTRATOR_TOKEN"]}]}]
    return {"hooks": hooks}


def bench_hook_kinds(commands: dict[str, str], url: str, token: str, task: str,
                     tool_uses: int, runs: int) -> tuple[list[list[str]], list[str]]:
    """Milliseconds per tool use of each PostToolUse handler kind, service up and down,
    with the real Claude Code (see the module's docstring)."""
    from tests.agent_runner import ClaudeCode
    from tests.claude_code.installation import ensure_claude_code
    from tests.model_standins import ClaudeStandIn, call, say

    binary, version = ensure_claude_code()
    closed = f"http://127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory() as temp, CountingListener() as listener:
        project = Path(temp) / "project"
        (project / ".claude").mkdir(parents=True)
        claude = ClaudeCode(binary, version, home=Path(temp) / "home")
        variants = [("none", "-", "none", None, url),
                    ("command (ours)", "up", "command", None, url),
                    ("command (ours)", "down", "command", None, closed),
                    ("command (ours), async: true", "up", "command async", None, url),
                    ("http -> listener answering at once", "up", "http", listener.url, url),
                    ("http -> orchestrator tool call", "up", "http",
                     f"{url}/api/v1/tools/heartbeat/", url),
                    ("http -> nothing listening", "down", "http", f"{closed}/hook", closed)]
        gaps: dict[tuple[str, str], list[float]] = {(v[0], v[1]): [] for v in variants}
        posts_expected = posts_before = 0
        for _ in range(runs):
            for name, service, kind, target, service_url in variants:
                configure(project, service_url, token, task)
                (project / ".claude" / "settings.local.json").write_text(
                    json.dumps(hook_settings(commands, kind, target)))
                steps = [call("Bash", command="true", description="nothing")
                         for _ in range(tool_uses)] + [say("done")]
                before = listener.posts
                with ClaudeStandIn(steps) as model:
                    run = claude.run(project, "run true", model.url, timeout=600,
                                     env={"ORCHESTRATOR_TOKEN": token})
                if run.returncode != 0:
                    raise RuntimeError(f"claude exited {run.returncode}: {run.stderr[-2000:]}")
                # One tool use (and its hooks) between two model requests: the gaps.
                arrivals = [r.received_at for r in model.scripted_requests]
                gaps[(name, service)] += [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
                if target == listener.url:
                    posts_expected += tool_uses
                    posts_before += listener.posts - before

    def quartiles(samples: list[float]) -> tuple[float, float, float]:
        ordered = sorted(samples)
        return tuple(ordered[int(q * (len(ordered) - 1))] * 1000 for q in (0.25, 0.5, 0.75))

    base = quartiles(gaps[("none", "-")])[1]
    rows = []
    for (name, service), samples in gaps.items():
        low, median, high = quartiles(samples)
        rows.append([name, service, str(len(samples)), f"{median:.1f}",
                     f"{low:.1f} .. {high:.1f}",
                     "-" if name == "none" else f"{median - base:+.1f}"])
    notes = [f"http dispatched: {posts_before} POSTs for {posts_expected} tool uses",
             f"claude {version}, {tool_uses} tool uses per run"]
    return rows, notes


def main() -> None:
    args = parse_args()
    setup_django()
    from django.core.management import call_command

    from contexts.services.tasks import create_task
    from foundation.core.models import ApiToken

    call_command("migrate", verbosity=0)
    _, token = ApiToken.issue(f"bench-hooks-{time.time_ns()}")
    task = f"bench-hooks-{time.time_ns()}"
    create_task(task, {"name": "Hook bench",
                 "immediateContext": {"nextStep": "measure the hooks"}})
    # Python's own start-up, the floor under every row: with site, and without (-S) as
    # the hooks run.
    rows = []
    for name, flags in (("python -c pass (floor)", []), ("python -S -c pass (floor)", ["-S"])):
        floor = [0.0] * 20
        for i in range(20):
            started = time.perf_counter()
            subprocess.run([sys.executable, *flags, "-c", "pass"], check=True)
            floor[i] = time.perf_counter() - started
        rows.append([name, "-", "20", f"{percentile(floor, 0.5) * 1000:.1f}",
                     f"{percentile(floor, 0.99) * 1000:.1f}", f"{max(floor) * 1000:.1f}", ""])
    if args.only_hook_kinds:
        with tempfile.TemporaryDirectory() as temp:
            server = contextlib.nullcontext() if args.url else ServerProcess(free_port())
            with server as live:
                commands = install_hooks(Path(temp) / "project", args.url or live.url, token,
                                         task)
                print_hook_kinds(commands, args.url or live.url, token, task, args)
        return
    with tempfile.TemporaryDirectory() as temp:
        project = Path(temp) / "project"
        server = contextlib.nullcontext() if args.url else ServerProcess(free_port())
        answers = Answers()
        with server as live:
            commands = install_hooks(project, args.url or live.url, token, task)
            configure(project, args.url or live.url, token, task)
            rows.extend(bench_events(project, commands, args.runs, "up"))
            claude, session_id = start_edit_session(project, commands)
            try:
                edit_rows = bench_edit_up(project, commands, args.runs, claude, session_id,
                                          answers)
            finally:
                # Ended on the service only: sessions.json still maps Claude's session,
                # so the checks below reach the point where they call the service.
                from sessions.services.lifecycle import end_session

                end_session(session_id)
            definitions = [] if args.no_claude else \
                bench_tool_definitions(args.url or live.url, token)
            if not args.no_claude:
                kinds = Path(temp) / "kinds"
                kind_commands = install_hooks(kinds, args.url or live.url, token, task)
        configure(project, f"http://127.0.0.1:{free_port()}", token, task)
        edit_rows += bench_edit_unreachable(project, commands, args.runs, claude, "down",
                                            answers)
        with SilentListener() as silent:
            configure(project, silent.url, token, task)
            edit_rows += bench_edit_unreachable(project, commands, args.runs, claude, "slow",
                                                answers)
        rows.extend(edit_rows)
        configure(project, f"http://127.0.0.1:{free_port()}", token, task)
        rows.extend(bench_events(project, commands, args.runs, "down"))
        spooled = len(list((project / ".claude" / "orchestrator" / "spool").glob("*.json")))
    print_table(["hook", "service", "runs", "p50 ms", "p99 ms", "max ms", "target ms"], rows)
    print(f"calls spooled while the service was down: {spooled}")
    for line in answers.lines():
        print(line)
    print(f"hook command: {commands['PostToolUse']}")
    for line in definitions:
        print(line)
    if not args.no_claude:
        # After the table above: its server is gone, a fresh one for these runs.
        with ServerProcess(free_port()) if not args.url else contextlib.nullcontext() as live:
            url = args.url or live.url
            print_hook_kinds(kind_commands, url, token, task, args)


def print_hook_kinds(commands: dict[str, str], url: str, token: str, task: str,
                     args: argparse.Namespace) -> None:
    rows, notes = bench_hook_kinds(commands, url, token, task, args.tool_uses,
                                   args.claude_runs)
    print_table(["PostToolUse handler", "service", "tool uses", "ms per tool use (median)",
                 "p25 .. p75", "hook's cost ms (median - none)"], rows)
    for line in notes:
        print(line)


if __name__ == "__main__":
    main()
