import sys

from orchestrator_hook.cli import main

sys.exit(main())
