"""The human console for sessions: list with filters, a page with the resume prompt, tool
history, event log, unsaved changes and handoff; actions are tool calls (run_tool)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import IntegerField, OuterRef, Subquery
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from console.admin.base import (
    MissingObjectIs404,
    ProjectFilter,
    ProjectScopedAdmin,
    field_column,
    object_or_404,
    run_tool,
    session_agents,
    session_cell,
    task_cell,
    task_names,
)
from console.services.states import LIVE_STATUSES, MEANINGS, SessionState, session_state
from console.templatetags.console_format import (
    heartbeat_age,
    pretty_json,
    session_mark,
    short_id,
    when,
)
from contexts.models import TaskContext
from foundation.core.errors import OrchestratorError
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
# A handoff note's first characters, its label in the list (the whole note is on its page).
NOTE_CHARS = 80


@admin.register(ActiveSession)
class ActiveSessionAdmin(ProjectScopedAdmin, MissingObjectIs404):
    # Names before ids: the agent and the task's name lead, the 60-character session id is
    # shortened (whole on hover, one click to copy). The state mark replaces the stored
    # status and the recovery flag's icons (a green tick on a crash read as "fine").
    # Eight columns fit 1280 px; the compaction count is on the session's page.
    list_display = ("session", "agent", "project", "state", "task", "heartbeat",
                    "recovery", "started")
    list_display_links = ("session",)
    list_filter = (ProjectFilter, "status", "recovery_needed", "recovery_type", "project_dir")
    search_fields = ("session_id", "task_id", "project_dir")
    actions = ("mark_recovered", "mark_crashed", "end_sessions", "release_locks")
    fields = ("session_id", "state", "agent", "project", "status", "task", "compactions",
              "project_dir",
              "git_branch", "started", "last_seen", "ended", "recovery",
              "recovery_type", "ownership", "prompt", "unsaved", "conversation_summary",
              "timeline", "tasks_worked_on", "tool_history", "event_log", "handoff")
    readonly_fields = fields
    change_form_template = "console/session_change_form.html"

    def get_queryset(self, request):
        compactions = SessionDetail.objects.filter(session_id=OuterRef("session_id"))
        return super().get_queryset(request).annotate(
            compactions_n=Subquery(compactions.values("compaction_count")[:1],
                                   output_field=IntegerField()),
            console_agent=Subquery(compactions.values("agent_id")[:1]),
            console_paused_at=Subquery(compactions.values("paused_at")[:1]),
            **task_names("task_id", "console_task"))

    def has_add_permission(self, request) -> bool:
        return False  # sessions start through start_session only

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # read-only page; state changes are the actions below

    def get_urls(self):
        own = [path("<path:object_id>/recover/", self.admin_site.admin_view(self.recover_view),
                    name="agent_sessions_activesession_recover")]
        return own + super().get_urls()

    @staticmethod
    def judged(obj: ActiveSession) -> SessionState:
        paused_at = getattr(obj, "console_paused_at", None)
        if not hasattr(obj, "console_paused_at"):
            paused_at = SessionDetail.objects.filter(session_id=obj.session_id).values_list(
                "paused_at", flat=True).first()
        return session_state(obj.status, obj.recovery_needed, obj.last_heartbeat, paused_at,
                             timezone.now())

    @admin.display(description="session", ordering="session_id")
    def session(self, obj: ActiveSession) -> str:
        return short_id(obj.session_id)

    @admin.display(description="agent")
    def agent(self, obj: ActiveSession) -> str:
        agent = getattr(obj, "console_agent", None)
        if agent is None and not hasattr(obj, "console_agent"):
            agent = SessionDetail.objects.filter(session_id=obj.session_id).values_list(
                "agent_id", flat=True).first()
        return agent or "—"

    @admin.display(description="state")
    def state(self, obj: ActiveSession) -> str:
        judged = self.judged(obj)
        return session_mark(judged.state)

    @admin.display(description="task", ordering="task_id")
    def task(self, obj: ActiveSession) -> str:
        if not obj.task_id:
            return "—"
        name, task = getattr(obj, "console_task_name", None), getattr(obj, "console_task_pk",
                                                                      None)
        if not hasattr(obj, "console_task_pk"):
            name, task = TaskContext.objects.filter(task_id=obj.task_id).values_list(
                "name", "pk").first() or (None, None)
        return task_cell(obj.task_id, name, task)

    @admin.display(description="heartbeat", ordering="last_heartbeat")
    def heartbeat(self, obj: ActiveSession) -> str:
        judged = self.judged(obj)
        if judged.state not in ("live", "late", "overdue", "paused"):
            return when(obj.last_heartbeat)
        return heartbeat_age(judged.heartbeat_age_seconds, judged.state == "paused")

    @admin.display(description="recovery", ordering="recovery_needed")
    def recovery(self, obj: ActiveSession) -> str:
        if not obj.recovery_needed:
            return "—"
        if obj.status in LIVE_STATUSES:  # a compaction: the agent itself reloads
            return f"reload after {obj.recovery_type or 'compaction'}"
        return format_html('<strong class="needs-recovery">needs recovery</strong> ({})',
                           obj.recovery_type or obj.status)

    started = field_column("started_at", when, "started", ordering="started_at")

    last_seen = field_column("last_heartbeat", when, "last heartbeat")

    ended = field_column("ended_at", when, "ended")

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(
            request, {"title": "Sessions: choose one to see its state, prompt and history",
                      **(extra_context or {})})
        cl = getattr(response, "context_data", {}).get("cl")
        if cl is not None:
            # The count under the list, split by state: the stored "active" status alone
            # counted paused sessions as live (and the model's name, "active sessions",
            # made every ended and crashed row sound running).
            counts: dict[str, int] = {}
            now = timezone.now()
            for row in cl.queryset.values_list("status", "recovery_needed", "last_heartbeat",
                                               "console_paused_at"):
                state = session_state(*row, now).state
                counts[state] = counts.get(state, 0) + 1
            cl.console_state_counts = [(state, counts[state]) for state in MEANINGS
                                       if counts.get(state)]
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if obj is not None:
            judged = self.judged(obj)
            extra.update(session_state=judged, state_paused=judged.state == "paused",
                         can_recover=bool(obj.recovery_needed) and
                         obj.status not in LIVE_STATUSES,
                         recover_url=reverse("admin:agent_sessions_activesession_recover",
                                             args=[obj.pk]))
        return super().change_view(request, object_id, form_url, extra)

    def recover_view(self, request, object_id):
        """The crashed session page's "Mark recovered" button: check_recovery with
        markRecovered (the tool agents call), as the signed-in operator, recorded in the
        session's admin history with their name."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = object_or_404(ActiveSession, object_id)
        try:
            run_tool(request, "check_recovery", {"markRecovered": obj.session_id})
        except OrchestratorError as exc:
            self.message_user(request, f"{exc.code} {exc.message}", messages.WARNING)
        else:
            self.log_change(request, obj, f"Marked recovered (check_recovery markRecovered) "
                                          f"by {request.user.get_username()}")
            self.message_user(request, "Marked recovered: the session no longer needs "
                                       "recovery.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:agent_sessions_activesession_change",
                                            args=[obj.pk]))

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
        # Only a session that needs recovery has a resume prompt: a live one would be shown
        # "Recovery Required ... marked recovered", the opposite of its state.
        if not obj.recovery_needed:
            return format_html('<p id="no-resume-prompt">No recovery needed ({}).</p>',
                               self.judged(obj).meaning)
        return format_html('<pre id="resume-prompt">{}</pre>',
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
            ((e["kind"], when(e["at"]) if e["at"] else "now", e["kind"], e["text"])
             for e in entries))) if entries \
            else "none"

    @admin.display(description="tasks worked on")
    def tasks_worked_on(self, obj: ActiveSession) -> str:
        # agent_sessions_sessionwork: the same records the task graph's WORKS_ON edges come from.
        rows = SessionWork.objects.filter(session_id=obj.session_id).order_by("-started_at")
        if not rows:
            return "none"
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td>{}</td><td>since {}</td><td>as {}</td></tr>",
            ((short_id(r.task_id), when(r.started_at), r.agent_id or "-") for r in rows)))

    @admin.display(description="tool history (latest 20)")
    def tool_history(self, obj: ActiveSession) -> str:
        rows = ToolInvocation.objects.filter(session_id=obj.session_id)[:20]
        return format_html("<table>{}</table>", format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((when(r.timestamp), r.tool, "ok" if r.success else f"failed {r.error_code or ''}",
              r.transport) for r in rows))) if rows else "none"

    @admin.display(description=f"event log (latest {SHOWN_EVENTS})")
    def event_log(self, obj: ActiveSession) -> str:
        rows = list(SessionEvent.objects.filter(session_id=obj.session_id)
                    .order_by("-sequence")[:SHOWN_EVENTS])
        if not rows:
            return "none"
        return format_html('<table id="event-log">{}</table>', format_html_join(
            "", '<tr><td>#{}</td><td class="event-type">{}</td><td>{}</td><td>{}</td>'
                "<td>{}</td></tr>",
            ((e.sequence, e.event_type, e.role, e.content[:500],
              pretty_json(e.parts) if e.parts is not None else "")
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
                # The audit trail: the session's admin history names the operator.
                self.log_change(request, session, f"{tool}: {done(result)} "
                                                  f"by {request.user.get_username()}")
                self.message_user(request, f"{session.session_id}: {done(result)}")


@admin.register(SessionHandoff)
class SessionHandoffAdmin(ProjectScopedAdmin, MissingObjectIs404):
    # Names before ids: the note's first words lead (the link), the sessions that left and
    # took it are named by their agents with their ids shortened under them, times in the
    # console's one format. Eight columns fit 1280 px; the directory is on the note's page.
    list_display = ("note", "project", "left_by", "active", "created", "taken_by", "taken",
                    "confirmed")
    list_display_links = ("note",)
    list_filter = ("active", ProjectFilter)
    search_fields = ("from_session_id", "from_agent", "consumed_by_session_id", "summary")
    readonly_fields = [f.name for f in SessionHandoff._meta.fields]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            **session_agents("from_session_id", "console_from_agent"),
            **session_agents("consumed_by_session_id", "console_taken_agent"))

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="handoff note", ordering="summary")
    def note(self, obj: SessionHandoff) -> str:
        return Truncator(obj.summary or "(no summary)").chars(NOTE_CHARS)

    @admin.display(description="left by", ordering="from_agent")
    def left_by(self, obj: SessionHandoff) -> str:
        return session_cell(obj.from_session_id,
                            obj.from_agent or getattr(obj, "console_from_agent", None))

    @admin.display(description="taken by")
    def taken_by(self, obj: SessionHandoff) -> str:
        return session_cell(obj.consumed_by_session_id,
                            getattr(obj, "console_taken_agent", None))

    created = field_column("created_at", when, "left", ordering="created_at")

    taken = field_column("consumed_at", when, "taken", ordering="consumed_at")

    confirmed = field_column("last_confirmed_at", when, "last confirmed",
                             ordering="last_confirmed_at")
