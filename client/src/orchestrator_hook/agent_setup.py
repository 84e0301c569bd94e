"""``orchestrator-agent setup``: set a project directory up for Claude Code over the
server's HTTP API alone (issue 36), from a machine that holds no server code.

    orchestrator-agent setup --url URL --enroll CODE --project-dir DIR
    orchestrator-agent setup --url URL --token TOKEN --project-dir DIR [--project KEY]
    orchestrator-agent setup --project-dir DIR --check

What it does, in order:

1. the token: ``--enroll CODE`` exchanges an operator's enrollment code (``POST
   /api/v1/enroll/``) for a token of this machine's own, limited to the code's project
   and named after the machine and the directory; ``--token`` takes one as it is (scripted
   installs); with neither, the token already configured in the directory;
2. the project: the code's, else ``--project``, else the directory's own key
   (``project.identify``: git remote, root commit, directory), registered with
   ``create_project`` when the token reaches no such project yet;
3. the task (``--task``): checked with ``get_unified_context`` (a task of another project is
   refused; a task that does not exist yet is a warning);
4. the files (``install.plan``, merged, never clobbered, idempotent): hooks in the
   git-ignored ``.claude/settings.local.json`` running this client's own interpreter (no
   path of a server checkout), ``.mcp.json`` naming ``${ORCHESTRATOR_TOKEN}``, the token in
   0600 files git ignores, ``.worktreeinclude``, ``.git/info/exclude``.

``manage.py claude_setup`` (the one-machine path) does steps 1-3 against its database and
then calls ``write`` below, so both write the same files the same way.
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from orchestrator_hook import install
from orchestrator_hook.project import ProjectIdentity, identify, key_from
from orchestrator_hook.state import STATE_DIR, read_json
from orchestrator_hook.transport import tls_context

HOW = {"option": "from --project", "remote": "from the git remote",
       "root-commit": "from the repository's root commit",
       "directory": "from the directory: no git remote or commit",
       "enrollment": "from the enrollment code"}
TIMEOUT_SECONDS = 15


class SetupError(Exception):
    """What stops the setup: printed as ``error: ...``, exit status 1, nothing written."""


class Api:
    """The server's HTTP API as setup uses it: the base URL may carry a path prefix
    (``https://host/orchestrator``), HTTPS uses the system's CA store or ``ca_file``."""

    def __init__(self, url: str, ca_file: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.context: ssl.SSLContext | None = tls_context(ca_file) \
            if self.url.startswith("https:") else None

    def post(self, path: str, payload: dict[str, Any], token: str | None = None,
             project: str | None = None) -> tuple[int, dict[str, Any]]:
        headers = {"Content-Type": "application/json", "User-Agent": "orchestrator-agent"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if project:
            headers[install.PROJECT_HEADER] = project
        request = urllib.request.Request(f"{self.url}{path}", data=json.dumps(payload).encode(),
                                         headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS,
                                        context=self.context) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _json(exc.read())
        except (OSError, ValueError) as exc:
            raise SetupError(f"the service at {self.url} does not answer ({exc})") from None

    def tool(self, token: str, name: str, arguments: dict[str, Any],
             project: str | None = None) -> tuple[int, dict[str, Any]]:
        return self.post(f"/api/v1/tools/{name}/", arguments, token, project)

    def healthz(self) -> str:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5,
                                        context=self.context) as response:
                return f"answering, /healthz {response.status}"
        except urllib.error.HTTPError as exc:
            return f"answering, /healthz {exc.code}"
        except (OSError, ValueError):
            return "not answering now; hooks spool until it is up"


def _json(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def error_of(answer: dict[str, Any]) -> tuple[str, str]:
    error = answer.get("error") if isinstance(answer.get("error"), dict) else {}
    return str(error.get("code") or ""), str(error.get("message") or "")


def enroll(api: Api, code: str, project_dir: Path) -> dict[str, Any]:
    """The token an enrollment code is worth (its answer: token, tokenName, projectId)."""
    status, answer = api.post("/api/v1/enroll/", {
        "code": code, "machine": socket.gethostname() or "unknown",
        "directory": str(project_dir)})
    if status != 200 or not answer.get("token"):
        code_, message = error_of(answer)
        raise SetupError(f"the enrollment code was refused ({status} {code_}: {message}); "
                         "ask for a new one (manage.py create_enrollment, or the console)")
    return answer


def enrolled_token(api: Api, configured: dict[str, Any], url: str) -> tuple[str, str] | None:
    """The (token, project) this directory already holds for ``url``, when the server still
    accepts the token and it reaches that project; None otherwise (enroll afresh)."""
    token, project_key = configured.get("token"), configured.get("projectId")
    if not (isinstance(token, str) and token and isinstance(project_key, str) and project_key
            and (configured.get("url") or "").rstrip("/") == url):
        return None
    status, answer = api.tool(token, "list_projects", {})
    if status != 200 or not isinstance(answer, dict):
        return None
    listed = {p.get("projectId") for p in answer.get("projects") or [] if isinstance(p, dict)}
    return (token, project_key) if project_key in listed else None


def find_project(api: Api, token: str, project: ProjectIdentity, dry_run: bool) -> str:
    """The project on the server as this token sees it: there already, registered now, or
    (dry run) to be registered."""
    status, answer = api.tool(token, "list_projects", {})
    if status == 401:
        raise SetupError("the token is refused by the server (unknown or revoked)")
    if status != 200:
        code, message = error_of(answer)
        raise SetupError(f"list_projects failed: {status} {code}: {message}")
    listed = {p.get("projectId") for p in answer.get("projects") or [] if isinstance(p, dict)}
    if project.key in listed:
        return "registered already"
    if dry_run:
        return "would be registered"
    status, answer = api.tool(token, "create_project",
                              {"projectId": project.key, "name": project.name[:500]})
    code, message = error_of(answer)
    if status == 200:
        return "registered now"
    if code == "E1606":
        # There, but not among this token's projects: every call would be refused.
        raise SetupError(f"project {project.key} exists but this token cannot reach it: "
                         "use an enrollment code or a token for that project")
    raise SetupError(f"could not register project {project.key}: {status} {code}: {message}")


def check_task(api: Api, token: str, task_id: str, project_key: str,
               warn: Callable[[str], None]) -> None:
    status, answer = api.tool(token, "get_unified_context",
                              {"taskId": task_id, "depth": "hot",
                               "includeRelationships": False}, project_key)
    code, message = error_of(answer)
    if status == 200:
        found = answer.get("projectId")
        if found and found != project_key:
            raise SetupError(f"task {task_id!r} is in project {found!r}, this directory in "
                             f"{project_key!r}: pass --project {found} or another task")
    elif code == "E1610":
        warn(f"warning: task {task_id!r} does not exist yet; sessions will choose a task "
             "themselves until it does")
    else:
        raise SetupError(f"could not check task {task_id!r}: {status} {code}: {message}")


def default_runner() -> list[str]:
    """What the hooks run: this interpreter without ``site`` and the client's launcher,
    both where the client is installed (its own venv, pipx or uv tool dir)."""
    return install.launcher_runner(sys.executable)


def write(project_dir: Path, *, url: str, token: str, project_key: str, how: str,
          registered: str, runner: Sequence[str], task_id: str | None = None,
          mcp_transport: str = "http", all_tools: bool = False,
          stdio_command: list[str] | None = None, stdio_env: dict[str, str] | None = None,
          ca_file: str | None = None, dry_run: bool = False, issued: str | None = None,
          reachable: str | None = None, out: Callable[[str], None] = print,
          agent: str = "claude-code") -> int:
    """Write (or, dry run, show) the files; the summary goes to ``out``. Shared by
    ``orchestrator-agent setup`` and ``manage.py claude_setup``. ``agent``: Claude Code,
    or another agent kind (``agents.setup``: its own hook and MCP files, and its trust)."""
    from orchestrator_hook import agents
    from orchestrator_hook.agents import setup as other_agent

    missing = [path for path in (runner[0], runner[-1]) if not Path(path).exists()]
    if missing:
        raise SetupError(f"{missing[0]} does not exist: install the client "
                         "(pip install ./client) or pass --hook-command")
    try:
        changes = install.plan(
            project_dir, url=url, token=token, runner=list(runner), task_id=task_id,
            project_id=project_key, mcp_transport=mcp_transport, all_tools=all_tools,
            stdio_command=stdio_command, stdio_env=stdio_env, ca_file=ca_file)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    if agent != agents.CLAUDE_CODE:
        changes = other_agent.agent_changes(agent, project_dir, changes, url=url,
                                            runner=runner, project_id=project_key)
    if dry_run:
        for change in changes:
            if change.changed:
                out(change.diff(mask=token))
        pending = sum(c.changed for c in changes)
        out(f"project {project_key} ({how}; {registered})")
        out(f"dry run: {pending} file(s) would change, nothing written")
        return 0
    install.apply(changes)
    for change in changes:
        state = ("unchanged" if not change.changed
                 else "created" if change.before is None else "updated")
        out(f"{state:9} {change.path}")
    out(f"project {project_key} ({how}; {registered})")
    if issued:
        # Where the token went depends on the agent: Codex and Gemini get neither
        # .claude/settings.local.json nor .mcp.json, so naming them would send the user
        # looking for files that do not exist.
        if agent == agents.CLAUDE_CODE:
            where = (".claude/settings.local.json and .claude/orchestrator/config.json, both "
                     "git-ignored and readable by you only; .mcp.json names "
                     f"${{{install.TOKEN_VARIABLE}}}")
        else:
            where = (".claude/orchestrator/config.json, git-ignored and readable by you "
                     f"only; {other_agent.mcp_file(agent)} names ${install.TOKEN_VARIABLE}")
        out(f"issued API token {issued!r} for project {project_key} (stored in {where})")
    tools = "every tool (/mcp)" if all_tools else "the agent's tools (/mcp/agent)"
    out(f"hooks run {install.hook_command(list(runner), 'EVENT')}; the model is offered "
        f"{tools}; the service is {url}" + (f" ({reachable})" if reachable else ""))
    if agent != agents.CLAUDE_CODE:
        for line in other_agent.trust_lines(agent, project_dir):
            out(line)
    out(f"Done: start {agents.label(agent)} in the project as usual.")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="orchestrator-agent setup",
        description="Set a project directory up for Claude Code with the session "
                    "orchestrator: hooks, .mcp.json and the client's config, merged with "
                    "what is there, over the server's HTTP API.")
    p.add_argument("--project-dir", type=Path, default=Path("."),
                   help="The project Claude Code runs in (default: here)")
    p.add_argument("--url", help="The orchestrator's base URL, a path prefix included "
                                 "(https://host/orchestrator); default: the configured one")
    credential = p.add_mutually_exclusive_group()
    credential.add_argument("--enroll", metavar="CODE",
                            help="An enrollment code from an operator (manage.py "
                                 "create_enrollment, or the console): exchanged for a token "
                                 "of this machine's own, limited to the code's project")
    credential.add_argument("--token", help="An existing API token (scripted installs)")
    p.add_argument("--project", dest="project_key",
                   help="The project this directory belongs to (default: the enrollment "
                        "code's, else derived from the git remote, else the root commit, "
                        "else the directory; registered if new)")
    p.add_argument("--task", dest="task_id", help="The task this project works on (default: "
                   "the task of the git branch's last session, else the active task)")
    p.add_argument("--ca-file", help="Certificates of a private CA for an https URL "
                                     "(default: the system's CA store)")
    p.add_argument("--hook-command", help="An executable the hooks run instead, with the "
                                          "event as its argument (default: this Python with "
                                          "-S running the client's launch.py)")
    p.add_argument("--all-tools", action="store_true",
                   help="Offer the model every tool (/mcp) instead of the agent's (/mcp/agent)")
    p.add_argument("--dry-run", action="store_true",
                   help="Print the changes as a diff and write nothing (an enrollment code "
                        "is not used)")
    p.add_argument("--agent", choices=("claude-code", "codex", "gemini"), default=None,
                   help="The agent to set up (default: the one on PATH: claude, else codex, "
                        "else gemini; claude-code if none)")
    p.add_argument("--check", action="store_true",
                   help="Report on a directory already set up: service, token, project, "
                        "spool, watchdogs, secrets; exit 1 on a problem")
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    project_dir = args.project_dir.expanduser().resolve()
    try:
        if not project_dir.is_dir():
            raise SetupError(f"--project-dir {project_dir}: not a directory")
        if args.agent is None:
            from orchestrator_hook.agents.setup import detect

            args.agent = detect()
        if args.check:
            return run_check(project_dir, agent=args.agent)
        return setup(args, project_dir)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def run_check(project_dir: Path, out: Callable[[str], None] = print,
              agent: str = "claude-code") -> int:
    """The directory's setup, and for another agent than Claude Code its own hooks and
    trust (``agents.setup.check_lines``: a missing trust fails silently in the agent)."""
    from orchestrator_hook import check

    report = check.check(project_dir, claude_hooks=agent == "claude-code")
    for line in report.lines:
        out(line)
    if agent != "claude-code":
        from orchestrator_hook.agents.setup import check_lines

        for ok, line in check_lines(agent, project_dir):
            out(("ok       " if ok else "PROBLEM  ") + line)
            report.problems += not ok
    if report.problems:
        out(f"{report.problems} problem(s); see above")
        return 1
    out("all good")
    return 0


def setup(args: argparse.Namespace, project_dir: Path) -> int:
    configured = read_json(project_dir / STATE_DIR / "config.json", {}) or {}
    configured = configured if isinstance(configured, dict) else {}
    url = (args.url or configured.get("url") or "").rstrip("/")
    if not url:
        raise SetupError("pass --url: the orchestrator's base URL")
    ca_file = args.ca_file or configured.get("caFile") or None
    if ca_file:
        ca_file = str(Path(ca_file).expanduser().resolve())
        if not Path(ca_file).is_file():
            raise SetupError(f"--ca-file {ca_file}: no such file")
    api = Api(url, ca_file)
    warn = lambda text: print(text, file=sys.stderr)  # noqa: E731
    issued = None
    if args.project_key:
        key = key_from(args.project_key)
        if key != args.project_key:
            raise SetupError(f"--project {args.project_key!r}: letters, digits, . _ : - only")
        project = ProjectIdentity(key, key, "option")
    else:
        project = identify(project_dir)
    kept = enrolled_token(api, configured, url) if args.enroll else None
    if kept:
        # Setup run again in an enrolled directory: the token it holds still works, so the
        # code is not spent on a second token for the same machine and directory.
        token, project_key = kept
        registered = "enrolled already (its token still works; the code was not used)"
        project = ProjectIdentity(project_key, project_key, "enrollment")
    elif args.enroll:
        if args.dry_run:
            token, registered = "<token from the enrollment code>", "joined by the code"
        else:
            answer = enroll(api, args.enroll, project_dir)
            token, issued, registered = answer["token"], answer["tokenName"], "enrolled"
            if project.key != answer["projectId"] and project.source == "option":
                warn(f"warning: --project {project.key} ignored: the code is for "
                     f"{answer['projectId']}")
            project = ProjectIdentity(answer["projectId"], answer["projectId"], "enrollment")
    else:
        token = args.token or configured.get("token")
        if not token:
            raise SetupError("no token: pass --enroll CODE (ask an operator for one: manage.py "
                             "create_enrollment --project KEY) or --token TOKEN")
        registered = find_project(api, token, project, args.dry_run)
    if args.task_id and not args.dry_run:
        check_task(api, token, args.task_id, project.key, warn)
    runner = [args.hook_command] if args.hook_command else default_runner()
    return write(project_dir, url=url, token=token, project_key=project.key,
                 how=HOW[project.source], registered=registered, runner=runner,
                 task_id=args.task_id, all_tools=args.all_tools, ca_file=ca_file,
                 dry_run=args.dry_run, issued=issued, reachable=api.healthz(),
                 agent=args.agent)
