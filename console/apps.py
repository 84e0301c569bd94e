from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The operator's console: the admin's overview page and its JSON feed.

    It only reads: every figure comes from the other apps' tables (and Redis's own
    counters); actions on the pages go through those apps' services.
    """

    name = "console"
    verbose_name = "Console"
