"""Admin: task_relationships (read-only list) and the task-graph page drawn with Cytoscape."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse

from console.admin.base import ProjectFilter, ProjectScopedAdmin, ReadOnlyAdmin, run_tool
from console.projects import project_names, selected_project
from contexts.models import TaskContext
from foundation.core.errors import OrchestratorError
from graph.models import TaskRelationship
from graph.tools import MAX_DEPTH

TASK_CHOICES_LIMIT = 1000


@admin.register(TaskRelationship)
class TaskRelationshipAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    list_display = ("source_task_id", "relationship_type", "target_task_id", "project",
                    "strength", "created_by", "created_at")
    list_filter = (ProjectFilter, "relationship_type")
    search_fields = ("source_task_id", "target_task_id")
    # Writes go through add/remove_task_relationship (cycle check, graph mirror).
    readonly_fields = [f.name for f in TaskRelationship._meta.fields]

    def get_urls(self):
        view = self.admin_site.admin_view(self.task_graph_view)
        return [path("task-graph/", view, name="graph_task_graph"), *super().get_urls()]

    def task_graph_view(self, request: HttpRequest) -> HttpResponse:
        task_id = request.GET.get("taskId") or None
        try:
            depth = min(max(int(request.GET.get("depth", 2)), 0), MAX_DEPTH)
        except ValueError:
            depth = 2
        include_completed = request.GET.get("includeCompleted") == "on"
        # The switcher's project: the whole graph is that project's (a focus task's
        # neighbourhood is its own project's anyway: relationships never leave one).
        project = selected_project(request)
        tasks = TaskContext.objects.order_by("task_id")
        if project is not None:
            tasks = tasks.filter(project_id=project)
        error, graph = None, None
        try:
            graph = run_tool(request, "get_task_graph", {
                **({"taskId": task_id} if task_id else {}),
                **({"projectId": project} if project else {}), "depth": depth,
                "includeCompleted": include_completed})
        except OrchestratorError as exc:
            if exc.code == "E1610":  # an unknown task in the address: the admin's 404 page
                raise Http404(exc.message) from None
            error = exc.message
        context = {
            **self.admin_site.each_context(request),
            "title": f"Task graph of {project_names(request)[project]}" if project
            else "Task graph",
            "opts": self.model._meta,
            "tasks": tasks.values_list("task_id", "name")[:TASK_CHOICES_LIMIT],
            "task_id": task_id or "",
            "depth": depth,
            "max_depth": MAX_DEPTH,
            "include_completed": include_completed,
            "graph": graph,
            "error": error,
        }
        if graph:
            context["ready"] = _with_links(graph["readyTasks"])
            context["blocked"] = _with_links(graph["blockedTasks"])
            # Every task the page can draw, for the click-to-open of the drawing.
            drawn = {n["taskId"] for key in ("nodes", "readyTasks", "blockedTasks")
                     for n in graph[key]}
            context["task_urls"] = {n["taskId"]: n["url"] for n in
                                    _with_links([{"taskId": t} for t in sorted(drawn)])
                                    if n["url"]}
        return TemplateResponse(request, "admin/graph/task_graph.html", context)


def _with_links(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each node with the URL of its task's admin page (when that page exists)."""
    pks = dict(TaskContext.objects.filter(task_id__in=[n["taskId"] for n in nodes])
               .values_list("task_id", "pk"))
    linked = []
    for node in nodes:
        try:
            url = reverse("admin:contexts_taskcontext_change", args=[pks[node["taskId"]]])
        except (KeyError, NoReverseMatch):
            url = None
        linked.append({**node, "url": url})
    return linked
