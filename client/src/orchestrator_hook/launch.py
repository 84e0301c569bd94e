"""What Claude Code runs for each hook: ``<python> -S <this file> EVENT``.

The same as the ``orchestrator-hook`` console script, minus most of Python's start-up:
with ``-S`` the ``site`` module is not imported, so neither are the venv's site-packages
and their ``.pth`` files (an editable install's finder alone imports ``pathlib`` and
more), which on a hook that only appends a line is most of its time. The client needs
nothing but the standard library, so the only path it lacks is its own package's
parent: the repository root for an editable install, site-packages otherwise.
"""

import os
import sys

# Python put this file's directory first on sys.path: our package's modules would shadow
# the standard library's. Its parent, from which ``orchestrator_hook`` imports, instead.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))

from orchestrator_hook.cli import main  # noqa: E402

sys.exit(main())
