"""The instruction-count bench (bench/instructions.py): the calls it counts succeed against
the real servers, each kind touching what it says, and its arithmetic. Counting them
under valgrind takes minutes a run: that is the bench's, not the suite's."""

from __future__ import annotations

import pytest

from bench.instructions import EDITED, KINDS, NONE, PROJECT, drive, per_call
from contexts.models import TaskContext
from sessions.models import ActiveSession, ToolInvocation

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("kind", [NONE, *KINDS])
def test_each_kind_of_call_runs_in_one_session_that_ends(kind):
    drive(kind, 3)
    session = ActiveSession.objects.get(project_id=PROJECT)
    assert session.status == "ended"
    # The first flush's three uses, and three for each counted flush that has some.
    uses = ToolInvocation.objects.filter(session_id=session.session_id,
                                         transport="hook").count()
    assert uses == (12 if kind.startswith("record_activity, 3 uses") else 3)
    key_files = TaskContext.objects.get(task_id=session.task_id).key_files
    new_files = [f"src/new_{n}.py" for n in range(3)] if "new key file" in kind else []
    assert key_files == [EDITED, *new_files]


def test_instructions_per_call_are_each_run_less_the_run_without_calls():
    assert per_call({NONE: 1_000, "heartbeat": 1_600, "claim_files, a file of its own": 4_000},
                    3) == {"heartbeat": 200.0, "claim_files, a file of its own": 1_000.0}
