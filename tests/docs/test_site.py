"""The documentation site builds as `make docs` builds it: `mkdocs build --strict`, where a
link to a missing page or anchor, a page left out of the nav, or a setting of
foundation/config.py without a meaning in docs/_gen/settings.yml fails the build. The
README is the front door: short, and every page it links to exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build(tmp_path: Path, docs_dir: Path | None = None) -> subprocess.CompletedProcess:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    config = ROOT / "mkdocs.yml"
    if docs_dir is not None:  # the same configuration over a copy of docs/
        text = config.read_text().replace("docs_dir: docs", f"docs_dir: {docs_dir}")
        text = text.replace("- docs/_gen/reference.py", f"- {docs_dir}/_gen/reference.py")
        config = tmp_path / "mkdocs.yml"
        config.write_text(text)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(mkdocs), "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def test_the_site_builds_strict_with_generated_reference(tmp_path):
    result = build(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    site = tmp_path / "site"
    tools = (site / "reference" / "tools" / "index.html").read_text()
    assert 'id="save_context_snapshot"' in tools and "save_task_context" in tools
    settings = (site / "reference" / "settings" / "index.html").read_text()
    assert "FILE_CLAIM_TTL_SECONDS" in settings and "1800" in settings
    assert "E1617" in (site / "reference" / "errors" / "index.html").read_text()


def test_a_broken_link_fails_the_build(tmp_path):
    """The check can fail: one link to a page that does not exist and the build stops."""
    import shutil

    copy = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", copy)
    page = copy / "user-guide" / "projects.md"
    page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    result = build(tmp_path, copy)
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr


def test_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    targets = re.findall(r"\]\((docs/[^)#\s]+\.md)(?:#[^)]*)?\)", readme)
    assert targets, "the README links into the site"
    assert [t for t in targets if not (ROOT / t).is_file()] == []
