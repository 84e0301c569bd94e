"""Files only their owner may read: the secret key, the embedded servers' passwords and the
files that carry them (servers.env, server configs).

The rule: a secret is created 0600 in one step (``O_CREAT | O_EXCL`` with the mode, never
written first and narrowed after), its directory is 0700, and a file or directory found
looser (made by an older version) is narrowed before it is read. Standard library only:
the settings module uses it before Django is set up.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

FILE_MODE = 0o600
DIR_MODE = 0o700
# What makes a directory not private: its group may read or write, or others anything. A
# lone group traverse bit (0710) is kept: as root, the launcher lets the embedded
# Postgres's own group (and no one else) pass through the data dir to its files.
DIR_OPEN = 0o067


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) 0700; narrow it to 0700 if it lets others in."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if stat.S_IMODE(path.stat().st_mode) & DIR_OPEN:
        path.chmod(DIR_MODE)
    return path


def tighten(path: Path) -> None:
    """Make an existing file 0600 if any group or other bit is set."""
    if stat.S_IMODE(path.stat().st_mode) & ~FILE_MODE:
        path.chmod(FILE_MODE)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, readable by its owner only, atomically: a temporary
    file made 0600 at creation, then renamed over the old one (whatever its mode was)."""
    private_dir(path.parent)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def read_secret(path: Path) -> str | None:
    """The secret stored in ``path`` (narrowed to 0600 first), or None if there is none."""
    try:
        tighten(path)
        value = path.read_text().strip()
    except FileNotFoundError:
        return None
    return value or None


def secret(path: Path, nbytes: int = 32) -> str:
    """The secret stored in ``path``, created (random, URL-safe, 0600) if missing.

    Two processes starting at once agree: the loser of the O_EXCL race reads the winner's.
    """
    private_dir(path.parent)
    found = read_secret(path)
    if found:
        return found
    value = secrets.token_urlsafe(nbytes)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:  # an empty file (a crash mid-write) or another process's
        found = read_secret(path)
        if found:
            return found
        path.unlink(missing_ok=True)
        return secret(path, nbytes)
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
        handle.flush()
        os.fsync(handle.fileno())
    return value


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, for logs and terminals."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparsable URL>"
    if not password:
        return url
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostinfo}"))
