"""Nothing the project reads from disk runs as code: no pickle, no unsafe torch.load, no eval.

Model artifacts are JSON + xgboost/lightgbm text + torch tensors loaded with weights_only=True;
datasets and MetaSchedule databases are JSON/Parquet; SQL values are bound parameters (the
f-strings in storage/ only splice column names from code). This guards against a regression.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for d in ("models", "tasks", "storage", "flows", "tenforge", "bench")
           for p in (ROOT / d).rglob("*.py")]
FORBIDDEN = [
    (re.compile(r"^\s*(import|from)\s+(pickle|cloudpickle|dill|joblib)\b", re.M),
     "a pickle import"),
    (re.compile(r"\b(pickle|cloudpickle|dill|joblib)\.loads?\("), "unpickling"),
    (re.compile(r"torch\.load\((?![^)]*weights_only=True)"), "torch.load without weights_only"),
    (re.compile(r"(?<![\w.])(eval|exec)\("), "eval/exec"),
]


def test_no_source_file_unpickles_or_evaluates_what_it_reads():
    assert len(SOURCES) > 30
    found = [f"{path.relative_to(ROOT)}: {what}" for path in SOURCES
             for pattern, what in FORBIDDEN if pattern.search(path.read_text())]
    assert found == []


def test_the_patterns_catch_what_they_should():
    bad = "import pickle\nx = pickle.loads(b)\nm = torch.load(p)\neval(s)\n"
    assert all(pattern.search(bad) for pattern, _ in FORBIDDEN)
    assert not FORBIDDEN[2][0].search("torch.load(p, weights_only=True)")
    assert not FORBIDDEN[3][0].search("self.net.eval()")
