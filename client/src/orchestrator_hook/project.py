"""Which project a directory belongs to: the repository, found without asking.

One server coordinates a team's repositories; each is a project (its tasks, conflicts,
locks and handoffs never mix with another's). ``manage.py claude_setup`` derives the key
of the directory it sets up, in this order:

1. the git remote (``origin``, else the first one), normalized so that every way of
   writing one repository's URL gives one key: scheme, user, password, port, ``.git``
   suffix and trailing slashes dropped, the host lower-cased (paths keep their case:
   only some hosts ignore it). ``https://me@GitHub.com/acme/app.git`` and
   ``git@github.com:acme/app`` are both ``github.com:acme:app``;
2. else the repository's root commit (``git-root:<sha>``): clones of a repository that
   has no remote yet still agree;
3. else the directory itself (``dir:<path>``).

Two clones or worktrees of one repository therefore land in one project (their edits
conflict, as they should), two repositories never do. A key is a valid project id:
letters, digits, ``. _ : -``, at most 200 characters.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

MAX_KEY_LENGTH = 200
NOT_IN_KEY = re.compile(r"[^A-Za-z0-9._:-]+")
SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!//).*)$")
GIT_TIMEOUT_SECONDS = 10


class ProjectIdentity(NamedTuple):
    key: str
    name: str  # a display name: the repository's or the directory's last path segment
    source: str  # "remote" | "root-commit" | "directory"


def identify(directory: Path) -> ProjectIdentity:
    """The project ``directory`` belongs to (see the module's docstring)."""
    directory = directory.resolve()
    remote = git_remote_url(directory)
    if remote:
        normalized = normalize_remote(remote, directory)
        if normalized:
            return ProjectIdentity(key_from(normalized), last_segment(normalized, directory),
                                   "remote")
    root = root_commit(directory)
    if root:
        return ProjectIdentity(f"git-root:{root}", directory.name or "repository",
                               "root-commit")
    return ProjectIdentity(key_from("dir/" + str(directory).strip("/")),
                           directory.name or "root", "directory")


def normalize_remote(url: str, directory: Path | None = None) -> str | None:
    """``host/path`` of a remote URL (``/abs/path`` for a local one), or None."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()  # hostname drops user, password and port
        path = parts.path
        if parts.scheme == "file" or not host:
            return _local(path, directory)
    else:
        match = SCP_LIKE.match(url)
        if not match or "/" in match.group("host") or os.path.isabs(url) \
                or url.startswith("."):
            return _local(url, directory)
        host, path = match.group("host").lower(), match.group("path")
    path = _strip_repository_path(path)
    return f"{host}/{path}" if path else host or None


def _local(path: str, directory: Path | None) -> str | None:
    """A remote on this machine: its absolute, normalized path."""
    base = directory or Path.cwd()
    resolved = os.path.normpath(os.path.join(base, os.path.expanduser(path)))
    path = _strip_repository_path(resolved)
    return f"local/{path}" if path else None


def _strip_repository_path(path: str) -> str:
    path = path.strip().strip("/")
    if path.endswith(".git"):
        path = path[:-4].rstrip("/")
    return path


def key_from(text: str) -> str:
    """``text`` as a project id: ``/`` becomes ``:``, other characters a key may not hold
    become ``-``; a key over 200 characters keeps its start and a hash of the whole."""
    key = NOT_IN_KEY.sub("-", text.replace("/", ":")).strip("-:.") or "project"
    key = re.sub(r"\.{2,}", ".", key)
    if len(key) > MAX_KEY_LENGTH:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        key = f"{key[:MAX_KEY_LENGTH - 17].rstrip('-:.')}-{digest}"
    return key


def last_segment(normalized: str, directory: Path) -> str:
    return normalized.rstrip("/").rsplit("/", 1)[-1] or directory.name


def _git(directory: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(directory), *args], capture_output=True,
                                text=True, timeout=GIT_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, or it hung
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def git_remote_url(directory: Path) -> str | None:
    """``origin``'s URL, else the first remote's (by name), else None."""
    remotes = (_git(directory, "remote") or "").split()
    if not remotes:
        return None
    name = "origin" if "origin" in remotes else sorted(remotes)[0]
    return _git(directory, "remote", "get-url", name)


def root_commit(directory: Path) -> str | None:
    """The first root commit of HEAD's history (a history with several roots: the
    smallest hash, so every clone picks the same), or None (no git, no commit yet)."""
    roots = (_git(directory, "rev-list", "--max-parents=0", "HEAD") or "").split()
    return min(roots) if roots else None
