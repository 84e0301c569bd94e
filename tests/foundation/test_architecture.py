"""The layers of the architecture page (docs/architecture/index.md), as a checked rule: import-linter's
contracts in pyproject.toml (arrows point down, the hook client imports no server code,
no import cycles inside a package). `make lint` runs the same check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
