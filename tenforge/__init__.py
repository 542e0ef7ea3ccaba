"""tenforge: learn how fast tensor programs run on each hardware target.

This installed package is deliberately thin: the command line (`tenforge.cli`) and the
project's error type. The work lives in the project root's flows/, tasks/, models/ and
storage/ folders, which `tenforge.cli` puts on sys.path (they are not installed, so no
site-packages gains a package called `models`).
"""

__version__ = "0.1.0"
