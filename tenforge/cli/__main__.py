"""`python -m tenforge.cli ARGS`, as the `tenforge` command."""

import sys

from tenforge.cli import main

sys.exit(main())
