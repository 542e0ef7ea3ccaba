"""The version a run records: the installed package's, or the checkout's when nothing is
installed (code carried to a borrowed machine and run from its folder)."""

import importlib.metadata
import tomllib

from core.paths import PROJECT_ROOT, tenforge_version


def test_installed_version_is_recorded():
    assert tenforge_version() == importlib.metadata.version("tenforge")


def test_a_checkout_that_was_never_installed_still_names_its_version(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with open(PROJECT_ROOT / "pyproject.toml", "rb") as f:
        declared = tomllib.load(f)["project"]["version"]
    assert tenforge_version() == f"{declared}+checkout"
