import os
import socket

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # Metric files are named by process id. Containers sharing one metrics volume
    # (docker-compose: web, worker, beat) each number their processes from 1, so the host
    # name goes into the id too. It must be set before any metric exists: hence here.
    from prometheus_client import values

    _host = socket.gethostname()
    values.ValueClass = values.MultiProcessValue(lambda: f"{_host}-{os.getpid()}")

from orchestrator.celery import app as celery_app  # noqa: E402

__all__ = ["celery_app"]
