"""What the fault benches share: the project on sys.path, the 1-thread profile they measure
on, and running `tenforge` as a user would, in a fresh process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from tasks.hardware import detect_local_profiles  # noqa: E402

PROFILE = detect_local_profiles()[-1].name


def cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tenforge.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)
