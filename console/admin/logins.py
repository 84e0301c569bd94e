"""django-axes' pages (Axes → Access attempts, Access logs, Access failure logs), with the
console's 404 for unknown ids. Deleting an access attempt unlocks that username and
address at once (as ``manage.py axes_reset_username`` / ``axes_reset_ip`` do)."""

# Registers axes' own admin classes now: this module runs before axes' (INSTALLED_APPS
# order), and is what replaces them.
from axes import admin as axes_admin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin

from console.admin.base import MissingObjectIs404

for model in (AccessAttempt, AccessLog, AccessFailureLog):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


@admin.register(AccessAttempt)
class LoginAttemptAdmin(MissingObjectIs404, axes_admin.AccessAttemptAdmin):
    pass


@admin.register(AccessLog)
class LoginLogAdmin(MissingObjectIs404, axes_admin.AccessLogAdmin):
    pass


@admin.register(AccessFailureLog)
class LoginFailureLogAdmin(MissingObjectIs404, axes_admin.AccessFailureLogAdmin):
    pass
