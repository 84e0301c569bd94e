"""Every page of the console under /admin/: one module per room of the data.

The admin classes live here, above the apps, rather than in each app's admin.py: a page
shows what several apps know (a task's row carries its orphaned flag, a sessions fact,
and its conflict history), and only the top layer may import them all. Actions call the
tool registry, like every other door.
"""

from console.admin import conflicts, global_context, graph, logins, sessions, tasks, tokens

__all__ = ["conflicts", "global_context", "graph", "logins", "sessions", "tasks", "tokens"]
