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
    assert (body["estimatedTokens"] > budget) is body["overBudget"]
    assert body["truncated"] is False  # nothing is ever cut inside a tier
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
    # HOT alone over budget: it stays whole (hard rules included) and says so.
    for small in (60, 5):
        body = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": small})
        _check(body, small)
        assert body["overBudget"] is True and body["tiers"] == ["hot"]
        assert body["text"] == hot_only["text"].replace(
            "tiers: hot_", "tiers: hot; left out for the token budget: warm, cold "
            "(get_context_bundle with a larger budgetTokens); over the token budget: HOT "
            "(with the hard rules and the critical keys) is never cut_")
        for hot in ("**Status**: in_progress", "**Blocker**: spec unclear",
                    "**Hard rule**: Never push to main", "**Next Step**: handle escapes"):
            assert hot in body["text"]


@pytest.mark.django_db
def test_hot_at_its_largest_is_never_cut(tools):
    """Everything at its largest: at the hook's 2000-token default HOT alone is over."""
    tools.ok("create_task", {
        "taskId": "huge", "name": "N" * 500, "description": "d" * 20000,
        "technicalDecisions": ["x" * 5000] * 30, "keyFiles": ["f" * 1000] * 100,
        "immediateContext": {"workingOn": "w" * 5000, "lastAction": "l" * 5000,
                             "nextStep": "n" * 5000, "blockers": ["b" * 2000] * 100}})
    body = tools.ok("get_context_bundle", {"taskId": "huge"})
    _check(body, 2000)
    # HOT alone is far over: whole, never cut (the hook client puts what Claude Code does
    # not show in a file: tests/client/test_units.py).
    assert body["overBudget"] is True and body["droppedTiers"] == ["warm", "cold"]
    assert body["text"].count("**Blocker**: " + "b" * 2000) == 100
    assert "w" * 5000 in body["text"] and "n" * 5000 in body["text"]


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


@pytest.mark.django_db
def test_critical_keys_stay_whatever_the_budget(tools):
    """Seed 003 markCritical: marked keys move into HOT, whole; unmarking moves them back."""
    _rich_task(tools)
    hot_only = tools.ok("get_context_bundle", {"taskId": "t1", "tiers": ["hot"]})
    assert hot_only["criticalKeys"] == [] and "Earlier decision" not in hot_only["text"]
    answer = tools.ok("mark_critical", {"taskId": "t1",
                                        "keys": ["technicalDecisions", "keyPaths", "notes",
                                                 "hardRules"]})
    conforms("mark_critical", answer)
    assert answer["criticalKeys"] == ["notes", "technicalDecisions", "keyPaths", "hardRules"]
    for budget in (1, 200, 2000):
        body = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": budget})
        _check(body, budget)
        assert body["criticalKeys"] == answer["criticalKeys"]
        hot = body["text"].split("### WARM")[0]
        for decision in DECISIONS:  # every decision, older ones included, in HOT
            assert f"**Decision** (critical): {decision}" in hot
        assert "**Key paths** (critical): src: src/" in hot
        assert "**Notes** (critical): Remember the BOM." in hot
        assert "**Hard rule**: Never push to main" in hot
        assert body["text"].count("Decision 0:") == 1  # moved, not repeated in COLD
    assert body["overBudget"] is False and body["tiers"] == ["hot", "warm", "cold"]
    assert "Earlier decision" not in body["text"]
    tiny = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": 1})
    assert tiny["overBudget"] is True and tiny["droppedTiers"] == ["warm", "cold"]
    # Unmark: back where they were.
    left = tools.ok("mark_critical", {"taskId": "t1", "keys": ["technicalDecisions",
                                                               "notes"], "critical": False})
    assert left["criticalKeys"] == ["keyPaths", "hardRules"]
    body = tools.ok("get_context_bundle", {"taskId": "t1", "budgetTokens": 20000})
    assert "**Earlier decision**: Decision 0" in body["text"].split("### COLD")[1]
    # Through start_session too (what the Claude Code hook injects).
    started = tools.ok("start_session", {"sessionId": "crit-s", "taskId": "t1",
                                         "contextBudgetTokens": 1})
    assert "**Key paths** (critical)" in started["contextBundle"]["text"]
    assert started["contextBundle"]["overBudget"] is True
    for args, status, code in [
        ({"taskId": "ghost", "keys": ["notes"]}, 404, "E1610"),
        ({"taskId": "t1", "keys": []}, 400, "E1612"),
        ({"taskId": "t1", "keys": ["mood"]}, 400, "E1612"),
        ({"taskId": "t1"}, 400, "E1612"),
    ]:
        failed = tools.call("mark_critical", args)
        assert (failed.status, failed.error_code) == (status, code), (args, failed.body)
