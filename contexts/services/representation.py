"""camelCase shapes of a task: the ``task`` part of get_unified_context, the hot context
(Redis and ``_hot_context.json``) and the task backup file."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from contexts.models import GlobalContext, TaskContext
from foundation.core.stamps import iso

EMPTY_IMMEDIATE_CONTEXT: dict[str, Any] = {"workingOn": None, "lastAction": None,
                                           "nextStep": None, "blockers": []}

# camelCase input field -> task_contexts column, for every writable content field.
FIELD_COLUMNS = {
    "name": "name",
    "description": "description",
    "agentType": "agent_type",
    "status": "status",
    "priority": "priority",
    "currentPhase": "current_phase",
    "iteration": "iteration",
    "score": "score",
    "lockedElements": "locked_elements",
    "immediateContext": "immediate_context",
    "keyFiles": "key_files",
    "technicalDecisions": "technical_decisions",
    "resumePrompt": "resume_prompt",
    "keywords": "keywords",
    "tokenEstimate": "token_estimate",
}


def score_value(value: Decimal | float | None) -> float | None:
    return None if value is None else float(value)


def immediate_context(task: TaskContext) -> dict[str, Any]:
    value = task.immediate_context or {}
    return {**EMPTY_IMMEDIATE_CONTEXT, **value} if isinstance(value, dict) else dict(
        EMPTY_IMMEDIATE_CONTEXT)


def task_part(task: TaskContext) -> dict[str, Any]:
    """The ``task`` object of get_unified_context."""
    data: dict[str, Any] = {
        "taskId": task.task_id,
        "name": task.name,
        "description": task.description,
        "agentType": task.agent_type,
        "status": task.status,
        "priority": task.priority,
        "currentPhase": task.current_phase,
        "iteration": task.iteration,
        "score": score_value(task.score),
        "lockedElements": list(task.locked_elements or []),
        "immediateContext": immediate_context(task),
        "keyFiles": list(task.key_files or []),
        "technicalDecisions": list(task.technical_decisions or []),
        "resumePrompt": task.resume_prompt,
        "keywords": list(task.keywords or []),
        "version": task.version,
        "updatedAt": iso(task.updated_at),
        "lastSessionAt": iso(task.last_session_at),
    }
    return data


def _task_state(task: TaskContext) -> dict[str, Any]:
    """The fields the hot cache and the task file both open with, in their order."""
    return {
        "taskId": task.task_id,
        "name": task.name,
        "status": task.status,
        "currentPhase": task.current_phase,
        "iteration": task.iteration,
        "immediateContext": immediate_context(task),
        "keyFiles": list(task.key_files or []),
    }


def hot_context(task: TaskContext) -> dict[str, Any]:
    """The value of ``context:hot`` (and ``_hot_context.json``): the active task's state."""
    return {
        **_task_state(task),
        "resumePrompt": task.resume_prompt,
        "updatedAt": iso(task.updated_at),
        # Beyond the spec's fields: lets readers and the cache writer tell which state this is.
        "version": task.version,
    }


def task_file(task: TaskContext) -> dict[str, Any]:
    """``task-agents/{taskId}.json``: the task's content, readable without the server."""
    return {
        **_task_state(task),
        "technicalDecisions": list(task.technical_decisions or []),
        "resumePrompt": task.resume_prompt,
        "version": task.version,
        "updatedAt": iso(task.updated_at),
    }


def global_part(project: GlobalContext) -> dict[str, Any]:
    return {
        "hardRules": list(project.hard_rules or []),
        "techStack": list(project.tech_stack or []),
        "keyPaths": dict(project.key_paths or {}),
        "services": dict(project.services or {}),
    }
