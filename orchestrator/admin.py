from django.contrib import admin

from orchestrator.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "scope", "prefix", "created_at", "last_used_at", "revoked")
    list_filter = ("scope", "revoked")
    readonly_fields = ("prefix", "created_at", "last_used_at")
    fields = ("name", "scope", "prefix", "revoked", "created_at", "last_used_at")

    def has_add_permission(self, request):
        # Tokens are shown once, at creation: use `manage.py create_api_token NAME`.
        return False
