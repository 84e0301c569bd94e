from django.apps import AppConfig

PRODUCT_NAME = "Session Orchestrator"


class ConsoleConfig(AppConfig):
    """The operator's console: the admin's overview page and its JSON feed.

    It only reads: every figure comes from the other apps' tables (and Redis's own
    counters); actions on the pages go through those apps' services.
    """

    name = "console"
    verbose_name = "Console"

    def ready(self) -> None:
        from django.contrib import admin

        # The product's name in every page's header and title, not "Django administration";
        # "View site" goes to the console itself (/ redirects here too), never a bare 404.
        admin.site.site_header = PRODUCT_NAME
        admin.site.site_title = PRODUCT_NAME
        admin.site.index_title = "Console"
        admin.site.site_url = "/admin/"
