from django.core.management.base import BaseCommand, CommandError

from orchestrator.models import ApiToken


class Command(BaseCommand):
    help = "Create an API token for REST and MCP clients; prints the token alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("name", help="A unique name for the client using this token")

    def handle(self, *args, name: str, **options):
        if ApiToken.objects.filter(name=name).exists():
            raise CommandError(f"a token named {name!r} already exists")
        token, raw = ApiToken.issue(name)
        self.stdout.write(f"Created token {token.name!r} (prefix {token.prefix}). "
                          "It is shown only once; store it now:")
        self.stdout.write(raw)
