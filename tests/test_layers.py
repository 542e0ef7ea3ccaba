"""The floors of shared/DESIGN.md section 4, enforced on the source (docs/architecture.md).

    tenforge (CLI, service)  ->  flows  ->  tasks  ->  models  ->  storage  ->  core

A module may import its own package and the floors below it, never one above. Prefect lives in
flows/ and the task wrappers only; SQL lives in storage/ only.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ["core", "storage", "models", "tasks", "flows", "tenforge"]
PREFECT_ALLOWED = {"tasks/prefect_tasks.py", "tasks/prefect_reports.py",  # the task wrappers
                   "tasks/artifacts.py"}  # and the artifacts they publish
SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE|ALTER TABLE)\b")


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module) of every absolute import, function-level ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


@pytest.mark.parametrize("package", FLOORS)
def test_no_module_imports_a_floor_above_its_own(package: str) -> None:
    above = set(FLOORS[FLOORS.index(package) + 1:])
    wrong = [f"{p.relative_to(ROOT)}:{line} imports {module}" for p in _modules(package)
             for line, module in _imports(p) if module in above]
    assert not wrong, f"{package}/ may import only {FLOORS[:FLOORS.index(package) + 1]}: {wrong}"


def test_prefect_only_in_flows_and_the_task_wrappers() -> None:
    wrong = [f"{p.relative_to(ROOT)}:{line}" for package in FLOORS if package != "flows"
             for p in _modules(package) for line, module in _imports(p)
             if module == "prefect" and str(p.relative_to(ROOT)) not in PREFECT_ALLOWED]
    assert not wrong, f"Prefect imported outside flows/ and {sorted(PREFECT_ALLOWED)}: {wrong}"


def test_sql_only_in_storage() -> None:
    wrong = []
    for package in FLOORS:
        if package == "storage":
            continue
        for path in _modules(package):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and SQL.search(node.value) and "`tenforge query" not in node.value:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not wrong, f"SQL outside storage/ (add a function to storage/queries.py): {wrong}"


def test_nothing_reaches_into_the_store_connection() -> None:
    wrong = [f"{p.relative_to(ROOT)}" for package in FLOORS if package != "storage"
             for p in _modules(package) if re.search(r"\.con\.(execute|sql)\(", p.read_text())]
    assert not wrong, f"only storage/ talks to DuckDB directly: {wrong}"


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    """The rules above must be able to fail: a module with an upward import, found."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from flows.collect import collect\n")
    assert (2, "flows") in _imports(bad)
    assert SQL.search("SELECT count(*) FROM measurements")


@pytest.mark.parametrize("package", FLOORS)
def test_modules_stay_small(package: str) -> None:
    """One job per file: none over ~400 lines (split it into a package of named modules)."""
    big = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _modules(package)
           if (n := len(p.read_text().splitlines())) > 420]
    assert not big, big
