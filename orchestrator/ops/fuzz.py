"""`make fuzz`: schemathesis over the whole OpenAPI document of a real running server.

    python -m orchestrator.ops.launcher --temp -- python -m orchestrator.ops.fuzz [--max-time S]

Runs as orchestrator.ops.launcher's command (fresh embedded Postgres, Redis and Bolt):
migrates, issues an admin-scope API token, starts the production web server
(orchestrator.ops.webserver: uvicorn, ASGI, the tool fast lane) on a free port and runs
``schemathesis run`` against ``/api/schema/`` with the token. Every operation gets positive
and negative cases from the examples, coverage and fuzzing phases with a fixed seed and no
example database, so two runs send the same requests. The run is bounded by
``--max-examples`` per operation and by ``--max-time`` (schemathesis stops there).

Checks: every answer is not a server error and matches its documented status codes,
content type, headers and body schema; documented-invalid input is refused
(negative_data_rejection). Left out: positive_data_acceptance (a valid-by-schema request
can still be refused by a business rule: unknown session, wrong owner, missing task),
missing_required_header/unsupported_method/allow_header_conformance (Django answers 405
without documenting it per operation, which is not a client contract), ignored_auth
(tests/foundation/test_tokens.py checks the 401s), and the stateful checks
(use_after_free, ensure_resource_availability, object_level_authorization need links
between operations the document does not declare).
Reports (JUnit, NDJSON) and the server's log go to --report-dir. Exit code: schemathesis'.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # where manage.py is
PY = sys.executable
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_headers_conformance,response_schema_conformance,negative_data_rejection")
HEALTH_TIMEOUT = 120.0


def say(message: str) -> None:
    print(f"[fuzz] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(*args: str) -> str:
    return subprocess.run([PY, str(ROOT / "manage.py"), *args], cwd=ROOT, check=True,
                          stdout=subprocess.PIPE, text=True).stdout


def wait_for(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # 503 "degraded" is still a server answering
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"[fuzz] {url} did not answer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-time", type=int, default=600,
                        help="seconds schemathesis may run (default 600)")
    parser.add_argument("--max-examples", type=int, default=20,
                        help="generated cases per operation and phase (default 20)")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--report-dir", default=str(ROOT / "schemathesis-report"))
    parser.add_argument("schemathesis_args", nargs="*",
                        help="more `schemathesis run` options, after --")
    args = parser.parse_args()

    manage("migrate", "--noinput", "-v", "0")
    token = manage("create_api_token", f"fuzz-{os.getpid()}-{time.time_ns()}",
                   "--scope", "admin").strip().splitlines()[-1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    report_dir = Path(args.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    server_log = (report_dir / "server.log").open("wb")
    # One token sends every case, faster than one agent would: under the default per-token
    # limit many answers would be 429s (documented, but no test of the operation).
    env = {**os.environ, "API_RATE_LIMIT": os.environ.get("FUZZ_RATE_LIMIT", "100000/minute")}
    server = subprocess.Popen([PY, "-m", "orchestrator.ops.webserver", "--host", "127.0.0.1",
                               "--port", str(port), "--workers", "1"], cwd=ROOT, env=env,
                              stdout=server_log, stderr=subprocess.STDOUT)
    try:
        wait_for(f"{base}/healthz", server)
        say(f"server at {base} (log: {server_log.name}); schemathesis for at most "
            f"{args.max_time}s")
        # No crash files in .schemathesis/ of the checkout: the reports are the record.
        config = report_dir / "schemathesis.toml"
        config.write_text("[cache]\nenabled = false\n")
        command = [
            str(Path(PY).with_name("schemathesis")), "--config-file", str(config),
            "run", f"{base}/api/schema/?format=json",
            "--url", base, "-H", f"Authorization: Bearer {token}",
            "--checks", CHECKS, "--mode", "all", "--phases", "examples,coverage,fuzzing",
            "--max-examples", str(args.max_examples), "--seed", str(args.seed),
            "--generation-database", "none", "--workers", "1", "--continue-on-failure",
            "--max-time", str(args.max_time), "--request-timeout", "30",
            "--suppress-health-check", "all", "--no-color", "--output-sanitize", "true",
            "--report", "junit,ndjson", "--report-dir", args.report_dir,
            *args.schemathesis_args,
        ]
        return subprocess.call(command, cwd=ROOT)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server_log.close()


if __name__ == "__main__":
    sys.exit(main())
