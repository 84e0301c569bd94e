from django import template

from conflicts.services.console import attention_counts

register = template.Library()


@register.simple_tag
def conflict_attention_counts() -> dict[str, int]:
    """{critical, high, escalated} for the admin index banner."""
    return attention_counts()
