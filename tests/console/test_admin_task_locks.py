"""A task's lock in the console (issue 23, item 5; console/admin/task_locks.py): the task page
and the rollback confirmation show the holder, its agent and the expiry; a person who may
change tasks can release the lock and roll back in one step (release_task_lock through the
registry), anyone else sees the lock but not the action."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from contexts.models import ContextVersion, TaskContext
from foundation.backends import redis_store
from locks import services as locks
from sessions.models import ActiveSession
from tests.locks.conftest import write_lock

pytestmark = pytest.mark.django_db


@pytest.fixture
def locked(tools, make_task):
    """Task lk-1 (v2: phase one -> two), locked by session lk-s1 of agent opus."""
    make_task("lk-1", currentPhase="one")
    tools.ok("save_context_snapshot", {"taskId": "lk-1", "updates": {"currentPhase": "two"}})
    tools.ok("start_session", {"sessionId": "lk-s1", "taskId": "lk-1", "agentId": "opus"})
    tools.ok("acquire_task_lock", {"taskId": "lk-1", "sessionId": "lk-s1", "ttlSeconds": 600})
    return TaskContext.objects.get(task_id="lk-1")


@pytest.fixture
def viewer(db) -> Client:
    """A staff member who may view tasks, not change them."""
    user = User.objects.create_user("viewer", password="x", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_taskcontext"))
    client = Client()
    client.force_login(user)
    return client


def urls(task):
    return (reverse("admin:contexts_taskcontext_change", args=[task.pk]),
            reverse("admin:contexts_taskcontext_rollback", args=[task.pk]))


def test_task_page_shows_holder_agent_and_expiry(admin_client, locked):
    change, _ = urls(locked)
    html = admin_client.get(change).content.decode()
    assert 'id="task-lock"' in html and "Locked</strong>" in html
    assert "lk-s1" in html and "agent opus" in html and "expires " in html
    session_page = reverse("admin:agent_sessions_activesession_change",
                           args=[ActiveSession.objects.get(session_id="lk-s1").pk])
    assert f'href="{session_page}"' in html
    assert "E1613" in html


def test_expired_lock_is_shown_as_expired_and_no_lock_shows_nothing(admin_client, make_task):
    make_task("lk-2")
    make_task("lk-3")
    write_lock("lk-2", "gone-session", expires_in=-120)
    task = TaskContext.objects.get(task_id="lk-2")
    html = admin_client.get(urls(task)[0]).content.decode()
    assert "Expired lock</strong>" in html and "gone-session" in html
    assert "agent unknown" in html and "lock_collision" in html
    other = TaskContext.objects.get(task_id="lk-3")
    assert 'id="task-lock"' not in admin_client.get(urls(other)[0]).content.decode()


def test_locked_elements_are_listed(admin_client, tools, make_task):
    make_task("lk-4", keyFiles=["src/api.py"])
    tools.ok("save_context_snapshot", {"taskId": "lk-4",
                                       "updates": {"lockedElements": ["keyFiles"]}})
    task = TaskContext.objects.get(task_id="lk-4")
    html = admin_client.get(urls(task)[0]).content.decode()
    assert 'id="task-locked-elements"' in html and "<code>keyFiles</code>" in html


def test_confirmation_shows_the_lock_and_release_and_roll_back_works(admin_client, locked):
    change, rollback = urls(locked)
    confirm = admin_client.get(rollback, {"type": "version", "version": 1})
    html = confirm.content.decode()
    assert confirm.status_code == 200
    assert 'id="task-lock"' in html and "lk-s1" in html and "agent opus" in html
    assert 'id="release-and-roll-back"' in html and 'value="lk-s1"' in html
    # The plain rollback is refused by the lock, as before, and says so.
    refused = admin_client.post(rollback, {"type": "version", "version": 1}, follow=True)
    assert "E1613" in refused.content.decode()
    assert TaskContext.objects.get(task_id="lk-1").version == 2
    # Release and roll back: one click.
    done = admin_client.post(rollback, {"type": "version", "version": 1,
                                        "release_lock": "lk-s1"})
    assert done.status_code == 302 and done.url == change
    assert locks.current_lock("lk-1") is None
    task = TaskContext.objects.get(task_id="lk-1")
    assert (task.current_phase, task.version) == ("one", 3)
    assert ContextVersion.objects.get(task_id="lk-1", version=3).created_by == "admin:admin"
    html = admin_client.get(change).content.decode()
    assert "Released the lock of session lk-s1 on lk-1" in html and "Rolled back" in html
    assert 'id="task-lock"' not in html


def test_a_lock_taken_over_meanwhile_is_not_released(admin_client, locked, tools):
    _, rollback = urls(locked)
    redis_store.delete(locks.lock_key("lk-1"))  # lk-s1's lock went; lk-s2 took the task
    tools.ok("acquire_task_lock", {"taskId": "lk-1", "sessionId": "lk-s2"})
    answer = admin_client.post(rollback, {"type": "version", "version": 1,
                                          "release_lock": "lk-s1"})
    assert answer.status_code == 302 and answer.url == f"{rollback}?type=version&version=1"
    page = admin_client.get(answer.url).content.decode()
    assert "Lock not released: E1613" in page and "lk-s2" in page
    assert locks.current_lock("lk-1")["sessionId"] == "lk-s2"
    assert TaskContext.objects.get(task_id="lk-1").version == 2


def test_who_may_not_change_tasks_sees_the_lock_not_the_action(viewer, locked):
    change, rollback = urls(locked)
    assert "lk-s1" in viewer.get(change).content.decode()
    html = viewer.get(rollback, {"type": "version", "version": 1}).content.decode()
    assert 'id="task-lock"' in html and "lk-s1" in html and 'id="lock-refuses"' in html
    assert "release-and-roll-back" not in html
    refused = viewer.post(rollback, {"type": "version", "version": 1, "release_lock": "lk-s1"})
    assert refused.status_code == 403
    assert locks.current_lock("lk-1")["sessionId"] == "lk-s1"
    assert TaskContext.objects.get(task_id="lk-1").version == 2


def test_redis_down_says_the_lock_is_unknown(admin_client, make_task, settings):
    from tests.conftest import free_port

    make_task("lk-5")
    task = TaskContext.objects.get(task_id="lk-5")
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    page = admin_client.get(urls(task)[0])
    assert page.status_code == 200 and "Redis is unreachable" in page.content.decode()
