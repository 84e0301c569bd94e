"""Conflict services: detection, storage (deduplicated), reporting and resolution.

Every way in (tools, admin console, management command, Celery beat) calls these.
"""
