"""A task's context as markdown ready to inject into an agent, tiered by seed 001 (AD-5, AD-6).

Seed 001's HOT/WARM/COLD tiers, mapped onto a task context:

- HOT (never dropped): where the task stands (status, phase, iteration), its immediate
  context (working on, last action, next step, blockers), the unfinished tasks blocking
  it, its locked elements, its unresolved conflicts and the project's hard rules
  (seed 001's "guardrails" and "unread messages": what an agent must not miss).
- WARM: description, notes, key files, the 5 newest technical decisions, the other
  relationships (blocks, depends on, related to) and the tech stack.
- COLD: older technical decisions, keywords, the stored resume prompt, the last versions'
  change summaries and the project's key paths and services.

Tokens are estimated as characters / 4 of the text (seed 001 AD-5). Over budget, COLD goes
first, then WARM; if HOT alone is over, its items are cut from the least important end and
``truncated`` says so. The text never exceeds the budget.
"""

from __future__ import annotations

import math
from typing import Any

from contexts.services.unified import get_unified_context

TIERS = ("hot", "warm", "cold")
DEFAULT_BUDGET_TOKENS = 2000
MAX_BUDGET_TOKENS = 20000
RECENT_DECISIONS = 5
VERSION_LINES = 10
CHARS_PER_TOKEN = 4
ELLIPSIS = "…"


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


def _warm(task: dict[str, Any], context: dict[str, Any]) -> list[str]:
    lines = []
    if task.get("description"):
        lines.append(f"- **Description**: {task['description']}")
    notes = (task.get("immediateContext") or {}).get("notes")
    if notes:
        lines.append(f"- **Notes**: {notes}")
    if task.get("keyFiles"):
        lines.append("- **Key files**: " + ", ".join(f"`{f}`" for f in task["keyFiles"]))
    decisions = task.get("technicalDecisions") or []
    lines += [f"- **Decision**: {d}" for d in decisions[-RECENT_DECISIONS:]]
    relationships = context.get("relationships") or {}
    for label, key in (("Blocks", "blocks"), ("Depends on", "dependsOn"),
                       ("Related to", "relatedTo")):
        if relationships.get(key):
            lines.append(f"- **{label}**: {_refs(relationships[key])}")
    if context["global"].get("techStack"):
        lines.append("- **Tech stack**: " + ", ".join(context["global"]["techStack"]))
    return lines


def _cold(task: dict[str, Any], context: dict[str, Any]) -> list[str]:
    decisions = task.get("technicalDecisions") or []
    lines = [f"- **Earlier decision**: {d}" for d in decisions[:-RECENT_DECISIONS]]
    if task.get("keywords"):
        lines.append("- **Keywords**: " + ", ".join(task["keywords"]))
    if task.get("resumePrompt"):
        lines.append(f"- **Stored resume prompt**: {task['resumePrompt']}")
    lines += [f"- **v{v['version']}** {v['createdAt']} ({v['changeType'] or 'change'}): "
              f"{v['changeSummary'] or '(no summary)'}"
              for v in context.get("versionHistory") or []]
    for label, key in (("Key paths", "keyPaths"), ("Services", "services")):
        values = context["global"].get(key) or {}
        if values:
            lines.append(f"- **{label}**: " + ", ".join(f"{k}: {v}" for k, v in values.items()))
    return lines


def _render(task: dict[str, Any], sections: dict[str, list[str]], included: list[str],
            dropped: list[str]) -> str:
    header = [f"## Task context: {task['name']} (`{task['taskId']}`)",
              f"_Context bundle, tiers: {', '.join(included)}"
              + (f"; left out for the token budget: {', '.join(dropped)} "
                 "(get_context_bundle with a larger budgetTokens)" if dropped else "") + "_"]
    body = [line for tier in included if sections[tier]
            for line in ("", f"### {tier.upper()}", *sections[tier])]
    return "\n".join(header + body) + "\n"


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max(0, max_chars - 2)] + ELLIPSIS + "\n"


def context_bundle(task_id: str, budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                   tiers: list[str] | tuple[str, ...] | None = None) -> dict[str, Any]:
    """{taskId, budgetTokens, estimatedTokens, tiers, droppedTiers, truncated, text}.

    ``tiers`` limits what is wanted (HOT is always in); E1610 for an unknown task.
    """
    context = get_unified_context(task_id, include_version_history=True,
                                  max_versions=VERSION_LINES)
    task = context["task"]
    sections = {"hot": _hot(task, context), "warm": _warm(task, context),
                "cold": _cold(task, context)}
    wanted = [t for t in TIERS if t == "hot" or tiers is None or t in tiers]
    included, dropped = list(wanted), []
    max_chars = budget_tokens * CHARS_PER_TOKEN
    text = _render(task, sections, included, dropped)
    for tier in ("cold", "warm"):
        if len(text) <= max_chars:
            break
        if tier in included:
            included.remove(tier)
            dropped.insert(0, tier)
            text = _render(task, sections, included, dropped)
    truncated = False
    if len(text) > max_chars:
        # HOT alone is over: drop its items from the least important end, keeping at least
        # the status line, then cut what is left to the budget.
        truncated = True
        hot = list(sections["hot"])
        while len(hot) > 1 and len(text) > max_chars:
            hot.pop()
            text = _render(task, {**sections, "hot": hot}, included, dropped)
        text = _cut(text, max_chars)
    return {"taskId": task_id, "budgetTokens": budget_tokens,
            "estimatedTokens": estimate_tokens(text), "tiers": included,
            "droppedTiers": dropped, "truncated": truncated, "text": text}
