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

Then what our MCP tools cost the model: the real ``claude`` (tests/claude_code, the
pinned version, ``npm ci`` on first use) runs once per endpoint, the lean /mcp/agent and
the full /mcp, in a project whose .mcp.json points at it, with tool search off
(ENABLE_TOOL_SEARCH=false) and the scripted model stand-in of tests/claude_code as its
API; ``tool definitions: N bytes (M tools)`` is the JSON of the ``mcp__orchestrator__``
tools in its first model request. ``--no-claude`` skips it.

With embedded servers:

    .venv/bin/python -m orchestrator.ops.launcher --temp -- .venv/bin/python -m bench.hooks
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ServerProcess, free_port, percentile, print_table, setup_django

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "claude-code" / "fixtures"
TARGETS = {("PostToolUse (buffered)", "up"): "p50 <= 60", ("PostToolUse (flush)", "up"): "p50 <= 60",
           ("SessionStart", "up"): "p50 <= 250", ("SessionEnd", "up"): "p99 < 1000"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="base URL of a running server (default: start one)")
    parser.add_argument("--runs", type=int, default=40, help="hook processes per row")
    parser.add_argument("--no-claude", action="store_true",
                        help="skip the tool definitions the real Claude Code sends the model")
    return parser.parse_args()


def payload(name: str, **overrides) -> dict:
    return {**json.loads((FIXTURES / f"{name}.json").read_text()), **overrides}


def run_hook(command: str, project: Path, data: dict, env: dict[str, str]) -> float:
    data = {**data, "cwd": str(project)}
    started = time.perf_counter()
    subprocess.run(["sh", "-c", command], input=json.dumps(data).encode(),
                   capture_output=True, check=True, cwd=project,
                   env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(project), **env})
    return time.perf_counter() - started


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
    return {event: hook["command"] for event, groups in settings["hooks"].items()
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


# What claude_setup names our MCP server in .mcp.json, hence Claude Code's tool prefix.
MCP_SERVER = "orchestrator"
TOOL_PREFIX = f"mcp__{MCP_SERVER}__"
MCP_ENDPOINTS = (("/mcp/agent", "lean: the agent tools"), ("/mcp", "full: every tool"))


def tool_definition_bytes(url: str, token: str, path: str) -> tuple[int, int]:
    """(bytes, tools) of our tool definitions in the first model request the real Claude
    Code sends with an HTTP MCP entry at ``url`` + ``path`` and tool search off."""
    from tests.claude_code.installation import ensure_claude_code
    from tests.claude_code.model_standin import ModelStandIn
    from tests.claude_code.runner import ClaudeCode

    binary, version = ensure_claude_code()
    with tempfile.TemporaryDirectory() as temp:
        project = Path(temp) / "project"
        project.mkdir()
        entry = {"type": "http", "url": f"{url}{path}",
                 "headers": {"Authorization": f"Bearer {token}"}}
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {MCP_SERVER: entry}}))
        claude = ClaudeCode(binary, version, home=Path(temp) / "home")
        with ModelStandIn([]) as model:
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


def main() -> None:
    args = parse_args()
    setup_django()
    from django.core.management import call_command

    from contexts.services.tasks import create_task
    from orchestrator.core.models import ApiToken

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
    with tempfile.TemporaryDirectory() as temp:
        project = Path(temp) / "project"
        server = contextlib.nullcontext() if args.url else ServerProcess(free_port())
        with server as live:
            commands = install_hooks(project, args.url or live.url, token, task)
            configure(project, args.url or live.url, token, task)
            rows.extend(bench_events(project, commands, args.runs, "up"))
            definitions = [] if args.no_claude else \
                bench_tool_definitions(args.url or live.url, token)
        configure(project, f"http://127.0.0.1:{free_port()}", token, task)
        rows.extend(bench_events(project, commands, args.runs, "down"))
        spooled = len(list((project / ".claude" / "orchestrator" / "spool").glob("*.json")))
    print_table(["hook", "service", "runs", "p50 ms", "p99 ms", "max ms", "target ms"], rows)
    print(f"calls spooled while the service was down: {spooled}")
    print(f"hook command: {commands['PostToolUse']}")
    for line in definitions:
        print(line)


if __name__ == "__main__":
    main()
