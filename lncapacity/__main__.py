"""``python -m lncapacity``: the same command line as ``lncapacity``."""

import sys

from .cli import main

sys.exit(main())
