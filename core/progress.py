"""A text progress bar for log lines people watch in a terminal (and in Prefect's log view)."""


def bar(done: int, total: int, width: int = 24) -> str:
    """`[#########---------------] 37%`; a total of 0 counts as done."""
    fraction = min(done / total, 1.0) if total > 0 else 1.0
    filled = round(fraction * width)
    return f"[{'#' * filled}{'-' * (width - filled)}] {fraction:4.0%}"
