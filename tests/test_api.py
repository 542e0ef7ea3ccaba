"""`import tenforge` from a directory outside the checkout: the functions people script, with
the checkout's floors found although site-packages has no `models` or `tasks` package, and
a user's own `models` package in the way."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, sys
import tenforge

with tenforge.open_store({db!r}) as store:
    count = store.scalar("SELECT count(*) FROM models")
cost_model = tenforge.cost_model(hardware="local-1t", db={db!r})
try:
    tenforge.compile("tiny_cnn", out="lib", hardware="local-1t", db={db!r})
except tenforge.TenforgeError as exc:
    refused = str(exc)
try:  # a retune's options are checked before any work, the search's ones too
    tenforge.retune("tiny_cnn", hardware="local-1t", db={db!r}, tile_mix=1.5, seed=1)
except tenforge.TenforgeError as exc:
    mix = str(exc)
import models
print(json.dumps({{"models": count, "refused": refused, "mix": mix,
                  "cost_model": type(cost_model).__name__, "floor": models.__file__,
                  "functions": [f for f in tenforge.__all__ if callable(getattr(tenforge, f))]}}))
"""


def test_import_tenforge_works_outside_the_checkout(pretrained_store, tmp_path):
    db, _ = pretrained_store
    # site-packages holds no top-level `models` or `tasks`: outside the checkout, without
    # tenforge, neither imports
    bare = subprocess.run([sys.executable, "-c", "import models"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert bare.returncode != 0 and "No module named 'models'" in bare.stderr
    # a user's project with its own `models` package: tenforge's own floors still win
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("MINE = True\n")
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(db=db)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["models"] == 1 and answer["cost_model"] == "TenforgeCostModel"
    assert "no retune of tiny_cnn on" in answer["refused"]  # one line, nothing written
    assert not (tmp_path / "lib").exists()
    assert answer["mix"].startswith("tile mix 1.5: give the share")
    assert Path(answer["floor"]).parent.parent == Path(__file__).resolve().parents[1]
    assert answer["functions"] == ["collect", "search", "pretrain", "transfer", "retune",
                                   "compile", "open_store", "cost_model", "TenforgeError"]
