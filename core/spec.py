"""Spec: a flow's request, validated once.

Each flow has one `validate_<flow>()` (next to the flow's task code) that checks every parameter
and returns a frozen Spec subclass. The CLI calls it before Prefect starts (a bad input costs a
second and writes nothing); the flow calls the same function first thing. It must stay cheap:
counting queries and lookups, never a dataset load or a folder created. Heavy loading happens
once, in the flow's first task.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Spec:
    """Base of every flow's validated request (a frozen dataclass; subclasses add fields)."""

    db: str  # the store's absolute path

    def as_run_params(self) -> dict[str, Any]:
        """The request as plain JSON values, as the store's `runs` row records it."""
        return {k: list(v) if isinstance(v, tuple) else v
                for k, v in dataclasses.asdict(self).items()}
