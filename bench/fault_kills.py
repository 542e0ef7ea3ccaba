"""Kill benches: SIGKILL `tenforge collect`, `search` and `pretrain` at random points and check
that the store, the study and the model registry stay consistent (bench/faults.py runs them)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

from bench._faults_common import PROFILE, ROOT, cli
from storage.store import Store


def collect_args(db: str, candidates: int) -> list[str]:
    return ["collect", "--hardware", PROFILE, "--networks", "matmul,dense_bias_relu,conv2d",
            "--candidates", str(candidates), "--measure-batch", "4", "--db", db]


def store_state(db: str) -> dict:
    """What must hold after any kill: the store opens and its counts add up."""
    with Store(db, read_only=True) as store:
        measured = {(c, s) for c, s in store.query(
            "SELECT candidate_id, settings_id FROM measurements")}
        rows = store.scalar("SELECT count(*) FROM measurements")
        return {
            "measured": measured,
            "duplicates": rows - len(measured),
            "candidates": store.scalar("SELECT count(*) FROM candidates"),
            "without_features": store.scalar(
                "SELECT count(*) FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM features f "
                "WHERE f.candidate_id = c.candidate_id)"),
            "partial": store.scalar("SELECT count(*) FROM measurements WHERE (error_kind IS "
                                    "NULL) = (mean_latency_s IS NULL)"),
        }


def kill_loop(db: str, kills: int, candidates: int, rng: random.Random,
              delays: tuple[float, float] = (3.0, 40.0)) -> dict:
    lost = duplicates = broken = 0
    before: set = set()
    if Path(db).exists():
        before = store_state(db)["measured"]
    for number in range(1, kills + 1):
        # A third of the kills land anywhere in the first `delays` seconds (start-up, import,
        # sampling); the rest right after a random measurement batch has been committed, so
        # kills cover the measuring phase however slow the machine is.
        early = rng.random() < 1 / 3
        delay = rng.uniform(*delays)
        after_batches = rng.randint(1, 3)
        proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli",
                                 *collect_args(db, candidates)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        outcome = "finished before the kill"
        start = time.monotonic()
        if early:
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                outcome = f"killed after {delay:.1f} s"
        else:
            batches = 0
            for line in proc.stdout:
                if "% measured " in line:  # a committed batch (tasks.collect.Progress)
                    batches += 1
                    if batches >= after_batches:
                        time.sleep(rng.uniform(0.0, 2.0))  # mid-way into the next batch
                        outcome = (f"killed {time.monotonic() - start:.1f} s in, after "
                                   f"{batches} committed batches")
                        break
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout:
            proc.stdout.close()
        time.sleep(0.5)
        if not Path(db).exists():
            print(f"kill {number}/{kills}: {outcome}; no store yet", flush=True)
            continue
        try:
            state = store_state(db)
        except Exception as exc:  # noqa: BLE001 - a store that does not open is the failure
            broken += 1
            print(f"kill {number}/{kills}: {outcome}; STORE BROKEN: {exc}", flush=True)
            continue
        lost += len(before - state["measured"])
        duplicates += state["duplicates"]
        broken += bool(state["without_features"] or state["partial"])
        print(f"kill {number}/{kills}: {outcome}; {len(state['measured'])} measured of "
              f"{state['candidates']} candidates, lost {len(before - state['measured'])}, "
              f"duplicates {state['duplicates']}", flush=True)
        before = state["measured"]
    return {"lost": lost, "duplicates": duplicates, "inconsistent": broken}


def search_args(db: str, trials: int, hardware: str | None = None) -> list[str]:
    """A small MLP search on resnet18 + mobilenet_v2, on `hardware` (default: every profile)."""
    scope = ["--hardware", hardware] if hardware else []
    return ["search", "--families", "mlp", "--networks", "resnet18,mobilenet_v2", *scope,
            "--max-epochs", "60", "--trials", str(trials), "--time-budget", "900", "--seed", "3",
            "--db", db]


def running_trials(db: str) -> list[int]:
    """Numbers of the RUNNING trials in the store's Optuna journal (none if no journal)."""
    import optuna

    from models.search import _storage
    from tasks.training import study_storage

    journal = study_storage(db)
    if not journal.exists():
        return []
    storage = _storage(journal)
    return [t.number for summary in optuna.get_all_study_summaries(storage)
            for t in optuna.load_study(study_name=summary.study_name, storage=storage)
            .get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))]


def kill_during_trials(db: str, kills: int, trials: int, rng: random.Random,
                       hardware: str | None = None) -> dict:
    """SIGKILL the search flow while an Optuna trial runs, `kills` times, then finish the study.
    Every killed trial must end FAIL (interrupted) and be run again; the finished trials must
    all be in search_trials; every registered model must load."""
    landed = 0
    for number in range(1, kills + 1):
        # the trial the last kill interrupted is still RUNNING in the journal until this run
        # fails it: wait for a trial of this run
        stale = set(running_trials(db))
        proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli",
                                 *search_args(db, trials, hardware)],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        start = time.monotonic()
        outcome = "finished before the kill"
        offset = rng.uniform(0.0, 2.0)  # somewhere inside the trial
        while proc.poll() is None and time.monotonic() - start < 600:
            if not set(running_trials(db)) - stale:
                time.sleep(0.2)
                continue
            time.sleep(offset)
            # Frozen, the journal says whether a trial is still running: a kill only where one
            # is. A trial shorter than the offset (an MLP stopping early: 0.8-2.3 s) has ended;
            # then the next one is killed as soon as it is seen.
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGSTOP)
            inside = sorted(set(running_trials(db)) - stale)
            if inside:
                os.killpg(proc.pid, signal.SIGKILL)
                landed += 1
                outcome = f"killed {time.monotonic() - start:.1f} s in, during trial(s) {inside}"
                break
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)
            offset = 0.0
        proc.wait()
        print(f"search kill {number}/{kills}: {outcome}", flush=True)
    final = cli(*search_args(db, trials, hardware))
    import optuna

    from models.search import _storage
    from tasks.training import study_storage

    storage = _storage(study_storage(db))
    (summary,) = optuna.get_all_study_summaries(storage)
    study_trials = optuna.load_study(study_name=summary.study_name, storage=storage).get_trials()
    interrupted = [t.number for t in study_trials if t.user_attrs.get("interrupted")]
    counted = [t for t in study_trials if t.state.is_finished() and t.number not in interrupted]
    with Store(db, read_only=True) as store:
        copied = store.scalar("SELECT count(*) FROM search_trials")
    models, unloadable = registered_models(db)
    return {"exit": final.returncode, "kills_in_a_trial": landed,
            "interrupted": len(interrupted),
            "still_running": sum(t.state.name == "RUNNING" for t in study_trials),
            "counted": len(counted), "not_copied": len(study_trials) - copied,
            "models": models, "unloadable": unloadable}


def registered_models(db: str) -> tuple[int, int]:
    """How many models the registry lists, and how many of their artifacts fail to load."""
    from models.registry import load_model

    with Store(db, read_only=True) as store:
        paths = [p for (p,) in store.query("SELECT path FROM models")]
    unloadable = 0
    for path in paths:
        try:
            load_model(path)
        except Exception:  # noqa: BLE001 - any failure to load counts
            unloadable += 1
    return len(paths), unloadable


def kill_pretrain(db: str, kills: int, rng: random.Random) -> dict:
    """SIGKILL `tenforge pretrain` at random times, then run it to the end: the registry may
    only ever hold models whose artifacts load."""
    args = ["pretrain", "--family", "mlp", "--networks", "resnet18,mobilenet_v2", "--db", db]
    for number in range(1, kills + 1):
        proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli", *args], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        delay = rng.uniform(5.0, 40.0)
        try:
            proc.wait(timeout=delay)
            outcome = "finished before the kill"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            outcome = f"killed after {delay:.1f} s"
        print(f"pretrain kill {number}/{kills}: {outcome}", flush=True)
    final = cli(*args)
    models, unloadable = registered_models(db)
    return {"exit": final.returncode, "models": models, "unloadable": unloadable}
