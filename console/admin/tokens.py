from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User

from console.admin.base import MissingObjectIs404, ReadOnlyAdmin
from orchestrator.core import auth
from orchestrator.core.models import ApiToken, JobRun


def revocation_delay() -> str:
    """How long a revoked token may still work: each server process keeps the tokens it
    saw valid for auth.TOKEN_CACHE_SECONDS and only this process forgets at once."""
    seconds = auth.TOKEN_CACHE_SECONDS
    return f"{seconds:g} second" + ("" if seconds == 1 else "s")


@admin.register(ApiToken)
class ApiTokenAdmin(MissingObjectIs404):
    list_display = ("name", "scope", "prefix", "created_at", "last_used_at", "revoked")
    list_filter = ("scope", "revoked")
    readonly_fields = ("prefix", "created_at", "last_used_at")
    fields = ("name", "scope", "prefix", "revoked", "created_at", "last_used_at")
    actions = ["revoke"]

    def has_add_permission(self, request):
        # Tokens are shown once, at creation: use `manage.py create_api_token NAME`.
        return False

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["help_texts"] = {"revoked": (
            f"A revoked token is refused at once by this server process and within "
            f"{revocation_delay()} by the others (web workers keep valid tokens that long).")}
        return super().get_form(request, obj, change, **kwargs)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "revoked" in form.changed_data and obj.revoked:
            self.warn_revocation_delay(request, [obj.name])

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        names = []
        for token in queryset.filter(revoked=False):
            token.revoked = True
            token.save(update_fields=["revoked"])  # post_save forgets it in this process
            names.append(token.name)
        if names:
            self.warn_revocation_delay(request, names)

    def warn_revocation_delay(self, request, names: list[str]) -> None:
        self.message_user(
            request,
            f"Revoked {', '.join(names)}: refused now by this process, but other server "
            f"processes may still accept it for up to {revocation_delay()} (their token cache).",
            messages.WARNING)


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
