"""Claude Code client of the session orchestrator: the ``orchestrator-hook`` command.

Claude Code runs ``orchestrator-hook EVENT`` for its lifecycle hooks (SessionStart,
PostToolUse, Stop, PreCompact, PostCompact, SessionEnd, ...) with the event's JSON on
stdin. The client maps the Claude session to an orchestrator session, sends heartbeats,
tool history and compactions to the public REST tools, and injects the task's context at
the start of a session and after a compaction.

It runs in the agent's process tree on every tool call, so it imports nothing but the
standard library (no Django), and it is never in the way: whatever happens it exits 0
within its event's budget; what it could not send waits in a spool under the project's
``.claude/`` and is replayed, in order, by the next hook that reaches the service.
"""

__version__ = "1.0.0"
