"""REST browsing of conflicts: /api/v1/conflicts/ with filters; 404 is E1642."""

from __future__ import annotations

import uuid


def test_list_filter_and_detail(tools, make_task):
    make_task("a", keyFiles=["1", "2", "3"])
    make_task("b", keyFiles=["1", "2", "3"])
    make_task("c", keyFiles=["9"])
    make_task("d", keyFiles=["9"])
    detected = tools.ok("detect_conflicts", {})["detected"]
    assert len(detected) == 2
    listed = tools.get("/api/v1/conflicts/")
    assert listed.status == 200 and listed.body["count"] == 2
    assert tools.get("/api/v1/conflicts/", severity="high").body["count"] == 1
    assert tools.get("/api/v1/conflicts/", type="file_conflict").body["count"] == 2
    assert tools.get("/api/v1/conflicts/", type="lock_collision").body["count"] == 0
    by_task = tools.get("/api/v1/conflicts/", task="d").body["results"]
    assert [(c["taskAId"], c["taskBId"]) for c in by_task] == [("c", "d")]
    assert tools.get("/api/v1/conflicts/", status="unresolved").body["count"] == 2
    assert tools.get("/api/v1/conflicts/", status="resolved").body["count"] == 0
    one = tools.get(f"/api/v1/conflicts/{detected[0]['id']}/")
    assert one.status == 200 and one.body["id"] == detected[0]["id"]
    assert one.body["resolutionStatus"] == "unresolved" and one.body["detectedBy"] == "system"


def test_unknown_conflict_is_e1642(tools):
    for conflict_id in (uuid.uuid4(), "not-a-uuid"):
        response = tools.get(f"/api/v1/conflicts/{conflict_id}/")
        assert (response.status, response.error_code) == (404, "E1642")
