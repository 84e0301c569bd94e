from django.core.management.base import BaseCommand, CommandError

from foundation.core.models import ApiToken, Project, TokenScope


class Command(BaseCommand):
    help = ("Create an API token for REST and MCP clients; prints the token alone on the last "
            "line. --scope read (read-only tools), write (default: every tool, own sessions) "
            "or admin (also other tokens' sessions); metrics: only GET /metrics, for a "
            "Prometheus scraper. --project KEY (repeatable) limits it to those projects; "
            "without it the token reaches every project.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="A unique name for the client using this token")
        parser.add_argument("--scope", choices=TokenScope.values, default=TokenScope.WRITE,
                            help="What the token may do (default: write)")
        parser.add_argument("--project", action="append", dest="projects", metavar="KEY",
                            default=[], help="A project the token may reach (repeatable; "
                                             "default: every project)")

    def handle(self, *args, name: str, scope: str, projects: list[str], **options):
        if scope == TokenScope.METRICS and projects:
            # /metrics counts every project: a token limited to some would be refused there.
            raise CommandError("a metrics token reads every project's figures: no --project")
        if ApiToken.objects.filter(name=name).exists():
            raise CommandError(f"a token named {name!r} already exists")
        unknown = sorted(set(projects) - set(Project.objects.filter(pk__in=projects)
                                             .values_list("id", flat=True)))
        if unknown:
            raise CommandError(f"no such project: {', '.join(unknown)} "
                               "(create it with manage.py create_project)")
        token, raw = ApiToken.issue(name, scope, projects)
        reach = (f"projects {', '.join(token.projects)}" if token.projects
                 else "every project")
        self.stdout.write(f"Created {token.scope} token {token.name!r} for {reach} (prefix "
                          f"{token.prefix}). It is shown only once; store it now:")
        self.stdout.write(raw)
