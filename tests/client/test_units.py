"""Pure logic of the hook client: composition limits, response parsing, transcript reading,
settings, the memo of files claimed."""

from __future__ import annotations

import json

import pytest

from orchestrator_hook import lite
from orchestrator_hook.cli import event_name
from orchestrator_hook.context import compose
from orchestrator_hook.transcript import read_tail
from orchestrator_hook.transport import parse_message, retry_after


def test_event_names_in_any_spelling():
    assert event_name("SessionStart") == "SessionStart"
    assert event_name("session-start") == "SessionStart"
    assert event_name("post_tool_use_failure") == "PostToolUseFailure"
    assert event_name("Notification") == "Notification"


@pytest.mark.parametrize("sizes", [(100, 100, 100), (3000, 4000, 20000), (12000,), (9000, 9000)])
def test_composed_context_stays_under_the_inline_limit(sizes):
    sections = [(f"S{i}", chr(65 + i) * size) for i, size in enumerate(sizes)]
    text = compose(sections)
    assert len(text) <= 9500
    assert text.startswith("## S0\nA")  # the first section is kept whole or cut last


def test_the_lowest_priority_section_is_cut_first():
    text = compose([("Recovery", "R" * 3000), ("Handoff", "H" * 2000), ("Task", "T" * 8000)])
    assert "R" * 3000 in text and "H" * 2000 in text and "(truncated)" in text


@pytest.mark.parametrize("raw,expected", [
    (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", (200, b"{}")),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", (200, b"{}")),
    (b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", (404, b"")),
])
def test_http_responses_are_parsed(raw, expected):
    status, _, body = parse_message(raw)
    assert (status, body) == expected


def test_a_truncated_response_is_an_error():
    with pytest.raises(ValueError):
        parse_message(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}")


@pytest.mark.parametrize("value,expected", [
    (b"7", 7.0), (b"0", 0.0), (b"86400", 600.0), (b"-3", None), (b"nan", None),
    (b"Wed, 21 Oct 2026 07:28:00 GMT", None), (None, None)])
def test_retry_after_is_read_in_seconds_and_bounded(value, expected):
    raw = b"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 2\r\n" \
        + (b"Retry-After: " + value + b"\r\n" if value is not None else b"") + b"\r\n{}"
    status, headers, _ = parse_message(raw)
    assert status == 429 and retry_after(headers) == expected


def test_transcript_tail_keeps_prompts_answers_and_tool_actions(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Fix the login bug"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Looking at auth.ts"},
            {"type": "tool_use", "name": "Edit", "input": {"file_path": "src/auth.ts"}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "content": "ok"}]}},
        {"type": "user", "message": {"role": "user", "content": "<system-reminder>x"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": "pytest -q"}},
            {"type": "text", "text": "Tests pass."}]}},
    ]
    path.write_text("garbage line\n" + "\n".join(json.dumps(line) for line in lines) + "\n")
    tail = read_tail(str(path))
    assert tail.user_prompts == ["Fix the login bug"]
    assert tail.assistant_texts[-1] == "Tests pass."
    assert tail.tool_actions == ["Edit src/auth.ts", "Bash pytest -q"]
    summary = tail.summary()
    assert "Fix the login bug" in summary and "Bash pytest -q" in summary


def test_a_missing_transcript_is_an_empty_tail(tmp_path):
    assert read_tail(str(tmp_path / "nope.jsonl")).summary() == ""
    assert read_tail(None).summary() == ""


def test_edited_files_are_named_relative_to_their_repository(tmp_path):
    """Claims and keyFiles name a file from its repository's root: a clone (.git folder),
    a worktree (.git file), a session started in a subfolder; outside git, from the
    project directory."""
    from orchestrator_hook.lite import repository_relative

    clone = tmp_path / "shop"
    (clone / ".git").mkdir(parents=True)
    (clone / "src").mkdir()
    worktree = tmp_path / "shop-feat"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: ../shop/.git/worktrees/shop-feat\n")
    assert repository_relative(str(clone / "src" / "app.py"), clone) == "src/app.py"
    assert repository_relative(str(worktree / "src" / "app.py"), worktree) == "src/app.py"
    # Claude Code started in a subfolder: still the repository's path.
    assert repository_relative(str(clone / "src" / "app.py"), clone / "src") == "src/app.py"
    assert repository_relative("app.py", clone / "src") == "src/app.py"
    # A file in no repository: relative to the project directory, or left absolute.
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repository_relative(str(plain / "a.py"), plain) == "a.py"
    assert repository_relative("/etc/hosts", plain) == "/etc/hosts"


def test_a_trickling_server_cannot_hold_a_call_past_its_timeout():
    """The call's timeout bounds the whole exchange, not each read."""
    import socket
    import threading

    from orchestrator_hook.transport import Client, ServiceUnavailable

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()
    sent: list[int] = []

    def trickle() -> None:
        conn, _ = server.accept()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        # A byte every 0.05 s, each read well inside the 0.1 s per-read timeout: the body
        # takes 50 s, which only a bound on the whole exchange cuts short.
        while len(sent) < 1000 and not stop.wait(0.05):
            try:
                conn.sendall(b"x")
            except OSError:
                return
            sent.append(1)
        conn.close()

    threading.Thread(target=trickle, daemon=True).start()
    client = Client(f"http://127.0.0.1:{server.getsockname()[1]}", "t", 0.1)
    with pytest.raises(ServiceUnavailable):
        client.call("claim_files", {}, 0.3)
    # The client gave up while the server was still sending the body.
    assert len(sent) < 1000
    stop.set()
    server.close()


def test_a_context_longer_than_claude_code_shows_is_written_whole_to_a_file(tmp_path):
    """Issue 22: HOT and critical context are never cut by the service, so the injected
    text can pass Claude Code's 10,000 characters. Nothing is lost: the whole text goes
    to .claude/contexts/_session_context.md and the injected text starts with where."""
    from orchestrator_hook.context import FULL_CONTEXT_FILE

    hot = "\n".join(f"- **Hard rule**: rule {n} " + "x" * 180 for n in range(80))
    text = compose([("", "Session header"), ("Handoff", "H" * 500), ("", hot)],
                   project_dir=tmp_path)
    assert len(text) <= 9500
    path = tmp_path / FULL_CONTEXT_FILE
    whole = path.read_text()
    assert all(f"rule {n} " in whole for n in range(80)) and "H" * 500 in whole
    assert text.startswith("**This context is ") and f"`{path.absolute()}`" in text
    assert "Read that file now" in text and "(truncated)" in text
    # Short enough: injected as it is, no file needed.
    path.unlink()
    assert compose([("", "short")], project_dir=tmp_path) == "short"
    assert not path.exists()


@pytest.mark.parametrize(("environment", "file_value", "expected"), [
    ({}, None, lite.DEFAULT_CLAIM_REUSE_SECONDS),
    ({}, 0, 0.0),  # 0 in the file is a value: check every edit
    ({"ORCHESTRATOR_CLAIM_REUSE_SECONDS": "0"}, 60, 0.0),  # the environment wins
    ({"ORCHESTRATOR_CLAIM_REUSE_SECONDS": "abc"}, None, lite.DEFAULT_CLAIM_REUSE_SECONDS),
    ({}, -5, lite.DEFAULT_CLAIM_REUSE_SECONDS),
])
def test_claim_reuse_setting(tmp_path, monkeypatch, environment, file_value, expected):
    monkeypatch.delenv("ORCHESTRATOR_CLAIM_REUSE_SECONDS", raising=False)
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    state = tmp_path / ".claude" / "orchestrator"
    state.mkdir(parents=True)
    config = {"url": "http://x", "token": "t"}
    if file_value is not None:
        config["claimReuseSeconds"] = file_value
    (state / "config.json").write_text(json.dumps(config))
    assert lite.config_fields(str(tmp_path))["claim_reuse_seconds"] == expected


def test_a_claim_memo_is_one_sessions_and_forgets_old_files(tmp_path):
    root = str(tmp_path)
    lite.remember_claims(root, "claude-1", "s1", ["a.py", "b.py"], 300)
    assert lite.claimed_recently(root, "claude-1", "s1", ["a.py", "b.py"], 300)
    assert not lite.claimed_recently(root, "claude-1", "s1", ["a.py", "c.py"], 300)
    assert not lite.claimed_recently(root, "claude-1", "s2", ["a.py"], 300)  # another session
    assert not lite.claimed_recently(root, "claude-1", "s1", ["a.py"], 0)  # off
    memo = tmp_path / "activity" / "claude-1.claims"
    stored = json.loads(memo.read_text())
    stored["paths"]["a.py"] -= 400  # claimed longer ago than the window
    memo.write_text(json.dumps(stored))
    assert not lite.claimed_recently(root, "claude-1", "s1", ["a.py"], 300)
    lite.remember_claims(root, "claude-1", "s1", ["c.py"], 300)
    assert set(json.loads(memo.read_text())["paths"]) == {"b.py", "c.py"}
    lite.remember_claims(root, "claude-1", "s2", ["d.py"], 300)  # a new session starts over
    assert json.loads(memo.read_text()) == {"sessionId": "s2", "paths": {
        "d.py": json.loads(memo.read_text())["paths"]["d.py"]}}
    memo.write_text("{half")  # a torn or foreign file is no memo
    assert not lite.claimed_recently(root, "claude-1", "s2", ["d.py"], 300)
