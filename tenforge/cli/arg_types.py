"""argparse types and the parser class every command shares: a usage error is one line."""

from __future__ import annotations

import argparse
from typing import Callable


def names(value: str) -> list[str]:
    """A comma-separated list: "a, b," -> ["a", "b"]."""
    return [n.strip() for n in value.split(",") if n.strip()]


def int_at_least(minimum: int, expected: str) -> Callable[[str], int]:
    """An argparse type: an integer of at least `minimum`, else "expected <expected>, got ..."."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {number}")
        return number

    return parse


positive = int_at_least(1, "a positive integer")
non_negative = int_at_least(0, "a whole number, 0 or more")


def json_object(value: str) -> dict:
    import json

    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {value!r} ({exc.msg})")
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object like '{{\"hidden\": 64}}', "
                                         f"got {value!r}")
    return parsed


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (plus where to look) and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")
