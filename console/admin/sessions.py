"""The human console for sessions: list with filters, a page with the resume prompt, tool
history, event log, unsaved changes and handoff; actions are tool calls (run_tool)."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.db.models import IntegerField, OuterRef, Subquery
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from console.admin.base import MissingObjectIs404, ProjectFilter, ProjectScopedAdmin, run_tool
from orchestrator.core.errors import OrchestratorError
from sessions.models import (
    ActiveSession,
    SessionDetail,
    SessionEvent,
    SessionHandoff,
    SessionWork,
    ToolInvocation,
)
from sessions.services import recovery
from sessions.services.prompts import resume_prompt
from sessions.services.timeline import session_timeline

SHOWN_EVENTS = 50


@admin.register(ActiveSession)
class ActiveSessionAdmin(ProjectScopedAdmin, MissingObjectIs404):
    list_display = ("session_id", "project", "status", "task_id", "heartbeat_age",
                    "recovery_needed", "recovery_type", "compactions", "project_dir",
                    "started_at")
    list_filter = (ProjectFilter, "status", "recovery_needed", "recovery_type", "project_dir")
    search_fields = ("session_id", "task_id", "project_dir")
    actions = ("mark_recovered", "mark_crashed", "end_sessions", "release_locks")
    fields = ("session_id", "project", "status", "task_id", "project_dir", "git_branch",
              "started_at", "last_heartbeat", "ended_at", "recovery_needed", "recovery_type",
              "ownership", "prompt", "unsaved", "conversation_summary", "timeline",
              "tasks_worked_on", "tool_history", "event_log", "handoff")
    readonly_fields = fields

    def get_queryset(self, request):
        compactions = SessionDetail.objects.filter(session_id=OuterRef("session_id"))
        return super().get_queryset(request).annotate(compactions_n=Subquery(
            compactions.values("compaction_count")[:1], output_field=IntegerField()))

    def has_add_permission(self, request) -> bool:
        return False  # sessions start through start_session only

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # read-only page; state changes are the actions below

    @admin.display(description="heartbeat age")
    def heartbeat_age(self, obj: ActiveSession) -> str:
        if not obj.last_heartbeat:
            return "-"
        seconds = int((timezone.now() - obj.last_heartbeat).total_seconds())
        return f"{seconds // 3600}h {seconds % 3600 // 60}m" if seconds >= 3600 else \
            f"{seconds // 60}m {seconds % 60}s"

    @admin.display(description="compactions", ordering="compactions_n")
    def compactions(self, obj: ActiveSession) -> int:
        return getattr(obj, "compactions_n", None) or 0

    @admin.display(description="agent / process")
    def ownership(self, obj: ActiveSession) -> str:
        detail = SessionDetail.objects.filter(session_id=obj.session_id).first()
        if detail is None:
            return "-"
        return f"{detail.agent_id or '-'} / pid {detail.process_id or '-'}"

    @admin.display(description="resume prompt")
    def prompt(self, obj: ActiveSession) -> str:
        return format_html('<pre id="resume-prompt" style="white-space:pre-wrap">{}</pre>',
                           resume_prompt(recovery.recovery_state(obj.session_id)))

    @admin.display(description="unsaved changes")
    def unsaved(self, obj: ActiveSession) -> str:
        changes = obj.unsaved_changes or []
        if not changes:
            return "none"
        return format_html("<ul>{}</ul>", format_html_join(
            "", "<li><b>{}</b> <code>{}</code> {}</li>",
            ((c.get("type"), c.get("path"), c.get("description", "")) for c in changes)))

    @admin.display(description="timeline")
    def timeline(self, obj: ActiveSession) -> str:
        entries = session_timeline(obj)
        return format_html('<table id="session-timeline">{}</table>', format_html_join(
            "", '<tr class="timeline-{}"><td>{}</td><td>{}</td><td>{}</td></tr>',
            ((e["kind"], e["at"] or "now", e["kind"], e["text"]) for e in entries))) if entries \
            else "none"

    @admin.display(description="tasks worked on")
    def tasks_worked_on(self, obj: ActiveSession) -> str:
        # graph_session_work: the same records the task graph's WORKS_ON edges come from.
        rows = SessionWork.objects.filter(session_id=obj.session_id).order_by("-started_at")
        if not rows:
            return "none"
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td>{}</td><td>since {}</td><td>as {}</td></tr>",
            ((r.task_id, r.started_at, r.agent_id or "-") for r in rows)))

    @admin.display(description="tool history (latest 20)")
    def tool_history(self, obj: ActiveSession) -> str:
        rows = ToolInvocation.objects.filter(session_id=obj.session_id)[:20]
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((r.timestamp, r.tool, "ok" if r.success else f"failed {r.error_code or ''}",
              r.transport) for r in rows))) if rows else "none"

    @admin.display(description=f"event log (latest {SHOWN_EVENTS})")
    def event_log(self, obj: ActiveSession) -> str:
        rows = list(SessionEvent.objects.filter(session_id=obj.session_id)
                    .order_by("-sequence")[:SHOWN_EVENTS])
        if not rows:
            return "none"
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            ((e.sequence, e.event_type, e.role, e.content[:500],
              json.dumps(e.parts)[:300] if e.parts is not None else "")
             for e in reversed(rows))))

    @admin.display(description="handoff")
    def handoff(self, obj: ActiveSession) -> str:
        left = SessionHandoff.objects.filter(from_session_id=obj.session_id).first()
        taken = SessionHandoff.objects.filter(consumed_by_session_id=obj.session_id).first()
        parts = []
        for label, note in (("left", left), ("received", taken)):
            if note:
                parts.append(format_html("<p><b>{}</b> ({}, {}): {}<br>open: {}</p>", label,
                                         note.project_id, "active" if note.active else
                                         "replaced", note.summary,
                                         ", ".join(note.open_items or []) or "none"))
        return format_html("{}", format_html_join("", "{}", ((p,) for p in parts))) \
            if parts else "none"

    @admin.action(description="Mark recovered")
    def mark_recovered(self, request, queryset) -> None:
        self._apply(request, queryset, "check_recovery", "markRecovered",
                    lambda result: "marked recovered")

    @admin.action(description="Mark crashed")
    def mark_crashed(self, request, queryset) -> None:
        self._apply(request, queryset, "mark_session_crashed", "sessionId",
                    lambda result: "marked crashed")

    @admin.action(description="End session")
    def end_sessions(self, request, queryset) -> None:
        self._apply(request, queryset, "end_session", "sessionId", lambda result: "ended")

    @admin.action(description="Release its task locks")
    def release_locks(self, request, queryset) -> None:
        self._apply(request, queryset, "release_session_locks", "sessionId",
                    lambda result: "released " + (", ".join(result["released"])
                                                  or "no locks (it held none)"))

    def _apply(self, request, queryset, tool: str, argument: str, done) -> None:
        for session in queryset:
            try:
                result = run_tool(request, tool, {argument: session.session_id})
            except OrchestratorError as exc:
                self.message_user(request, f"{session.session_id}: {exc.code} {exc.message}",
                                  messages.WARNING)
            else:
                self.message_user(request, f"{session.session_id}: {done(result)}")


@admin.register(SessionHandoff)
class SessionHandoffAdmin(ProjectScopedAdmin, MissingObjectIs404):
    list_display = ("project_id", "project", "project_dir", "from_session_id", "from_agent",
                    "active", "created_at",
                    "consumed_at", "consumed_by_session_id", "last_confirmed_at")
    list_filter = ("active", ProjectFilter)
    readonly_fields = [f.name for f in SessionHandoff._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
