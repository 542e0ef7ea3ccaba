"""Where the project lives: the checkout's root, which holds data/, hardware.toml and the
project folders (they are not installed; the CLI and pytest put this root on sys.path)."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
