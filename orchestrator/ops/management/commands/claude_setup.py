"""Set a project up for Claude Code: hooks, MCP server entry and the hook client's config.

    manage.py claude_setup --project-dir DIR [--url URL] [--token T | --token-name NAME]
                           [--task TASK_ID] [--mcp-transport http|stdio] [--dry-run]

The file merging lives in ``orchestrator_hook.install`` (the client owns its format);
this command adds what needs the server: issuing a token, checking the task exists.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from contexts.models import TaskContext
from orchestrator.core.models import ApiToken
from orchestrator_hook import install

# What a stdio MCP server needs to reach the same backends as this process.
STDIO_ENV = ("DATABASE_URL", "REDIS_URL", "NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD",
             "NEOMODEL_DATABASE_URL", "ENABLE_NEO4J", "MCP_SCHEMA", "ORCHESTRATOR_CONFIG",
             "DJANGO_SECRET_KEY", "ORCHESTRATOR_DATA_DIR")


class Command(BaseCommand):
    help = ("Write Claude Code hooks (.claude/settings.json), the MCP server entry (.mcp.json) "
            "and the hook client's config into a project, merging with what is there.")

    def add_arguments(self, parser):
        parser.add_argument("--project-dir", required=True, type=Path,
                            help="The project Claude Code runs in")
        parser.add_argument("--url", default=None,
                            help="The orchestrator's base URL (default http://127.0.0.1:$PORT, "
                                 "PORT defaulting to 8000)")
        token = parser.add_mutually_exclusive_group()
        token.add_argument("--token", help="An existing API token")
        token.add_argument("--token-name",
                           help="Issue a new token with this name (default: reuse the token "
                                "already configured in the project, else issue one named "
                                "claude-code:<project dir>)")
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
        parser.add_argument("--dry-run", action="store_true",
                            help="Print the changes as a diff and write nothing")

    def handle(self, *args, project_dir: Path, url: str | None, token: str | None,
               token_name: str | None, task_id: str | None, mcp_transport: str,
               hook_command: str | None, dry_run: bool, **options):
        project_dir = project_dir.expanduser().resolve()
        if not project_dir.is_dir():
            raise CommandError(f"--project-dir {project_dir}: not a directory")
        url = (url or f"http://127.0.0.1:{os.environ.get('PORT') or 8000}").rstrip("/")
        runner = [hook_command] if hook_command else install.launcher_runner(sys.executable)
        missing = [path for path in (runner[0], runner[-1]) if not Path(path).exists()]
        if missing:
            raise CommandError(f"{missing[0]} does not exist: install the package "
                               "(make install) or pass --hook-command")
        if task_id and not TaskContext.objects.filter(task_id=task_id).exists():
            self.stderr.write(f"warning: task {task_id!r} does not exist yet; sessions will "
                              "choose a task themselves until it does")
        token, issued = self._token(project_dir, token, token_name, dry_run)
        try:
            changes = install.plan(
                project_dir, url=url, token=token, runner=runner, task_id=task_id,
                mcp_transport=mcp_transport,
                stdio_command=[sys.executable, str(Path(settings.BASE_DIR) / "manage.py"),
                               "mcp_stdio"],
                stdio_env={k: os.environ[k] for k in STDIO_ENV if os.environ.get(k)})
        except ValueError as exc:
            raise CommandError(str(exc)) from None

        if dry_run:
            for change in changes:
                if change.changed:
                    self.stdout.write(change.diff(mask=token))
            pending = sum(c.changed for c in changes)
            self.stdout.write(f"dry run: {pending} file(s) would change, nothing written")
            return
        install.apply(changes)
        for change in changes:
            state = ("unchanged" if not change.changed
                     else "created" if change.before is None else "updated")
            self.stdout.write(f"{state:9} {change.path}")
        if issued:
            self.stdout.write(f"issued API token {issued!r} (stored in the project's "
                              ".mcp.json and .claude/orchestrator/config.json)")
        self.stdout.write(f"hooks run {install.hook_command(runner, 'EVENT')}; the service "
                          f"is {url} ({self._reachable(url)})")
        self.stdout.write("Done: start Claude Code in the project as usual.")

    def _token(self, project_dir: Path, token: str | None, token_name: str | None,
               dry_run: bool) -> tuple[str, str | None]:
        if token:
            return token, None
        if not token_name:
            existing = install.configured_token(project_dir)
            if existing:
                return existing, None
            token_name = f"claude-code:{project_dir}"
        if ApiToken.objects.filter(name=token_name).exists():
            raise CommandError(f"a token named {token_name!r} already exists; its secret is "
                               "not stored: pass --token, or another --token-name")
        if dry_run:
            return "<new token>", token_name
        _, raw = ApiToken.issue(token_name)
        return raw, token_name

    @staticmethod
    def _reachable(url: str) -> str:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                return f"answering, /healthz {response.status}"
        except urllib.error.HTTPError as exc:
            return f"answering, /healthz {exc.code}"
        except OSError:
            return "not answering now: start it with `make run`; hooks spool until it is up"
