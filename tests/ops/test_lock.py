"""Reproducible installs: requirements/*.lock (``make lock``) hold every pin of pyproject.toml
with hashes; the image installs the production lock, which has no development server."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LOCK_LINE = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", re.M)
# Which extras each lock resolves (the Makefile's lock target).
LOCKS = {"prod": [], "dev": ["dev", "docs", "servers"],
         "bench": ["dev", "docs", "servers", "bench"]}
LOCAL = {"session-orchestrator-agent"}  # the agent client: installed from client/


def locked(name: str) -> dict[str, set[str]]:
    """Package -> its locked versions: one, or one per Python where the resolution forks
    (a universal lock: ``deprecated`` differs below and from 3.12)."""
    text = (ROOT / "requirements" / f"{name}.lock").read_text()
    versions: dict[str, set[str]] = {}
    for package, version in LOCK_LINE.findall(text):
        versions.setdefault(canonicalize_name(package), set()).add(version)
    return versions


def pins(extras: list[str]) -> dict[str, str]:
    requirements = [Requirement(line) for line in PYPROJECT["dependencies"]]
    for extra in extras:
        requirements += [Requirement(line) for line in PYPROJECT["optional-dependencies"][extra]]
    found = {}
    for requirement in requirements:
        [spec] = requirement.specifier  # every direct dependency is pinned with ==
        assert spec.operator == "==", requirement
        found[canonicalize_name(requirement.name)] = spec.version
    return {name: version for name, version in found.items() if name not in LOCAL}


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_each_lock_holds_every_pin_of_pyproject(lock):
    # A dependency changed in pyproject.toml without `make lock` fails here.
    have = locked(lock)
    for name, version in pins(LOCKS[lock]).items():
        assert have.get(name) == {version}, f"{name}=={version}: run `make lock`"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_locked_package_carries_its_hashes(lock):
    text = (ROOT / "requirements" / f"{lock}.lock").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.strip())
    assert len(entries) == len(LOCK_LINE.findall(text)) > 0
    for entry in entries:
        assert "--hash=sha256:" in entry, entry.splitlines()[0]


def test_one_version_of_each_package_in_all_locks():
    prod, dev, bench = locked("prod"), locked("dev"), locked("bench")
    assert set(prod) < set(dev) < set(bench)
    for name, version in dev.items():
        assert bench[name] == version and prod.get(name, version) == version, name  # sets


def test_the_image_installs_the_production_lock_without_development_servers():
    prod = locked("prod")
    servers = {canonicalize_name(Requirement(line).name)
               for line in PYPROJECT["optional-dependencies"]["servers"]}
    assert servers and not servers & set(prod)
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --require-hashes -r requirements/prod.lock" in dockerfile
    assert "pip install --no-deps" in dockerfile
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install --require-hashes -r requirements/dev.lock" in makefile
