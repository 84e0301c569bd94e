import os
import socket

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # Metric files are named by process id. Containers sharing one metrics volume
    # (docker-compose: web, worker, beat) each number their processes from 1, so the host
    # name goes into the id too. It must be set before any metric exists: hence here.
    from prometheus_client import values

    _host = socket.gethostname()
    # Asked at every metric update (to notice a fork): kept as a string, renewed in a
    # forked child, rather than a getpid() and a format per update (~3 % of a tool call's
    # CPU under load).
    _process = [f"{_host}-{os.getpid()}"]
    os.register_at_fork(
        after_in_child=lambda: _process.__setitem__(0, f"{_host}-{os.getpid()}"))
    values.ValueClass = values.MultiProcessValue(lambda: _process[0])

from orchestrator.celery import app as celery_app  # noqa: E402

__all__ = ["celery_app"]
