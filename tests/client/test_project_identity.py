"""The repository is the project (issue 19): claude_setup finds it from git, registers it,
and issues a token limited to it; the hook client names it on every call."""

from __future__ import annotations

import json
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from foundation.core.models import ApiToken, Project, hash_token
from orchestrator_hook.project import identify, key_from, normalize_remote

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}


def git(directory: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(directory), *args], check=True, text=True,
                          capture_output=True, env=GIT_ENV).stdout.strip()


def repository(path: Path, remote: str | None = None, *, commit: bool = True) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    if remote:
        git(path, "remote", "add", "origin", remote)
    if commit:
        (path / "README").write_text("hello\n")
        git(path, "add", "README")
        git(path, "commit", "-q", "-m", "first")
    return path


@pytest.mark.parametrize("url", [
    "https://github.com/acme/app.git", "https://me:secret@GitHub.com/acme/app",
    "git@github.com:acme/app.git", "ssh://git@GITHUB.COM:22/acme/app.git/",
    "git://github.com/acme/app/",
])
def test_every_spelling_of_one_remote_is_one_key(url):
    assert key_from(normalize_remote(url)) == "github.com:acme:app"


def test_paths_keep_their_case_and_hosts_do_not():
    assert key_from(normalize_remote("https://GitLab.example.com:8443/Group/Sub/App.git")) \
        == "gitlab.example.com:Group:Sub:App"
    assert key_from(normalize_remote("/srv/git/app.git")) == "local:srv:git:app"
    assert key_from(normalize_remote("file:///srv/git/app.git")) == "local:srv:git:app"


def test_a_long_key_stays_a_valid_project_id():
    from foundation.core.projects import check_project_id

    key = key_from("host/" + "/".join(["segment with spaces"] * 30))
    assert len(key) == 200 and check_project_id(key) == key


def test_clones_and_worktrees_share_a_project_two_repositories_never(tmp_path):
    one = repository(tmp_path / "one", "https://github.com/acme/app.git")
    two = repository(tmp_path / "two", "git@github.com:acme/app.git")
    git(one, "worktree", "add", "-q", str(tmp_path / "tree"), "-b", "feature")
    other = repository(tmp_path / "other", "https://github.com/acme/api.git")
    keys = {p.name: identify(p) for p in (one, two, tmp_path / "tree", other)}
    assert keys["one"].key == keys["two"].key == keys["tree"].key == "github.com:acme:app"
    assert keys["one"].source == "remote" and keys["one"].name == "app"
    assert keys["other"].key == "github.com:acme:api"


def test_without_a_remote_the_root_commit_then_the_directory(tmp_path):
    local = repository(tmp_path / "local")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(local), str(clone)], check=True, env=GIT_ENV)
    git(clone, "remote", "remove", "origin")
    root = git(local, "rev-list", "--max-parents=0", "HEAD")
    assert identify(local).key == identify(clone).key == f"git-root:{root}"
    assert identify(clone).source == "root-commit"
    plain = tmp_path / "plain"
    plain.mkdir()
    found = identify(plain)
    assert found.source == "directory"
    assert found.key == "dir:" + str(plain).strip("/").replace("/", ":")
    empty = repository(tmp_path / "empty", commit=False)  # git init, nothing committed
    assert identify(empty).source == "directory"


def setup(directory: Path, *args: str) -> str:
    out = StringIO()
    call_command("claude_setup", "--project-dir", str(directory), *args, stdout=out,
                 stderr=StringIO())
    return out.getvalue()


def config_of(directory: Path) -> dict:
    return json.loads((directory / ".claude" / "orchestrator" / "config.json").read_text())


@pytest.mark.django_db
def test_setup_registers_each_repository_once_with_its_own_limited_token(tmp_path):
    one = repository(tmp_path / "one", "https://github.com/acme/app.git")
    two = repository(tmp_path / "two", "git@github.com:acme/app.git")
    api = repository(tmp_path / "api", "https://github.com/acme/api.git")
    assert "registered now" in setup(one)
    assert "registered already" in setup(two)
    setup(api)
    assert set(Project.objects.values_list("id", flat=True)) >= {"github.com:acme:app",
                                                                 "github.com:acme:api"}
    assert Project.objects.get(pk="github.com:acme:app").name == "app"
    for directory, key in ((one, "github.com:acme:app"), (two, "github.com:acme:app"),
                           (api, "github.com:acme:api")):
        config = config_of(directory)
        assert config["projectId"] == key
        assert ApiToken.objects.get(token_hash=hash_token(config["token"])).projects == [key]
        mcp = json.loads((directory / ".mcp.json").read_text())["mcpServers"]["orchestrator"]
        assert mcp["headers"]["X-Orchestrator-Project"] == key


@pytest.mark.django_db
def test_the_project_option_wins_and_is_checked(tmp_path):
    one = repository(tmp_path / "one", "https://github.com/acme/app.git")
    out = setup(one, "--project", "team-app")
    assert "project team-app (from --project; registered now)" in out
    assert config_of(one)["projectId"] == "team-app"
    with pytest.raises(CommandError, match="--project must be"):
        setup(repository(tmp_path / "two"), "--project", "no spaces")


@pytest.mark.django_db
def test_a_token_of_another_project_or_a_task_of_another_project_is_refused(tmp_path, tools):
    one = repository(tmp_path / "one", "https://github.com/acme/app.git")
    api = repository(tmp_path / "api", "https://github.com/acme/api.git")
    setup(one)
    with pytest.raises(CommandError, match="limited to"):
        setup(api, "--token", config_of(one)["token"])
    tools.ok("create_task", {"taskId": "app-task", "name": "x",
                             "projectId": "github.com:acme:app"})
    with pytest.raises(CommandError, match="is in project 'github.com:acme:app'"):
        setup(api, "--task", "app-task")


@pytest.mark.django_db
def test_dry_run_registers_nothing(tmp_path):
    one = repository(tmp_path / "one", "https://github.com/acme/app.git")
    out = setup(one, "--dry-run")
    assert "project github.com:acme:app (from the git remote; would be registered)" in out
    assert not Project.objects.filter(pk="github.com:acme:app").exists()
