"""Set a project up for Claude Code: hooks, MCP server entry and the hook client's config.

    manage.py claude_setup --project-dir DIR [--project KEY] [--url URL]
                           [--token T | --token-name NAME] [--task TASK_ID]
                           [--mcp-transport http|stdio] [--all-tools] [--dry-run]
    manage.py claude_setup --project-dir DIR --check

The one-machine path: a thin wrapper over the agent client's ``orchestrator-agent setup``
(``orchestrator_hook.agent_setup``), which writes the files (``orchestrator_hook.install``),
finds the directory's project (``orchestrator_hook.project``: the git remote, else the root
commit, else the directory) and checks a setup (``orchestrator_hook.check``). What this
command adds needs the server's database instead of its HTTP API: registering the
project, issuing a token limited to it, checking the task exists, the stdio MCP
transport, and finding the service: ``--url``, else the URL a running ``make run`` of this
checkout recorded, else ``$PORT``, else port 8000.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from contexts.models import TaskContext
from foundation.core.auth import authenticate_header
from foundation.core.errors import OrchestratorError
from foundation.core.models import ApiToken, Project
from foundation.core.projects import check_project_id
from foundation.core.tools import ToolContext, call_tool
from orchestrator.ops.localservers import running_service
from orchestrator_hook import agent_setup, install
from orchestrator_hook import check as client_check
from orchestrator_hook.agents.setup import detect as detect_agent
from orchestrator_hook.project import ProjectIdentity, identify

# What a stdio MCP server needs to reach the same backends as this process.
STDIO_ENV = ("DATABASE_URL", "REDIS_URL", "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD",
             "NEOMODEL_DATABASE_URL", "ENABLE_NEO4J", "MCP_SCHEMA", "ORCHESTRATOR_CONFIG",
             "DJANGO_SECRET_KEY", "ORCHESTRATOR_DATA_DIR")


def service_url(url: str | None) -> tuple[str, str]:
    """(the orchestrator's base URL, where it came from)."""
    if url:
        return url.rstrip("/"), "from --url"
    data_dir = Path(os.environ.get("ORCHESTRATOR_DATA_DIR") or Path(settings.BASE_DIR) / ".data")
    running = running_service(data_dir)
    if running:
        return running.rstrip("/"), "where `make run` serves"
    if os.environ.get("PORT"):
        return f"http://127.0.0.1:{os.environ['PORT']}", "from $PORT"
    return "http://127.0.0.1:8000", "the default"


class Command(BaseCommand):
    help = ("Write Claude Code hooks (.claude/settings.json), the MCP server entry (.mcp.json) "
            "and the hook client's config into a project, merging with what is there.")

    def add_arguments(self, parser):
        parser.add_argument("--project-dir", required=True, type=Path,
                            help="The project Claude Code runs in")
        parser.add_argument("--project", dest="project_key", default=None,
                            help="The project this directory belongs to (default: derived "
                                 "from the git remote, else the root commit, else the "
                                 "directory; registered if new)")
        parser.add_argument("--url", default=None,
                            help="The orchestrator's base URL, e.g. a remote server's (default: "
                                 "where a running `make run` of this checkout serves, else "
                                 "http://127.0.0.1:$PORT, PORT defaulting to 8000)")
        token = parser.add_mutually_exclusive_group()
        token.add_argument("--token", help="An existing API token")
        token.add_argument("--token-name",
                           help="Issue a new token with this name, limited to the project "
                                "(default: reuse the token already configured in the "
                                "directory, else issue one named claude-code:<project dir>)")
        parser.add_argument("--task", dest="task_id",
                            help="The task this project works on (default: the task of the "
                                 "git branch's last session, else the active task)")
        parser.add_argument("--mcp-transport", choices=("http", "stdio"), default="http",
                            help="http: the running server's /mcp (default); stdio: Claude "
                                 "Code starts `manage.py mcp_stdio` itself")
        parser.add_argument("--hook-command", default=None,
                            help="An executable the hooks run instead, with the event as its "
                                 "argument, e.g. the orchestrator-hook script (default: this "
                                 "Python with -S running orchestrator_hook/launch.py, which "
                                 "starts faster)")
        parser.add_argument("--all-tools", action="store_true",
                            help="Offer the model every tool (/mcp) instead of the ones a model "
                                 "calls itself (/mcp/agent); the hooks' tools included")
        parser.add_argument("--dry-run", action="store_true",
                            help="Print the changes as a diff and write nothing")
        parser.add_argument("--agent", choices=("claude-code", "codex", "gemini"), default=None,
                            help="The agent to set up (default: the one on PATH: claude, "
                                 "else codex, else gemini; claude-code if none)")
        parser.add_argument("--check", action="store_true",
                            help="Report on a directory already set up: the service, the "
                                 "token, the project, the spool, the watchdogs, the secrets; "
                                 "exit 1 on a problem")

    def handle(self, *args, project_dir: Path, project_key: str | None, url: str | None,
               token: str | None, token_name: str | None, task_id: str | None,
               mcp_transport: str, hook_command: str | None, dry_run: bool, all_tools: bool,
               check: bool, agent: str | None = None, **options):
        project_dir = project_dir.expanduser().resolve()
        if not project_dir.is_dir():
            raise CommandError(f"--project-dir {project_dir}: not a directory")
        if check:
            return self._check(project_dir, agent or detect_agent())
        project = self._project(project_dir, project_key)
        url, url_source = service_url(url)
        runner = [hook_command] if hook_command else agent_setup.default_runner()
        task_project = TaskContext.objects.filter(task_id=task_id).values_list(
            "project_id", flat=True).first() if task_id else None
        if task_id and task_project is None:
            self.stderr.write(f"warning: task {task_id!r} does not exist yet; sessions will "
                              "choose a task themselves until it does")
        elif task_project is not None and task_project != project.key:
            raise CommandError(f"task {task_id!r} is in project {task_project!r}, this "
                               f"directory in {project.key!r}: pass --project {task_project} "
                               "or another task")
        missing = [path for path in (runner[0], runner[-1]) if not Path(path).exists()]
        if missing:
            raise CommandError(f"{missing[0]} does not exist: install the package "
                               "(make install) or pass --hook-command")
        registered = self._register(project, dry_run)
        token, issued = self._token(project_dir, project.key, token, token_name, dry_run)
        self._warn_literal_secrets(project_dir)
        try:
            agent_setup.write(
                project_dir, url=url, token=token, project_key=project.key,
                how=agent_setup.HOW[project.source], registered=registered, runner=runner,
                task_id=task_id, mcp_transport=mcp_transport, all_tools=all_tools,
                stdio_command=[sys.executable, str(Path(settings.BASE_DIR) / "manage.py"),
                               "mcp_stdio", "--project", project.key],
                stdio_env={k: os.environ[k] for k in STDIO_ENV if os.environ.get(k)},
                dry_run=dry_run, issued=issued,
                reachable=None if dry_run else f"{url_source}, {self._reachable(url)}",
                out=self.stdout.write, agent=agent or detect_agent())
        except agent_setup.SetupError as exc:
            raise CommandError(str(exc)) from None

    @staticmethod
    def _project(project_dir: Path, project_key: str | None) -> ProjectIdentity:
        if project_key is None:
            return identify(project_dir)
        try:
            check_project_id(project_key, field="--project")
        except OrchestratorError as exc:
            raise CommandError(exc.message) from None
        return ProjectIdentity(project_key, project_key, "option")

    @staticmethod
    def _register(project: ProjectIdentity, dry_run: bool) -> str:
        """The project on the server: registered now, or there already."""
        if Project.objects.filter(pk=project.key).exists():
            return "registered already"
        if dry_run:
            return "would be registered"
        try:
            call_tool("create_project", {"projectId": project.key, "name": project.name[:500]},
                      ToolContext("command", actor="manage.py claude_setup"))
        except OrchestratorError as exc:
            if exc.code != "E1606":  # made meanwhile by a setup of another clone: fine
                raise CommandError(f"{exc.code}: {exc.message}") from None
            return "registered already"
        return "registered now"

    def _token(self, project_dir: Path, project_key: str, token: str | None,
               token_name: str | None, dry_run: bool) -> tuple[str, str | None]:
        what = "--token"
        if not token and not token_name:
            token, what = install.configured_token(project_dir), "the configured token"
        if token:
            if not self._reaches(token, project_key, what):
                self.stderr.write("warning: the token is unknown to this server's database "
                                  "(or revoked): its calls will be refused here")
            return token, None
        token_name = token_name or f"claude-code:{project_dir}"
        if ApiToken.objects.filter(name=token_name).exists():
            raise CommandError(f"a token named {token_name!r} already exists; its secret is "
                               "not stored: pass --token, or another --token-name")
        if dry_run:
            return "<new token>", token_name
        # Limited to the project: an agent of this repository can neither read nor change
        # another repository's tasks.
        _, raw = ApiToken.issue(token_name, projects=[project_key])
        return raw, token_name

    @staticmethod
    def _reaches(token: str, project_key: str, what: str) -> bool:
        """False when ``token`` is no valid token here; refused when it is limited to other
        projects (every call it made for this directory would fail)."""
        principal = authenticate_header(f"Bearer {token}")
        if principal is None:
            return False
        if principal.projects is not None and project_key not in principal.projects:
            raise CommandError(f"{what} is limited to {sorted(principal.projects)}, not "
                               f"{project_key}: pass --token-name to issue one for this "
                               "project")
        return True

    def _warn_literal_secrets(self, project_dir: Path) -> None:
        """An .mcp.json that holds a token or password in plain text: it is committed with
        the file (our own entry is rewritten without it; others are not ours to change)."""
        path = project_dir / ".mcp.json"
        config = install.read_json(path, {})
        found = install.literal_secrets(config if isinstance(config, dict) else {})
        if not found:
            return
        tracked = client_check.tracked_by_git(project_dir, path)
        self.stderr.write(
            f"warning: {path} holds secrets in plain text ({'; '.join(found)})"
            + (": the file is tracked by git, so they are in its history; revoke them"
               if tracked else ": keep it out of git or move them to ${VARIABLE}s")
            + (f" (the {install.MCP_SERVER_NAME} entry is rewritten without its token)"
               if any(f.startswith(f"{install.MCP_SERVER_NAME}:") for f in found) else ""))

    def _check(self, project_dir: Path, agent: str = "claude-code") -> None:
        lines: list[str] = []
        if agent_setup.run_check(project_dir, out=lines.append, agent=agent):
            for line in lines[:-1]:
                self.stdout.write(line)
            raise CommandError(lines[-1])
        for line in lines[:-1]:
            self.stdout.write(line)
        self.stdout.write(self.style.SUCCESS("all good"))

    @staticmethod
    def _reachable(url: str) -> str:
        answer = agent_setup.Api(url).healthz()
        return answer.replace("hooks spool", "start it with `make run`; hooks spool")
