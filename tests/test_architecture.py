"""The layers of the architecture page (docs/architecture/index.md), as a checked rule: import-linter's
contracts in pyproject.toml (arrows point down, the foundation imports no app, the hook client
imports no server code, no import cycles inside a package). `make lint` runs the same check;
and the foundation names no app's table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), "--no-cache", "--no-logo"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_architecture_page_lists_the_contracts_layers():
    """The architecture page's layer list is the contract's, in the same order."""
    import tomllib

    contract = next(c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())
                    ["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    section = (ROOT / "docs" / "architecture" / "index.md").read_text()
    listed = [line.split("`")[1].replace("\\|", "|") for line in section.splitlines()
              if line.startswith("| `") and line.count("`") >= 2][:len(contract["layers"])]
    assert listed == contract["layers"]


APPS = ("locks", "contexts", "sessions", "conflicts", "claims", "graph", "console")


def _strings(tree) -> list[str]:
    import ast

    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_the_foundation_names_no_apps_table():
    """The foundation reads no app's table by name: what it must know of one (an entity's
    project) the owning app registers from above. A table name counts where SQL would use it
    (after FROM / JOIN / INTO / UPDATE or in double quotes) or as a whole string."""
    import ast
    import re

    from django.apps import apps

    tables = {model._meta.db_table.split('"."')[-1].strip('"')
              for config in apps.get_app_configs() if config.name in APPS
              for model in config.get_models()}
    assert "task_contexts" in tables and "active_sessions" in tables
    found = []
    for path in sorted((ROOT / "foundation").rglob("*.py")):
        for text in _strings(ast.parse(path.read_text(), str(path))):
            for table in tables:
                if text == table or re.search(
                        rf'(\b(FROM|JOIN|INTO|UPDATE)\s+|")"?{re.escape(table)}\b', text, re.I):
                    found.append(f"{path.relative_to(ROOT)}: {table}")
    assert not found, found
