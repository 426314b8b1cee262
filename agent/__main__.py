"""``python -m agent`` is ``ksmon``."""

import sys

from agent.cli import main

sys.exit(main())
