"""The Celery app. Periodic jobs are declared by each app's tasks.py (on_after_configure)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orchestrator.settings")

app = Celery("orchestrator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
