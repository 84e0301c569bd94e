#!/usr/bin/env python
import os
import sys
from pathlib import Path


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orchestrator.settings")
    from orchestrator.ops.localservers import adopt_running_launcher

    # `make run --data-dir DIR` writes DIR/servers.env; the banner it prints says
    # ORCHESTRATOR_DATA_DIR=DIR so a command typed in another terminal finds those servers.
    checkout = Path(__file__).resolve().parent
    adopt_running_launcher(Path(os.environ.get("ORCHESTRATOR_DATA_DIR") or checkout / ".data"))
    import django
    from django.core.management import execute_from_command_line

    django.setup()  # configures tracing (OTEL_EXPORTER_OTLP_ENDPOINT) before the span opens
    from foundation.observability.tracing import command_span

    with command_span(sys.argv[1] if len(sys.argv) > 1 else "help"):
        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
