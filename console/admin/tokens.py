from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User

from console.admin.base import MissingObjectIs404, ReadOnlyAdmin, run_tool
from foundation.core import auth, enrollment
from foundation.core.models import ApiToken, EnrollmentCode, JobRun, hash_token


def revocation_delay() -> str:
    """How long a revoked token may still work: each server process keeps the tokens it
    saw valid for auth.TOKEN_CACHE_SECONDS and only this process forgets at once."""
    seconds = auth.TOKEN_CACHE_SECONDS
    return f"{seconds:g} second" + ("" if seconds == 1 else "s")


@admin.register(ApiToken)
class ApiTokenAdmin(MissingObjectIs404):
    # An enrolled machine's token is named agent:<machine>:<directory>, limited to its project.
    list_display = ("name", "scope", "prefix", "reach", "created_at", "last_used_at", "revoked")
    list_filter = ("scope", "revoked")
    search_fields = ("name",)
    readonly_fields = ("prefix", "reach", "created_at", "last_used_at")
    fields = ("name", "scope", "prefix", "reach", "revoked", "created_at", "last_used_at")

    @admin.display(description="projects")
    def reach(self, obj: ApiToken) -> str:
        return ", ".join(obj.projects) or "every project"
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


class EnrollmentForm(forms.ModelForm):
    expires_minutes = forms.IntegerField(
        min_value=1, max_value=enrollment.MAX_EXPIRES_MINUTES,
        initial=enrollment.DEFAULT_EXPIRES_MINUTES, help_text="Minutes until it stops working")

    class Meta:
        model = EnrollmentCode
        fields = ("project", "max_uses")
        help_texts = {"max_uses": "How many machines may join with it"}


@admin.register(EnrollmentCode)
class EnrollmentCodeAdmin(MissingObjectIs404):
    """Codes a developer's machine joins a project with (``orchestrator-agent setup
    --enroll CODE``). Adding one calls create_enrollment and shows the code once; deleting
    one withdraws it (the tokens it issued stay, revoke them under Tokens)."""

    list_display = ("prefix", "project", "uses", "max_uses", "expires_at", "last_used_at",
                    "created_by", "tokens")
    list_filter = ("project",)
    readonly_fields = ("prefix", "project", "uses", "max_uses", "expires_at", "created_at",
                       "created_by", "last_used_at", "tokens")

    @admin.display(description="tokens issued")
    def tokens(self, obj: EnrollmentCode) -> str:
        return ", ".join(obj.issued) or "none yet"

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = EnrollmentForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request, obj=None):
        return ("project", "max_uses", "expires_minutes") if obj is None \
            else self.readonly_fields

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            return
        answer = run_tool(request, "create_enrollment", {
            "projectId": obj.project_id, "uses": form.cleaned_data["max_uses"],
            "expiresMinutes": form.cleaned_data["expires_minutes"]})
        saved = EnrollmentCode.objects.get(code_hash=hash_token(answer["code"]))
        obj.pk, obj.prefix = saved.pk, saved.prefix
        self.message_user(
            request,
            f"Enrollment code for {answer['projectId']} (shown only now; {answer['uses']} "
            f"use(s) until {answer['expiresAt']}): {answer['code']}  — on the machine: "
            f"orchestrator-agent setup --url URL --enroll {answer['code']} --project-dir DIR",
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
