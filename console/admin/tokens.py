from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User

from console.admin.base import MissingObjectIs404, ReadOnlyAdmin
from orchestrator.core.models import ApiToken, JobRun


@admin.register(ApiToken)
class ApiTokenAdmin(MissingObjectIs404):
    list_display = ("name", "scope", "prefix", "created_at", "last_used_at", "revoked")
    list_filter = ("scope", "revoked")
    readonly_fields = ("prefix", "created_at", "last_used_at")
    fields = ("name", "scope", "prefix", "revoked", "created_at", "last_used_at")

    def has_add_permission(self, request):
        # Tokens are shown once, at creation: use `manage.py create_api_token NAME`.
        return False


@admin.register(JobRun)
class JobRunAdmin(ReadOnlyAdmin):
    """Runs of the periodic jobs, as record_job_run wrote them (the overview shows the last)."""

    list_display = ("job_name", "outcome", "started_at", "finished_at", "summary")
    list_filter = ("job_name", "outcome")
    readonly_fields = ("job_name", "outcome", "started_at", "finished_at", "summary")


# Django's own user and group pages, with the console's 404 for unknown ids.
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class ConsoleUserAdmin(MissingObjectIs404, UserAdmin):
    pass


@admin.register(Group)
class ConsoleGroupAdmin(MissingObjectIs404, GroupAdmin):
    pass
