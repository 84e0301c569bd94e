"""The conflict-resolution console (console/admin/conflicts.py) through Django's test client
as staff (admin_client)."""

from __future__ import annotations

import json

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from conflicts.models import ContextConflict
from conflicts.selectors import conflicts_for_task
from contexts.models import TaskContext

CHANGELIST = reverse("admin:conflicts_contextconflict_changelist")


def change_url(conflict_id) -> str:
    return reverse("admin:conflicts_contextconflict_change", args=[conflict_id])


@pytest.fixture
def conflicts(tools, make_task):
    make_task("a", keyFiles=["s1", "s2", "s3", "a1"])
    make_task("b", keyFiles=["s1", "s2", "s3"])
    make_task("c", keyFiles=["x"])
    make_task("d", keyFiles=["x"])
    tools.ok("report_conflict", {"taskAId": "c", "taskBId": "d", "severity": "critical",
                                 "description": "contradiction",
                                 "evidence": {"field": "currentPhase", "expectedValue": "p1",
                                              "actualValue": "p2", "location": "spec"}})
    tools.ok("detect_conflicts", {})
    return {(c.task_a_id, c.conflict_type): c for c in ContextConflict.objects.all()}


def test_index_shows_unresolved_critical_and_high_counts(admin_client, conflicts):
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert 'id="conflicts-critical" class="severity-critical">1<' in page
    assert 'id="conflicts-high" class="severity-high">1<' in page


def test_list_has_severity_colours_and_filters(admin_client, conflicts):
    page = admin_client.get(CHANGELIST).content.decode()
    assert "background:#ba2121" in page and "background:#e67e22" in page
    for param, expected in (("severity__exact=high", 1), ("conflict_type__exact=file_conflict", 2),
                            ("resolution_status__exact=unresolved", 3), ("task=d", 2),
                            ("task=a", 1)):
        response = admin_client.get(f"{CHANGELIST}?{param}")
        assert response.status_code == 200, param
        assert response.context["cl"].result_count == expected, param


def test_conflict_page_shows_evidence_side_by_side(admin_client, conflicts):
    conflict = conflicts[("a", "file_conflict")]
    response = admin_client.get(change_url(conflict.pk))
    assert response.status_code == 200
    page = response.content.decode()
    sides = response.context["sides"]
    assert json.loads(sides["a"]["value"]) == ["s1", "s2", "s3", "a1"]
    assert json.loads(sides["b"]["value"]) == ["s1", "s2", "s3"]
    assert sides["field"] == "keyFiles" and sides["location"] == "task_contexts.key_files"
    for action in ("use_a", "use_b", "merge", "custom", "ignore", "escalated", "investigating"):
        assert f'value="{action}"' in page, action
    assert 'name="resolved_value"' in page


def test_use_b_button_resolves_through_the_service_as_the_admin(admin_client, conflicts,
                                                                 django_capture_on_commit_callbacks):
    conflict = conflicts[("a", "file_conflict")]
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(change_url(conflict.pk), {"action": "use_b",
                                                               "notes": "b owns"})
    assert response.status_code == 302
    conflict.refresh_from_db()
    assert conflict.resolution_status == "resolved" and conflict.resolved_by == "admin"
    assert conflict.resolution["notes"] == "b owns"
    assert TaskContext.objects.get(task_id="a").key_files == ["a1"]
    page = admin_client.get(change_url(conflict.pk)).content.decode()
    assert "nothing left to do" in page


def test_custom_button_applies_the_edited_value(admin_client, conflicts):
    conflict = conflicts[("c", "spec_contradiction")]
    value = json.dumps({"c": {"currentPhase": "agreed"}, "d": {"currentPhase": "agreed"}})
    admin_client.post(change_url(conflict.pk), {"action": "custom", "resolved_value": value})
    conflict.refresh_from_db()
    assert conflict.resolution_status == "resolved"
    assert {t.current_phase for t in TaskContext.objects.filter(task_id__in=["c", "d"])} == {
        "agreed"}


def test_bad_json_value_is_reported_and_changes_nothing(admin_client, conflicts):
    conflict = conflicts[("c", "spec_contradiction")]
    response = admin_client.post(change_url(conflict.pk),
                                 {"action": "merge", "resolved_value": "{not json"}, follow=True)
    assert "E1644" in response.content.decode()
    conflict.refresh_from_db()
    assert conflict.resolution_status == "unresolved"


def test_escalate_button_and_unknown_conflict(admin_client, conflicts):
    conflict = conflicts[("a", "file_conflict")]
    admin_client.post(change_url(conflict.pk), {"action": "escalated", "notes": "help"})
    conflict.refresh_from_db()
    assert conflict.resolution_status == "escalated"
    missing = admin_client.get(change_url("00000000-0000-0000-0000-000000000000"))
    assert missing.status_code == 404 and "Page not found" in missing.content.decode()


def test_bulk_ignore_and_escalate(admin_client, conflicts):
    ids = [str(c.pk) for c in conflicts.values()]
    admin_client.post(CHANGELIST, {"action": "bulk_escalate", "_selected_action": ids[:2]})
    admin_client.post(CHANGELIST, {"action": "bulk_ignore", "_selected_action": ids})
    statuses = sorted(ContextConflict.objects.values_list("resolution_status", flat=True))
    assert statuses == ["ignored", "ignored", "ignored"]
    ignored = ContextConflict.objects.first()
    assert ignored.resolved_by == "admin"


def test_task_history_partial(conflicts):
    html = render_to_string("conflicts/_task_history.html",
                            {"task_conflicts": conflicts_for_task("d")})
    assert html.count("<tr>") == 3  # header + two conflicts
    assert "spec_contradiction" in html and "file_conflict" in html
    assert change_url(conflicts[("c", "spec_contradiction")].pk) in html
