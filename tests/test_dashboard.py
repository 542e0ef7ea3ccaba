"""`tenforge dashboard` serves Optuna's dashboard on the store's study journal."""

import json
import subprocess
import sys
import time
import urllib.request

import optuna

from models.search import _storage
from tasks.training import study_storage
from tests.conftest import ROOT, run_cli
from tests.service_client import free_port


def test_the_dashboard_shows_the_stores_studies(tmp_path):
    db = str(tmp_path / "store.duckdb")
    study = optuna.create_study(study_name="by_task.seed0", storage=_storage(study_storage(db)))
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=3)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tenforge.cli", "dashboard", "--port",
                               str(port), "--db", db], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies",
                                            timeout=5) as response:
                    studies = json.loads(response.read())["study_summaries"]
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, \
                    server.stdout.read().decode()[-2000:] if server.poll() is not None else ""
                time.sleep(0.5)
        assert [s["study_name"] for s in studies] == ["by_task.seed0"]
        busy = run_cli("dashboard", "--port", str(port), "--db", db)  # the port is taken now
        assert busy.returncode == 2 and f"port {port} on 127.0.0.1 is taken" in busy.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_no_studies_yet_is_one_line(tmp_path):
    result = run_cli("dashboard", "--db", str(tmp_path / "store.duckdb"))
    assert result.returncode == 2 and "run `tenforge search` first" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
