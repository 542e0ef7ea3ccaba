"""tenforge: learn how fast tensor programs run on each hardware target, and tune with it.

`import tenforge` works from any directory once the project is installed (`pip install -e .`
from its checkout, as `./run` does) and is cheap: the functions below load the heavy parts on
first call (tenforge/api.py documents them).

    tenforge.collect  tenforge.search  tenforge.pretrain  tenforge.transfer
    tenforge.retune   tenforge.compile tenforge.open_store tenforge.cost_model

The installed package is deliberately thin (this API, the command line `tenforge.cli`, the
service): the work lives in the checkout's core/, storage/, models/, tasks/ and flows/
folders, which are put on sys.path on first use and never installed, so no site-packages
gains a package called `models` or `tasks`.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["collect", "search", "pretrain", "transfer", "retune", "compile", "open_store",
           "cost_model", "TenforgeError"]


def __getattr__(name: str) -> Any:  # PEP 562: the API loads on first use
    if name == "TenforgeError":
        from tenforge.api import _ready

        _ready()
        from core.errors import TenforgeError

        return TenforgeError
    if name in __all__:
        from tenforge import api

        return getattr(api, name)
    raise AttributeError(f"module 'tenforge' has no attribute {name!r}")
