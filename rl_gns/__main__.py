"""``python -m rl_gns``: the same entry point as the ``rl-gns`` command."""

import sys

from rl_gns.commands import main

sys.exit(main())
