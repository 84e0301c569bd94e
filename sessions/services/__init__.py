"""Session services: the only writers of sessions, their history, events and handoffs.

Tools, admin actions, management commands and Celery tasks all call these functions.
"""
