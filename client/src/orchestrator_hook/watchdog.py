"""One small process per Claude Code session: liveness follows the process, not the tools.

Claude Code sends nothing while one tool call runs, and builds, test suites and
subagents outlast the crash threshold. The SessionStart hook starts this watchdog,
detached, bound to the Claude Code process (pid and start time). While that process
lives, it sends a heartbeat every ``interval`` seconds the hooks have been quiet, so the
session is never swept as crashed; when the process is gone without a SessionEnd, it
hands over to the hook client's crash report (``cli --crashed``: the tool that was
running, the last request and answer, then the crash itself) within a few seconds.

It must cost nothing while it waits: run as ``python -S watchdog.py ROOT KEY`` it imports
``os``, ``time`` and ``_socket`` only (no ``json``, whose ``re`` alone doubles its
memory), polls ``/proc/PID/stat`` every POLL_SECONDS and builds its one request by hand.
Its settings come from ``ROOT/watchdogs/KEY.conf`` (written by the hook, re-read every
poll: a restarted orchestrator session is picked up); removing that file (SessionEnd)
stops it.
"""

from __future__ import annotations

import os
import time

POLL_SECONDS = 2.0
# A SessionEnd hook that is finishing as the process exits removes the conf meanwhile.
GRACE_SECONDS = 1.0
# The most one heartbeat may take, connect to last byte (plain or TLS).
REQUEST_SECONDS = 10.0
GONE_CODES = (b'"E1600"', b'"E1602"', b'"E1603"')
WATCHDOGS = "watchdogs"


# -- what the hook side calls ------------------------------------------------------------

def paths(root: str, key: str) -> tuple[str, str]:
    folder = os.path.join(root, WATCHDOGS)
    return os.path.join(folder, key + ".conf"), os.path.join(folder, key + ".pid")


def configure(root: str, key: str, values: dict[str, object]) -> None:
    """Write the watchdog's settings (atomically; readable by the owner only)."""
    conf, _ = paths(root, key)
    os.makedirs(os.path.dirname(conf), exist_ok=True)
    temp = f"{conf}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        for name, value in values.items():
            text = str("" if value is None else value)
            if "\n" not in text:
                handle.write(f"{name}={text}\n")
    os.replace(temp, conf)


def forget(root: str, key: str) -> None:
    """Stop the session's watchdog (it exits at its next poll)."""
    conf, _ = paths(root, key)
    try:  # noqa: SIM105 - contextlib is one import more in a process that must stay small
        os.unlink(conf)
    except OSError:
        pass


def cleanup(root: str, key: str) -> None:
    """Forget a watchdog that has exited (its report done): its conf and pid file."""
    forget(root, key)
    _, pid_file = paths(root, key)
    try:  # noqa: SIM105 - see forget
        os.unlink(pid_file)
    except OSError:
        pass


def watching(root: str, key: str) -> int | None:
    """The pid of the watchdog running for ``key``, if one is."""
    _, pid_file = paths(root, key)
    try:
        with open(pid_file, encoding="ascii") as handle:
            pid = int(handle.read().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            cmdline = handle.read()
    except (OSError, ValueError):
        return None
    return pid if b"watchdog.py" in cmdline and key.encode() in cmdline else None


def running(root: str) -> list[int]:
    """Pids of the watchdogs running for this project."""
    folder = os.path.join(root, WATCHDOGS)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = (watching(root, name[:-4]) for name in names if name.endswith(".pid"))
    return [pid for pid in found if pid]


def start(root: str, key: str, python: str) -> bool:
    """Start the watchdog for ``key`` unless one runs; False when none could start.

    ``posix_spawn`` in a new session with /dev/null for stdin, stdout and stderr: Claude
    Code waits for EOF on the hook's stdout, so the watchdog must not hold it, and a
    ``kill -9`` of Claude Code's process group must not take it along.
    """
    if watching(root, key):
        return True
    here = os.path.realpath(__file__)
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    try:
        os.posix_spawn(python, [python, "-S", here, root, key], dict(os.environ),
                       file_actions=actions, setsid=True)
    except OSError:
        return False
    return True


# -- the watchdog itself -----------------------------------------------------------------

def read_conf(path: str) -> dict[str, str] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    return dict(line.split("=", 1) for line in lines if "=" in line)


def start_time(pid: str) -> str | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks), None if no such process
    runs (or only its zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def quiet_for(root: str, key: str) -> float:
    """Seconds since the hooks last sent this session's activity (mtime of its
    ``.flushed`` marker, see lite.activity_file)."""
    try:
        return time.time() - os.stat(os.path.join(root, "activity", key + ".flushed")).st_mtime
    except OSError:
        return float("inf")


def escape(text: str) -> str:
    """A JSON string body for an ASCII id (session ids, project ids)."""
    return "".join(c for c in text if c.isalnum() or c in "-_.:")


def heartbeat(conf: dict[str, str]) -> bytes:
    """POST heartbeat; the response's status line and body ("" when it could not be sent)."""
    import _socket

    url = conf.get("url", "")
    scheme, _, rest = url.partition("://")
    hostport, _, base = rest.partition("/")
    host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
    port_number = int(port) if port.isdigit() else (443 if scheme == "https" else 80)
    body = f'{{"sessionId": "{escape(conf.get("session", ""))}"}}'.encode()
    project = escape(conf.get("project", ""))
    head = (f"POST /{base.strip('/') + '/' if base.strip('/') else ''}api/v1/tools/heartbeat/ "
            f"HTTP/1.1\r\nHost: {hostport}\r\n"
            f"Authorization: Bearer {conf.get('token', '')}\r\n"
            + (f"X-Orchestrator-Project: {project}\r\n" if project else "")
            + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "User-Agent: orchestrator-watchdog\r\nConnection: close\r\n\r\n")
    # One deadline for the whole exchange (connect, TLS handshake, every read): a server
    # that accepts and never answers, or trickles, must not keep the watchdog from the
    # crash report it exists to send.
    deadline = time.monotonic() + REQUEST_SECONDS
    try:
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        sock.settimeout(REQUEST_SECONDS)
        # The hook resolved the host: a lookup here loads the resolver's libraries, which
        # would cost this process more memory than everything else it does.
        sock.connect((conf.get("address") or _socket.gethostbyname(host), port_number))
        if scheme == "https":  # rare: loads ssl (and its memory) only then
            import socket
            import ssl

            # A socket made from a bare fd blocks forever until told otherwise: the
            # timeout is set again before the handshake (wrap_socket keeps it).
            plain = socket.socket(fileno=sock.detach())
            plain.settimeout(max(0.001, deadline - time.monotonic()))
            sock = ssl.create_default_context(cafile=conf.get("ca_file") or None).wrap_socket(
                plain, server_hostname=host)
        answer = exchange(sock, head.encode() + body, deadline)
        sock.close()
    except (OSError, ValueError):
        return b""
    return answer


def exchange(sock, request: bytes, deadline: float) -> bytes:
    """Send ``request`` on a connected socket and read the answer until the server closes,
    all by ``deadline`` (a ``time.monotonic()`` moment): the bound is on the whole exchange,
    not on each read, so a server trickling bytes cannot hold the caller past its budget.
    The hook's transport uses it too; it lives here because this file runs alone, as a
    script that can import nothing of the package."""
    sock.settimeout(max(0.001, deadline - time.monotonic()))
    sock.sendall(request)
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete answer in time")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def session_gone(answer: bytes) -> bool:
    """The orchestrator no longer takes calls for the session (ended, crashed, unknown)."""
    status = answer[9:12]
    return status in (b"404", b"409") and any(code in answer for code in GONE_CODES)


def watch(root: str, key: str) -> None:
    conf_path, pid_path = paths(root, key)
    with open(pid_path, "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    next_beat = 0.0
    while True:
        conf = read_conf(conf_path)
        if conf is None:
            return  # SessionEnd (or a crash already reported): nothing left to watch
        if start_time(conf.get("pid", "")) != conf.get("started"):
            break
        now = time.monotonic()
        if now >= next_beat:
            interval = max(1.0, float(conf.get("interval") or 60))
            # The hooks' own traffic is a heartbeat too: only fill the silences.
            if quiet_for(root, key) >= interval / 2 and session_gone(heartbeat(conf)):
                forget(root, key)
                return
            next_beat = now + interval
        time.sleep(POLL_SECONDS)
    time.sleep(GRACE_SECONDS)
    conf = read_conf(conf_path)
    if conf is None:
        return
    # The process died without a SessionEnd: the full client reports it (it imports what
    # this loop must not). exec: the same pid, no second process.
    launcher = conf.get("launcher", "")
    os.chdir(conf.get("project_dir") or "/")
    os.execv(conf.get("python") or "/usr/bin/python3",
             [conf.get("python") or "python3", "-S", launcher, "--crashed",
              conf.get("claude", key)])


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        return 2
    try:
        watch(argv[1], argv[2])
    finally:
        _, pid_path = paths(argv[1], argv[2])
        try:
            with open(pid_path, encoding="ascii") as handle:
                mine = handle.read().strip() == str(os.getpid())
            if mine:
                os.unlink(pid_path)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv))
