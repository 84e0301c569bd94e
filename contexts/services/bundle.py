"""A task's context as markdown ready to inject into an agent, in three tiers.

HOT/WARM/COLD, by what an agent can least afford to miss, mapped onto a task context:

- HOT (never dropped): where the task stands (status, phase, iteration), its immediate
  context (working on, last action, next step, blockers), the unfinished tasks blocking
  it, its locked elements, its unresolved conflicts and the project's hard rules
  (the guardrails and the unread news: what an agent must not miss).
- WARM: description, notes, key files, the 5 newest technical decisions, the other
  relationships (blocks, depends on, related to), the tech stack and the project's 10
  newest learnings (left by end_session for the next sessions).
- COLD: older technical decisions, keywords, the stored resume prompt, the last versions'
  change summaries and the project's key paths and services.

A task's keys marked critical (``mark_critical``, contexts.services.critical) move from
WARM or COLD into HOT, labelled "(critical)".

Tokens are estimated as characters / 4 of the text. Over budget, COLD goes first, then
WARM; HOT (with the hard rules and the critical keys) is never dropped nor cut (what an
agent must not miss is never shortened): when it alone is over the budget the bundle is
whole, ``overBudget`` is true and its header says so. ``truncated`` stays in the answer for older
clients and is always false: nothing is ever cut inside a tier.
"""

from __future__ import annotations

import math
from typing import Any

from contexts.services import learnings
from contexts.services.critical import MOVABLE, in_bundle_order
from contexts.services.unified import unified_context, unified_statement
from foundation.core.prepared import Statement

TIERS = ("hot", "warm", "cold")
DEFAULT_BUDGET_TOKENS = 2000
MAX_BUDGET_TOKENS = 20000
RECENT_DECISIONS = 5
VERSION_LINES = 10
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _refs(items: list[dict[str, Any]]) -> str:
    return ", ".join(f"`{r['taskId']}` {r.get('name') or r['taskId']} "
                     f"({r.get('status') or 'pending'})" for r in items)


def _hot(task: dict[str, Any], context: dict[str, Any]) -> list[str]:
    now = task.get("immediateContext") or {}
    lines = [f"- **Status**: {task.get('status') or 'pending'} · **Phase**: "
             f"{task.get('currentPhase') or '(not set)'} · **Iteration**: "
             f"{task.get('iteration') or 0}"]
    for label, key in (("Working On", "workingOn"), ("Last Action", "lastAction"),
                       ("Next Step", "nextStep")):
        if now.get(key):
            lines.append(f"- **{label}**: {now[key]}")
    lines += [f"- **Blocker**: {b}" for b in now.get("blockers") or [] if b]
    blocked_by = [r for r in (context.get("relationships") or {}).get("blockedBy", [])
                  if r.get("status") != "completed"]
    if blocked_by:
        lines.append(f"- **Blocked by**: {_refs(blocked_by)}")
    if task.get("lockedElements"):
        lines.append("- **Locked elements** (only the lock holder may change them): "
                     + ", ".join(task["lockedElements"]))
    lines += [f"- **Unresolved conflict** ({c['severity']}, {c['type']}): {c['description']}"
              for c in context.get("conflicts") or []]
    lines += [f"- **Hard rule**: {rule}" for rule in context["global"].get("hardRules") or []]
    return lines


def _key_lines(key: str, task: dict[str, Any], context: dict[str, Any],
               part: str = "all", mark: str = "") -> list[str]:
    """The bundle lines of one movable key (contexts.services.critical.MOVABLE); ``part``
    splits the decisions: "recent" (WARM), "older" (COLD) or "all"."""
    glob = context["global"]
    if key == "description":
        return [f"- **Description**{mark}: {task['description']}"] if task.get(
            "description") else []
    if key == "notes":
        notes = (task.get("immediateContext") or {}).get("notes")
        return [f"- **Notes**{mark}: {notes}"] if notes else []
    if key == "keyFiles":
        return ["- **Key files**" + mark + ": " + ", ".join(f"`{f}`" for f in task["keyFiles"])
                ] if task.get("keyFiles") else []
    if key == "technicalDecisions":
        decisions = task.get("technicalDecisions") or []
        if part == "recent":
            return [f"- **Decision**: {d}" for d in decisions[-RECENT_DECISIONS:]]
        if part == "older":
            return [f"- **Earlier decision**: {d}" for d in decisions[:-RECENT_DECISIONS]]
        return [f"- **Decision**{mark}: {d}" for d in decisions]
    if key == "relationships":
        relationships = context.get("relationships") or {}
        return [f"- **{label}**{mark}: {_refs(relationships[k])}" for label, k in
                (("Blocks", "blocks"), ("Depends on", "dependsOn"),
                 ("Related to", "relatedTo")) if relationships.get(k)]
    if key == "techStack":
        return ["- **Tech stack**" + mark + ": " + ", ".join(glob["techStack"])] if glob.get(
            "techStack") else []
    if key == "keywords":
        return ["- **Keywords**" + mark + ": " + ", ".join(task["keywords"])] if task.get(
            "keywords") else []
    if key == "resumePrompt":
        return [f"- **Stored resume prompt**{mark}: {task['resumePrompt']}"] if task.get(
            "resumePrompt") else []
    if key == "versionHistory":
        return [f"- **v{v['version']}**{mark} {v['createdAt']} ({v['changeType'] or 'change'})"
                f": {v['changeSummary'] or '(no summary)'}"
                for v in context.get("versionHistory") or []]
    label = {"keyPaths": "Key paths", "services": "Services"}[key]
    values = glob.get(key) or {}
    return ["- **" + label + "**" + mark + ": " + ", ".join(f"{k}: {v}" for k, v in
                                                             values.items())] if values else []


WARM_KEYS = (("description", "all"), ("notes", "all"), ("keyFiles", "all"),
             ("technicalDecisions", "recent"), ("relationships", "all"), ("techStack", "all"))
COLD_KEYS = (("technicalDecisions", "older"), ("keywords", "all"), ("resumePrompt", "all"),
             ("versionHistory", "all"), ("keyPaths", "all"), ("services", "all"))


def _critical(task: dict[str, Any], context: dict[str, Any], critical: list[str]) -> list[str]:
    return [line for key in critical if key in MOVABLE
            for line in _key_lines(key, task, context, mark=" (critical)")]


def _warm(task: dict[str, Any], context: dict[str, Any],
          critical: list[str] | tuple[str, ...] = ()) -> list[str]:
    return [line for key, part in WARM_KEYS if key not in critical
            for line in _key_lines(key, task, context, part)] + [
        f"- **Learning**: {text}" for text in context.get("learnings") or []]


def _cold(task: dict[str, Any], context: dict[str, Any],
          critical: list[str] | tuple[str, ...] = ()) -> list[str]:
    return [line for key, part in COLD_KEYS if key not in critical
            for line in _key_lines(key, task, context, part)]


def _render(task: dict[str, Any], sections: dict[str, list[str]], included: list[str],
            dropped: list[str], over_budget: bool = False) -> str:
    notes = []
    if dropped:
        notes.append(f"left out for the token budget: {', '.join(dropped)} "
                     "(get_context_bundle with a larger budgetTokens)")
    if over_budget:
        notes.append("over the token budget: HOT (with the hard rules and the critical "
                     "keys) is never cut")
    header = [f"## Task context: {task['name']} (`{task['taskId']}`)",
              f"_Context bundle, tiers: {', '.join(included)}"
              + "".join(f"; {n}" for n in notes) + "_"]
    body = [line for tier in included if sections[tier]
            for line in ("", f"### {tier.upper()}", *sections[tier])]
    return "\n".join(header + body) + "\n"


def bundle_statement(task_id: str) -> Statement:
    """The one read ``context_bundle`` sends, for a caller that sends it in a round trip
    of its own (start_session) and hands the row over (``prefetched``). E1612 for a task
    id that is not safe."""
    return unified_statement(task_id, include_version_history=True,
                             max_versions=VERSION_LINES, critical=True,
                             learnings=learnings.IN_BUNDLE)


def context_bundle(task_id: str, budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                   tiers: list[str] | tuple[str, ...] | None = None, *,
                   prefetched: tuple[Statement, dict[str, Any] | None] | None = None
                   ) -> dict[str, Any]:
    """{taskId, budgetTokens, estimatedTokens, tiers, droppedTiers, overBudget,
    criticalKeys, truncated (always false), text}.

    ``tiers`` limits what is wanted (HOT is always in); E1610 for an unknown task.
    ``prefetched``: (``bundle_statement(task_id)``, the row it read).
    """
    # The same arguments as bundle_statement's: a row it read is used only for them.
    context, marked = unified_context(task_id, include_version_history=True,
                                      max_versions=VERSION_LINES, critical=True,
                                      learnings=learnings.IN_BUNDLE, prefetched=prefetched)
    task = context["task"]
    critical = in_bundle_order(marked)
    sections = {"hot": _hot(task, context) + _critical(task, context, critical),
                "warm": _warm(task, context, critical), "cold": _cold(task, context, critical)}
    wanted = [t for t in TIERS if t == "hot" or tiers is None or t in tiers]
    included, dropped = list(wanted), list[str]()
    max_chars = budget_tokens * CHARS_PER_TOKEN
    text = _render(task, sections, included, dropped)
    for tier in ("cold", "warm"):
        if len(text) <= max_chars:
            break
        if tier in included:
            included.remove(tier)
            dropped.insert(0, tier)
            text = _render(task, sections, included, dropped)
    over_budget = len(text) > max_chars
    if over_budget:
        # HOT alone is over: it stays whole, and the header says so.
        text = _render(task, sections, included, dropped, over_budget=True)
    return {"taskId": task_id, "budgetTokens": budget_tokens,
            "estimatedTokens": estimate_tokens(text), "tiers": included,
            "droppedTiers": dropped, "overBudget": over_budget, "criticalKeys": critical,
            "truncated": False, "text": text}
