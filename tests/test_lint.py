"""The tree stays lint-clean: ruff with the rules pyproject.toml selects (sorted imports,
pyflakes, line length). Before this ran in CI, leftovers piled up between sessions (19 on
2026-12-01); a test that fails names them at once."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_tree_is_lint_clean():
    result = _ruff(".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_check_finds_a_planted_fault(tmp_path):
    # The rules are live: an unused import and an over-long line in a file under the same config.
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n" + "x = '" + "a" * 120 + "'\n")
    result = _ruff("--config", str(ROOT / "pyproject.toml"), str(bad))
    assert result.returncode == 1
    assert "F401" in result.stdout and "E501" in result.stdout
