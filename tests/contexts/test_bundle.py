"""The tiered context bundle (seed 001): get_context_bundle and its budget rules."""

from __future__ import annotations

import math

import pytest

from contexts.models import GlobalContext
from sessions.models import ToolInvocation
from tests.sessions.helpers import conforms

DECISIONS = [f"Decision {n}: " + "use the streaming parser " * 3 for n in range(12)]


def _rich_task(tools, task_id: str = "t1") -> None:
    tools.ok("create_task", {
        "taskId": task_id, "name": "Parser", "status": "in_progress",
        "description": "Parse the upload format. " * 40,
        "currentPhase": "implementation", "iteration": 3,
        "keyFiles": ["src/parser.py", "src/lexer.py"], "keywords": ["parser", "upload"],
        "technicalDecisions": DECISIONS,
        "immediateContext": {"workingOn": "tokenizer", "lastAction": "wrote tests",
                             "nextStep": "handle escapes", "blockers": ["spec unclear"],
                             "notes": "Remember the BOM."},
    })
    GlobalContext.objects.update(hard_rules=["Never push to main"], tech_stack=["Python"],
                                 key_paths={"src": "src/"})


def _check(body: dict, budget: int) -> None:
    conforms("get_context_bundle", body)
    assert body["budgetTokens"] == budget
    assert body["estimatedTokens"] == math.ceil(len(body["text"]) / 4)
    assert body["estimatedTokens"] <= budget
    assert body["tiers"][0] == "hot"


@pytest.mark.django_db
def test_large_budget_keeps_every_tier(tools):
    _rich_task(tools)
    body = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": 20000})
    _check(body, 20000)
    assert body["tiers"] == ["hot", "warm", "cold"] and body["droppedTiers"] == []
    assert body["truncated"] is False
    text = body["text"]
    assert text.startswith("## Task context: Parser (`t1`)")
    for hot in ("**Working On**: tokenizer", "**Next Step**: handle escapes",
                "**Blocker**: spec unclear", "**Hard rule**: Never push to main"):
        assert hot in text.split("### WARM")[0]
    assert "`src/parser.py`" in text.split("### WARM")[1].split("### COLD")[0]
    # The 5 newest decisions are WARM, the older ones COLD.
    assert "**Decision**: Decision 11" in text and "**Earlier decision**: Decision 0" in text
    assert "**Keywords**: parser, upload" in text.split("### COLD")[1]


@pytest.mark.django_db
def test_budgets_drop_cold_then_warm_never_hot(tools):
    _rich_task(tools)
    full = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": 20000})
    hot_only = tools.ok("get_context_bundle", {"taskId": "t1", "tiers": ["hot"]})
    warm = tools.ok("get_context_bundle", {"taskId": "t1", "tiers": ["hot", "warm"],
                                           "budgetTokens": 20000})
    assert hot_only["estimatedTokens"] < warm["estimatedTokens"] < full["estimatedTokens"]
    # Just under the full size: COLD goes.
    body = tools.ok("get_context_bundle", {"taskId": "t1",
                                           "budgetTokens": full["estimatedTokens"] - 1})
    _check(body, full["estimatedTokens"] - 1)
    assert body["tiers"] == ["hot", "warm"] and body["droppedTiers"] == ["cold"]
    assert "### COLD" not in body["text"] and "left out for the token budget: cold" in body["text"]
    # Between HOT alone and HOT + WARM: WARM goes too.
    budget = hot_only["estimatedTokens"] + 50
    body = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": budget})
    _check(body, budget)
    assert body["tiers"] == ["hot"] and body["droppedTiers"] == ["warm", "cold"]
    assert body["truncated"] is False and "**Next Step**: handle escapes" in body["text"]
    # HOT alone over budget: its items are cut from the end, the status line stays.
    body = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": 60})
    _check(body, 60)
    assert body["truncated"] is True and "**Status**: in_progress" in body["text"]
    assert "Hard rule" not in body["text"]
    tiny = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": 5})
    _check(tiny, 5)
    assert tiny["truncated"] is True


@pytest.mark.django_db
def test_the_hook_budget_stays_under_claude_codes_10000_characters(tools):
    """Everything at its largest: at the hook's 2000-token default the text is <= 8000."""
    tools.ok("create_task", {
        "taskId": "huge", "name": "N" * 500, "description": "d" * 20000,
        "technicalDecisions": ["x" * 5000] * 30, "keyFiles": ["f" * 1000] * 100,
        "immediateContext": {"workingOn": "w" * 5000, "lastAction": "l" * 5000,
                             "nextStep": "n" * 5000, "blockers": ["b" * 2000] * 100}})
    body = tools.ok("get_context_bundle", {"taskId": "huge"})
    _check(body, 2000)
    assert len(body["text"]) <= 8000 < 10000
    assert body["truncated"] is True and body["droppedTiers"] == ["warm", "cold"]


@pytest.mark.django_db
def test_bundle_by_session_and_errors(tools):
    _rich_task(tools)
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1"})
    tools.ok("start_session", {"sessionId": "s2"})
    assert tools.ok("get_context_bundle", {"sessionId": "s1"})["taskId"] == "t1"
    # A context reload is not the agent's work: no tool-history row.
    assert not ToolInvocation.objects.filter(tool="get_context_bundle").exists()
    for args, status, code in [
        ({}, 400, "E1612"),
        ({"sessionId": "s2"}, 404, "E1610"),
        ({"sessionId": "ghost"}, 404, "E1600"),
        ({"taskId": "ghost"}, 404, "E1610"),
        ({"taskId": "t1", "budgetTokens": 0}, 400, "E1612"),
        ({"taskId": "t1", "budgetTokens": 20001}, 400, "E1612"),
        ({"taskId": "t1", "tiers": ["lukewarm"]}, 400, "E1612"),
    ]:
        answer = tools.call("get_context_bundle", args)
        assert (answer.status, answer.error_code) == (status, code), (args, answer.body)
