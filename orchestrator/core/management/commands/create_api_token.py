from django.core.management.base import BaseCommand, CommandError

from orchestrator.core.models import ApiToken, TokenScope


class Command(BaseCommand):
    help = ("Create an API token for REST and MCP clients; prints the token alone on the last "
            "line. --scope read (read-only tools), write (default: every tool, own sessions) "
            "or admin (also other tokens' sessions).")

    def add_arguments(self, parser):
        parser.add_argument("name", help="A unique name for the client using this token")
        parser.add_argument("--scope", choices=TokenScope.values, default=TokenScope.WRITE,
                            help="What the token may do (default: write)")

    def handle(self, *args, name: str, scope: str, **options):
        if ApiToken.objects.filter(name=name).exists():
            raise CommandError(f"a token named {name!r} already exists")
        token, raw = ApiToken.issue(name, scope)
        self.stdout.write(f"Created {token.scope} token {token.name!r} (prefix {token.prefix}). "
                          "It is shown only once; store it now:")
        self.stdout.write(raw)
