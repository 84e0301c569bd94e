"""report_conflict: an agent or a person records a conflict (spec_contradiction by default),
stored once however often it is reported, listed by detect_conflicts; E1641, E1610."""

from __future__ import annotations

from tests.conflicts.conftest import detect


def test_report_conflict_records_a_spec_contradiction_once(tools, make_task):
    make_task("a")
    make_task("b")
    payload = {"taskAId": "a", "taskBId": "b", "severity": "critical",
               "description": "A says REST, B says GraphQL",
               "evidence": {"field": "technicalDecisions", "expectedValue": ["REST"],
                            "actualValue": ["GraphQL"], "location": "spec 4.1"}}
    first = tools.ok("report_conflict", payload)
    assert first["created"] is True
    assert first["conflict"]["conflictType"] == "spec_contradiction"
    assert first["conflict"]["detectedBy"] == "agent"
    again = tools.ok("report_conflict", {**payload, "detectedBy": "manual"})
    assert again["created"] is False and again["conflict"]["id"] == first["conflict"]["id"]
    listed = detect(tools, taskIds=["a"])
    assert listed["summary"]["criticalCount"] == 1
    assert [c["id"] for c in listed["existing"]] == [first["conflict"]["id"]]
    bad = tools.call("report_conflict", {**payload, "conflictType": "nonsense"})
    assert bad.error_code == "E1641"
    assert tools.call("report_conflict", {**payload, "taskBId": "ghost"}).error_code == "E1610"
