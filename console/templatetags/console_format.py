"""The console's one visual language, for templates (``{% load console_format %}``) and
for admin ``display`` methods (import the functions):

- ``{{ value|when }}``: a moment as "3 min ago" with the absolute time on hover
  (``YYYY-MM-DD HH:MM:SS`` 24-hour, in the operator's timezone: console.js rewrites the
  hover text into the browser's zone and keeps the relative text current; without
  JavaScript it is the server's TIME_ZONE). The one time format of every page.
- ``{{ value|short_id }}``: a long id shortened (head…tail) with the full id on hover and
  a copy button; short ids are shown whole (still copyable).
- ``{{ value|pretty_json }}``: a JSON value indented in a ``<pre>``, never Python's
  ``{'a': 1}`` text.
- ``{% session_mark state %}``: a session's state (console.services.states) as a coloured
  mark with its meaning in words; ``{{ age|heartbeat_age }}`` an age coloured against the
  crash threshold.

Styles are in console/static/console/console.css (``.when``, ``.short-id``, ``.mark-*``,
``.hb-*``), behaviour in console/static/console/console.js; both load on every admin page.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from console.services.states import MEANINGS, heartbeat_judgement

register = template.Library()

# Ids up to this many characters are shown whole; longer ones as HEAD…TAIL (16 characters:
# two of them and an agent name fit a 1280 px list).
SHORT_ID_MAX = 18
SHORT_ID_HEAD, SHORT_ID_TAIL = 10, 5
ABSOLUTE_FORMAT = "%Y-%m-%d %H:%M:%S"
NONE = "—"
# Two overlapping sheets, drawn in the text's colour: no font has to carry a glyph for it.
COPY_ICON = ('<svg width="11" height="11" viewBox="0 0 16 16" aria-hidden="true" '
             'fill="none" stroke="currentColor" stroke-width="1.6"><rect x="5" y="5" '
             'width="9" height="9" rx="1.5"/><path d="M11 5V3.5A1.5 1.5 0 0 0 9.5 2h-6A1.5 '
             '1.5 0 0 0 2 3.5v6A1.5 1.5 0 0 0 3.5 11H5"/></svg>')


def relative_text(seconds: float) -> str:
    """A duration the way the console says it: "just now", "42 s", "5 min", "3 h 10 min",
    "2 d 4 h" (whole units, largest two)."""
    seconds = int(abs(seconds))
    if seconds < 5:
        return "just now"
    if seconds < 60:
        return f"{seconds} s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if hours == 0:
        return f"{minutes} min"
    if days == 0:
        rest = minutes % 60
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    rest = hours % 24
    return f"{days} d {rest} h" if rest else f"{days} d"


def relative(moment: datetime, now: datetime | None = None) -> str:
    delta = ((now or timezone.now()) - moment).total_seconds()
    text = relative_text(delta)
    if text == "just now":
        return text
    return f"{text} ago" if delta >= 0 else f"in {text}"


def absolute(moment: datetime) -> str:
    """24-hour, in the current timezone (the server's TIME_ZONE unless one is activated),
    with the zone's name."""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    return f"{local.strftime(ABSOLUTE_FORMAT)} {local.tzname() or ''}".strip()


@register.filter(is_safe=True)
def when(moment: Any) -> SafeString | str:
    if moment is None or moment == "":
        return NONE
    if isinstance(moment, str):
        from django.utils.dateparse import parse_datetime

        parsed = parse_datetime(moment)
        if parsed is None:
            return moment
        moment = parsed
    return format_html('<time class="when" datetime="{}" title="{}">{}</time>',
                       moment.isoformat(), absolute(moment), relative(moment))


@register.filter(is_safe=True)
def short_id(value: Any) -> SafeString | str:
    if value is None or value == "":
        return NONE
    text = str(value)
    shown = text if len(text) <= SHORT_ID_MAX else \
        f"{text[:SHORT_ID_HEAD]}…{text[-SHORT_ID_TAIL:]}"
    return format_html('<span class="short-id"><code title="{}">{}</code><button type="button" '
                       'class="copy-id" data-copy="{}" title="Copy the full id" '
                       'aria-label="Copy {}">' + COPY_ICON + '</button></span>', text, shown,
                       text, text)


@register.filter(is_safe=True)
def pretty_json(value: Any) -> SafeString | str:
    if value is None:
        return NONE
    return format_html('<pre class="json">{}</pre>',
                       json.dumps(value, indent=2, ensure_ascii=False, default=str))


@register.simple_tag
def session_mark(state: str) -> SafeString:
    """A state mark with its meaning spelled out beside it (colour is never the only cue)."""
    return format_html('<span class="mark mark-{}" title="{}">{}</span>', state,
                       MEANINGS.get(state, state), state)


@register.filter(is_safe=True)
def heartbeat_age(seconds: Any, paused: bool = False) -> SafeString | str:
    """A heartbeat's age, coloured fresh / late / overdue against the crash threshold; a
    paused session's age is shown grey and not judged."""
    if seconds is None or seconds == "":
        return NONE
    judged = "paused" if paused else heartbeat_judgement(float(seconds))
    return format_html('<span class="hb hb-{}" title="heartbeat {}">{} ago</span>', judged,
                       judged, relative_text(float(seconds)))


BREAK_AFTER = "/._-:"


@register.filter(is_safe=True)
def breakable(value: Any) -> SafeString | str:
    """A path or dotted name that wraps only after ``/ . _ - :`` (a ``<wbr>`` there), never
    inside a word: ``src/pricing.ts`` may wrap as ``src/`` ``pricing.ts``, not ``pric ing``."""
    if value is None or value == "":
        return NONE
    from django.utils.html import escape

    out = []
    for char in str(value):
        out.append(escape(char))
        if char in BREAK_AFTER:
            out.append("<wbr>")
    return SafeString(f'<code class="breakable">{"".join(out)}</code>')


@register.filter(is_safe=True)
def shown(value: Any) -> SafeString | str:
    """A stored field's value on a diff or rollback page: objects and lists as indented
    JSON, text as itself (preformatted), nothing as "—"."""
    if value is None:
        return NONE
    if isinstance(value, dict | list | tuple | bool | int | float):
        return pretty_json(value)
    return format_html('<pre class="value">{}</pre>', value)


@register.filter(is_safe=True)
def seconds_ago(seconds: Any) -> SafeString | str:
    """An age in seconds (a last edit, a last run) as "5 min ago", unjudged."""
    if seconds is None or seconds == "":
        return NONE
    text = relative_text(float(seconds))
    return text if text == "just now" else f"{text} ago"
