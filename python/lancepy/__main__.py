"""``python -m lancepy``: the :mod:`lancepy.cli` command line."""

import sys

from lancepy.cli import main

sys.exit(main())
