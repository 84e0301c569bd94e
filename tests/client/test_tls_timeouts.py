"""An HTTPS orchestrator that accepts a connection, completes the TLS handshake and then
never answers must not hold the hook client: the watchdog's heartbeat gives up after its
REQUEST_SECONDS (or the crash it exists to report is never sent) and a hook's call after
its own budget. The server is a real TLS listener with a self-signed certificate the
clients trust through SSL_CERT_FILE.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from orchestrator_hook import transport, watchdog

HOOK_DIR = Path(watchdog.__file__).resolve().parent


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def silent_tls_server(tmp_path):
    """(port, cert file) of a listener that shakes hands and then says nothing."""
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    handshakes = threading.Event()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed by the fixture
            try:
                held.append(context.wrap_socket(conn, server_side=True))
                handshakes.set()
            except (OSError, ssl.SSLError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], cert, handshakes
    listener.close()
    for conn in held:
        conn.close()


def test_the_watchdog_heartbeat_gives_up_on_a_silent_https_server(silent_tls_server):
    port, cert, handshakes = silent_tls_server
    conf = {"url": f"https://localhost:{port}", "address": "127.0.0.1", "token": "t",
            "session": "s1"}
    # As the watchdog runs: its own process, python -S, the file alone.
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import watchdog; "
              f"sys.stdout.write(repr(watchdog.heartbeat({conf!r})))")
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-S", "-c", script, str(HOOK_DIR)],
                            env={**os.environ, "SSL_CERT_FILE": str(cert)},
                            capture_output=True, text=True, timeout=watchdog.REQUEST_SECONDS + 20)
    elapsed = time.monotonic() - started
    assert handshakes.is_set(), result.stderr  # the TLS part worked: the silence is the test
    assert result.stdout == "b''", result.stderr
    assert watchdog.REQUEST_SECONDS - 0.5 < elapsed < watchdog.REQUEST_SECONDS + 3, elapsed


def test_a_hook_call_gives_up_on_a_silent_https_server(silent_tls_server, monkeypatch):
    port, cert, handshakes = silent_tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    client = transport.Client(f"https://localhost:{port}", "t", connect_timeout=2)
    started = time.monotonic()
    with pytest.raises(transport.ServiceUnavailable):  # spooled by the hook, sent later
        client.call("heartbeat", {"sessionId": "s1"}, timeout=1.5)
    assert handshakes.is_set()
    assert time.monotonic() - started < 2.5
