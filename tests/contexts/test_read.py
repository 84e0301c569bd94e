"""get_unified_context (spec 4.1.1): cache-aside reads and their metadata, version history,
the hot / warm / full tiers and the token budget; E1610 and E1611."""

from __future__ import annotations

import pytest

from contexts.models import GlobalContext
from contexts.services.save import save_task_changes
from foundation.backends import redis_store


@pytest.mark.django_db
def test_read_path_cache_aside_and_metadata(tools, make_task):
    make_task("rd-1")
    redis_store.delete("context:task:rd-1")
    miss = tools.ok("get_unified_context", {"taskId": "rd-1", "includeRelationships": False})
    assert miss["metadata"]["cacheHit"] is False and miss["metadata"]["source"] == "database"
    hit = tools.ok("get_unified_context", {"taskId": "rd-1", "includeRelationships": False})
    assert hit["metadata"]["cacheHit"] is True and hit["metadata"]["source"] == "cache"
    hybrid = tools.ok("get_unified_context", {"taskId": "rd-1", "includeVersionHistory": True})
    assert hybrid["metadata"]["source"] == "hybrid"
    assert hybrid["versionHistory"][0]["version"] == 1
    assert hybrid["conflicts"] == []
    plain = tools.ok("get_unified_context", {})
    assert plain["metadata"]["source"] == "database" and "task" not in plain
    assert set(plain["global"]) == {"hardRules", "techStack", "keyPaths", "services"}
    missing = tools.call("get_unified_context", {"taskId": "ghost"})
    assert (missing.status, missing.error_code) == (404, "E1610")


@pytest.mark.django_db
def test_global_context_missing_is_e1611(tools):
    GlobalContext.objects.all().delete()
    response = tools.call("get_unified_context", {})
    assert (response.status, response.error_code) == (404, "E1611")


@pytest.mark.django_db
def test_version_history_is_capped(tools, make_task, settings):
    settings.MAX_VERSIONS_LIMIT = 3
    make_task("vh-1")
    for i in range(5):
        save_task_changes("vh-1", {"iteration": i + 1})
    default = tools.ok("get_unified_context", {"taskId": "vh-1", "includeVersionHistory": True})
    assert [v["version"] for v in default["versionHistory"]] == [6, 5, 4]
    assert default["versionHistory"][0]["changeType"] == "manual"


@pytest.mark.django_db
def test_tiers_and_token_budget(tools, make_task):
    make_task("tier-1", technicalDecisions=["d" * 400] * 5)
    for i in range(5):
        save_task_changes("tier-1", {"iteration": i + 1}, change_summary="s" * 200)
    hot = tools.ok("get_unified_context", {"taskId": "tier-1", "depth": "hot",
                                           "includeVersionHistory": True})
    assert "relationships" not in hot and "versionHistory" not in hot and "task" in hot
    warm = tools.ok("get_unified_context", {"taskId": "tier-1", "depth": "warm",
                                            "includeVersionHistory": True})
    assert "relationships" in warm and "versionHistory" not in warm
    full = tools.ok("get_unified_context", {"taskId": "tier-1", "includeVersionHistory": True})
    assert full["metadata"]["dropped"] == []
    budget = full["metadata"]["tokenEstimate"] - 50
    cut = tools.ok("get_unified_context", {"taskId": "tier-1", "includeVersionHistory": True,
                                           "maxTokens": budget})
    assert cut["metadata"]["dropped"] == ["versionHistory"] and "relationships" in cut
    tiny = tools.ok("get_unified_context", {"taskId": "tier-1", "includeVersionHistory": True,
                                            "maxTokens": 10})
    assert tiny["metadata"]["dropped"] == ["versionHistory", "conflicts", "relationships"]
    assert tiny["task"]["technicalDecisions"]  # HOT is never dropped
