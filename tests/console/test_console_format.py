"""The console's shared formats (console/templatetags/console_format.py) and session states
(console/services/states.py): one time format, short copyable ids, indented JSON, paths
that wrap only at separators, and a session judged against the crash threshold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template

from console.services.states import session_state
from console.templatetags.console_format import (
    breakable,
    heartbeat_age,
    pretty_json,
    relative,
    short_id,
    when,
)

NOW = datetime(2026, 11, 27, 21, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("seconds", "text"), [
    (2, "just now"), (42, "42 s ago"), (300, "5 min ago"), (3600 + 600, "1 h 10 min ago"),
    (7200, "2 h ago"), (2 * 86400 + 4 * 3600, "2 d 4 h ago"), (-120, "in 2 min")])
def test_relative_time(seconds, text):
    assert relative(NOW - timedelta(seconds=seconds), NOW) == text


def test_a_moment_is_relative_with_the_24_hour_absolute_time_on_hover(settings):
    html = str(when(datetime(2026, 11, 27, 15, 4, 5, tzinfo=UTC)))
    assert 'datetime="2026-11-27T15:04:05+00:00"' in html
    assert 'title="2026-11-27 15:04:05 UTC"' in html  # 24-hour: 15, not 3 PM
    assert when(None) == "—"


def test_a_long_id_is_shortened_with_the_whole_id_to_copy():
    long_id = "sess_2f7c9a1e4b5d6c7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a"
    html = str(short_id(long_id))
    assert ">sess_2f7c9…e2f3a<" in html and f'data-copy="{long_id}"' in html
    assert f'title="{long_id}"' in html
    assert ">sess-live<" in str(short_id("sess-live"))  # short ids whole


def test_json_is_indented_and_escaped_never_python_dict_text():
    html = str(pretty_json({"phase": "<build>", "files": ["a.py"]}))
    assert "&quot;phase&quot;: &quot;&lt;build&gt;&quot;" in html and "'phase'" not in html
    assert html.startswith('<pre class="json">{\n  ')


def test_a_path_breaks_only_after_separators():
    assert str(breakable("src/pricing.ts")) == \
        '<code class="breakable">src/<wbr>pricing.<wbr>ts</code>'
    assert "&lt;" in str(breakable("<x>"))


def test_template_use():
    rendered = Template("{% load console_format %}{{ s|short_id }} {% session_mark 'paused' %}"
                        " {{ 400|heartbeat_age }}").render(Context({"s": "x" * 40}))
    assert "mark-paused" in rendered and "no heartbeat expected" in rendered
    assert "hb-overdue" in rendered  # 400 s against the 5-minute default threshold


@pytest.mark.parametrize(("status", "recovery", "age", "paused", "state"), [
    ("active", False, 10, False, "live"),
    ("active", False, 200, False, "late"),
    ("active", False, 601, False, "overdue"),
    ("active", False, 601, True, "paused"),  # the paused agent: paused, not live
    ("compacted", True, 10, False, "live"),
    ("crashed", True, 900, False, "crashed"),
    ("recovered", False, 900, False, "recovered"),
    ("ended", False, 900, False, "ended")])
def test_session_state(status, recovery, age, paused, state):
    judged = session_state(status, recovery, NOW - timedelta(seconds=age),
                           NOW if paused else None, NOW)
    assert judged.state == state
    assert judged.needs_person == (state in ("crashed", "overdue"))


def test_heartbeat_age_of_a_paused_session_is_not_judged():
    assert "hb-paused" in str(heartbeat_age(900, True))
    assert "hb-fresh" in str(heartbeat_age(30))
