"""``python -m lncapacity.cli``: the same command line as ``lncapacity``."""

import sys

from . import main

sys.exit(main())
