"""Where the project lives: the checkout's root, which holds data/, hardware.toml and the
project folders (they are not installed; the CLI and pytest put this root on sys.path)."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def tenforge_version() -> str:
    """This code's version for provenance: the installed package's, else pyproject.toml's with
    `+checkout` (code run straight from a checkout that was never `pip install`ed, as on a
    borrowed GPU machine; its `runs` rows failed to start without this)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tenforge")
    except PackageNotFoundError:
        import tomllib

        with open(PROJECT_ROOT / "pyproject.toml", "rb") as f:
            return f"{tomllib.load(f)['project']['version']}+checkout"
