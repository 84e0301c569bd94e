"""``orchestrator-agent setup`` over HTTP only (issue 36), against a live server behind a
TLS-terminating, path-prefixed proxy whose certificate a private CA signed: --ca-file,
the project registered with a token, the task checked, idempotent, dry run, --check; and
every refusal a clear error with nothing written."""

from __future__ import annotations

import json
import stat

import pytest

from foundation.core.models import ApiToken, Project
from orchestrator_hook import agent_setup
from orchestrator_hook.project import identify
from tests.claude_code.conftest import make_project
from tests.claude_code.proxy import PrefixProxy
from tests.client.conftest import Project as HookProject
from tests.client.conftest import fixture
from tests.client.test_tls_timeouts import self_signed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def https_server(live_api, tmp_path):
    """(https URL with the /orchestrator prefix, token, CA file) of the live server."""
    url, token = live_api
    port = int(url.rsplit(":", 1)[1])
    cert, key = self_signed(tmp_path)
    with PrefixProxy("127.0.0.1", "127.0.0.1", port, tls=(str(cert), str(key)),
                     name="localhost") as proxy:
        yield proxy.url, token, cert


def setup(capsys, *args: str) -> tuple[int, str, str]:
    code = agent_setup.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_setup_with_a_token_over_https_with_a_private_ca(https_server, tmp_path, capsys,
                                                          tools_live):
    url, token, ca = https_server
    project = make_project(tmp_path / "shop", "https://github.com/acme/shop.git")
    key = identify(project).key
    base = ["--url", url, "--token", token, "--project-dir", str(project)]

    # The system's CA store does not know the private CA: refused, nothing written.
    code, _, err = setup(capsys, *base)
    assert code == 1 and "CERTIFICATE_VERIFY_FAILED" in err, err
    assert not (project / ".claude").exists()

    code, out, err = setup(capsys, *base, "--ca-file", str(ca), "--dry-run")
    assert code == 0 and "dry run:" in out and "would be registered" in out, out + err
    assert not (project / ".claude").exists() and not Project.objects.filter(pk=key).exists()

    code, out, err = setup(capsys, *base, "--ca-file", str(ca))
    assert code == 0, err
    assert f"project {key} (from the git remote; registered now)" in out
    assert "answering, /healthz 200" in out
    assert Project.objects.filter(pk=key).exists()
    config = json.loads((project / ".claude" / "orchestrator" / "config.json").read_text())
    assert config == {"url": url, "token": token, "projectId": key, "caFile": str(ca)}
    for private in (".claude/settings.local.json", ".claude/orchestrator/config.json"):
        assert stat.S_IMODE((project / private).stat().st_mode) == 0o600
    mcp = json.loads((project / ".mcp.json").read_text())["mcpServers"]["orchestrator"]
    assert mcp["url"] == f"{url}/mcp/agent" and token not in json.dumps(mcp)

    # Again, from the configuration alone (URL, token, CA kept): nothing changes.
    code, out, _ = setup(capsys, "--project-dir", str(project))
    assert code == 0 and "registered already" in out
    assert {line.split()[0] for line in out.splitlines() if str(project) in line
            and line.split()[0] in ("created", "updated", "unchanged")} == {"unchanged"}

    # The hooks reach the server through TLS with the CA of the config.
    tools_live("create_task", {"taskId": "shop-tls", "name": "tls", "projectId": key})
    code, _, err = setup(capsys, "--project-dir", str(project), "--task", "shop-tls")
    assert code == 0, err
    hooks = HookProject.__new__(HookProject)
    hooks.root, hooks.state = project, project / ".claude" / "orchestrator"
    run = hooks.hook("SessionStart", fixture("session_start_startup"))
    assert "shop-tls" in run.context, (run.stdout, hooks.log())

    code, out, _ = setup(capsys, "--project-dir", str(project), "--check")
    assert code == 0, out
    for line in (f"ok       service: {url} answers /healthz 200",
                 f"ok       token: accepted; reaches {key}", f"ok       project: {key}",
                 "ok       spool: empty", "ok       watchdogs: ", "all good"):
        assert line in out, out


def test_refusals_are_clear_and_write_nothing(live_api, tmp_path, capsys, tools_live):
    url, token = live_api
    project = make_project(tmp_path / "shop", "https://github.com/acme/shop.git")
    tools_live("create_project", {"projectId": "elsewhere", "name": "elsewhere"})
    tools_live("create_task", {"taskId": "foreign", "name": "f", "projectId": "elsewhere"})
    cases = [
        (["--url", url, "--enroll", "enr_nothing"], "the enrollment code was refused (401 E1609"),
        (["--url", url, "--token", "orch_not-a-token"], "the token is refused"),
        (["--url", url], "no token: pass --enroll CODE"),
        (["--token", token], "pass --url"),
        (["--url", url, "--token", token, "--task", "foreign"],
         "task 'foreign' is in project 'elsewhere'"),
        (["--url", url, "--token", token, "--ca-file", str(tmp_path / "none.pem")],
         "no such file"),
        (["--url", "http://127.0.0.1:9/", "--token", token], "does not answer"),
    ]
    for args, message in cases:
        code, _, err = setup(capsys, *args, "--project-dir", str(project))
        assert code == 1 and message in err, (args, err)
        assert not (project / ".claude").exists(), args
    # A token limited to another project cannot register this one.
    _, limited = ApiToken.issue("limited-elsewhere", projects=["elsewhere"])
    code, _, err = setup(capsys, "--url", url, "--token", limited, "--project-dir",
                         str(project))
    assert code == 1 and "could not register project" in err, err
    assert not (project / ".claude").exists()


def test_setup_again_with_the_code_keeps_the_token_it_holds(live_api, tmp_path, capsys,
                                                           tools_live):
    """A developer who runs the same setup line twice must not spend a second use of the
    code on a second token for the same directory; a revoked token is replaced."""
    from io import StringIO

    from django.core.management import call_command

    url, _ = live_api
    tools_live("create_project", {"projectId": "shop", "name": "Shop"})
    out = StringIO()
    call_command("create_enrollment", "--project", "shop", "--uses", "2", stdout=out)
    code_ = out.getvalue().strip().splitlines()[-1]
    project = make_project(tmp_path / "shop", "https://github.com/acme/shop.git")
    line = ["--url", url, "--enroll", code_, "--project-dir", str(project)]

    code, out_, err = setup(capsys, *line)
    assert code == 0 and "enrolled" in out_, err
    first = json.loads((project / ".claude" / "orchestrator" / "config.json").read_text())
    code, out_, err = setup(capsys, *line)
    assert code == 0 and "enrolled already" in out_, out_ + err
    again = json.loads((project / ".claude" / "orchestrator" / "config.json").read_text())
    assert again["token"] == first["token"] and again["projectId"] == "shop"
    assert ApiToken.objects.filter(name__startswith="agent:").count() == 1

    # Revoked in the console: the next run spends the code's second use on a new token.
    for issued in ApiToken.objects.filter(name__startswith="agent:"):
        issued.revoked = True
        issued.save(update_fields=["revoked"])  # as the console does: forgotten at once
    code, out_, err = setup(capsys, *line)
    assert code == 0 and "enrolled already" not in out_, out_ + err
    third = json.loads((project / ".claude" / "orchestrator" / "config.json").read_text())
    assert third["token"] != first["token"]
    assert ApiToken.objects.filter(name__startswith="agent:").count() == 2
