from django.core.management.base import BaseCommand, CommandError

from foundation.core import enrollment
from foundation.core.errors import OrchestratorError
from foundation.core.tools import ToolContext, call_tool


class Command(BaseCommand):
    help = ("Create an enrollment code for a project: a developer's machine runs "
            "`orchestrator-agent setup --url URL --enroll CODE --project-dir DIR` and gets a "
            "token of its own limited to the project. Prints the code alone on the last line.")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, metavar="KEY",
                            help="The project the machines join")
        parser.add_argument("--uses", type=int, default=enrollment.DEFAULT_USES,
                            help=f"How many machines may use it (default "
                                 f"{enrollment.DEFAULT_USES})")
        parser.add_argument("--expires-minutes", type=int,
                            default=enrollment.DEFAULT_EXPIRES_MINUTES,
                            help=f"Minutes until it stops working (default "
                                 f"{enrollment.DEFAULT_EXPIRES_MINUTES})")

    def handle(self, *args, project: str, uses: int, expires_minutes: int, **options):
        try:
            answer = call_tool("create_enrollment",
                               {"projectId": project, "uses": uses,
                                "expiresMinutes": expires_minutes},
                               ToolContext("command", actor="manage.py create_enrollment"))
        except OrchestratorError as exc:
            # A newcomer's first enrollment is often for a project not yet registered.
            hint = (f" (register it first: manage.py create_project {project})"
                    if exc.code == "E1605" else "")
            raise CommandError(f"{exc.code}: {exc.message}{hint}") from None
        self.stdout.write(f"Enrollment code for project {answer['projectId']}: "
                          f"{answer['uses']} use(s) until {answer['expiresAt']}. It is shown "
                          "only once; on the machine: orchestrator-agent setup --url URL "
                          "--enroll CODE --project-dir DIR")
        self.stdout.write(answer["code"])
