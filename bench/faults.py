"""Faults survived and bad input refused: kill the collect flow at random points, then check
nothing was lost or duplicated; feed the CLI wrong inputs and check each is refused cleanly.

1. Kills: `tenforge collect` (small ops on the 1-thread profile) is started --kills times and
   SIGKILLed (its whole process group: flow, Prefect server, measurement workers): a third at a
   random time in the first seconds (start-up, sampling), the rest just after a random
   measurement batch was committed. After each kill the store must open, every candidate must
   have its features, and no measurement seen before may disappear (lost) or appear twice
   (duplicates). A final run
   completes the collection: every candidate measured exactly once.
2. Search and pretrain kills: the search flow is SIGKILLed while an Optuna trial runs; the
   next run must mark that trial FAIL (interrupted), run it again, and copy every finished
   trial to search_trials. `pretrain` is SIGKILLed at random times; the registry may only ever
   list models whose artifacts load.
3. Bad input: every entry of bad_inputs() must exit with status 2 and one line naming the
   problem, and leave the store unchanged.

    .venv/bin/python bench/faults.py [--kills 20] [--search-kills 5] [--pretrain-kills 5]
        [--seed 0]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

if __package__ in (None, ""):  # `python bench/faults.py`: make `bench` importable
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import scratch_dir  # noqa: E402
from bench._faults_common import cli  # noqa: E402
from bench.bad_inputs import check_bad_inputs  # noqa: E402
from bench.fault_kills import (  # noqa: E402
    collect_args,
    kill_during_trials,
    kill_loop,
    kill_pretrain,
    store_state,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--search-kills", type=int, default=5,
                        help="SIGKILLs of the search flow during a trial")
    parser.add_argument("--pretrain-kills", type=int, default=5)
    parser.add_argument("--skip-bad-inputs", action="store_true")
    args = parser.parse_args()
    tmp = scratch_dir("faults")
    db = str(tmp / "killed.duckdb")

    if args.kills:
        totals = kill_loop(db, args.kills, args.candidates, random.Random(args.seed))
        final = cli(*collect_args(db, args.candidates))
        state = store_state(db)
        unmeasured = state["candidates"] - len({c for c, _ in state["measured"]})
        print(f"\nfinal run: exit {final.returncode}; {len(state['measured'])} measurements of "
              f"{state['candidates']} candidates, unmeasured {unmeasured}")
        print(f"kills done: {args.kills}; measurements lost: {totals['lost']}; duplicates: "
              f"{totals['duplicates'] + state['duplicates']}; inconsistent states: "
              f"{totals['inconsistent']}")
    if args.search_kills:
        search_db = str(tmp / "search.duckdb")
        cli("dataset", "load-seed", "--db", search_db)
        found = kill_during_trials(search_db, args.search_kills, 3, random.Random(args.seed))
        print(f"search kills: {args.search_kills} ({found['kills_in_a_trial']} inside a "
              f"trial); trials marked interrupted and re-run: {found['interrupted']}; still "
              f"RUNNING: {found['still_running']}; counted trials: {found['counted']} of 3; "
              f"finished trials missing from search_trials: {found['not_copied']}; final run "
              f"exit {found['exit']}; registered models {found['models']}, unloadable "
              f"{found['unloadable']}")
    if args.pretrain_kills:
        pretrain_db = str(tmp / "pretrain.duckdb")
        cli("dataset", "load-seed", "--db", pretrain_db)
        found = kill_pretrain(pretrain_db, args.pretrain_kills, random.Random(args.seed))
        print(f"pretrain kills: {args.pretrain_kills}; final run exit {found['exit']}; "
              f"registered models {found['models']}, unloadable {found['unloadable']}")
    if not args.skip_bad_inputs:
        tried, failures = check_bad_inputs(tmp)
        print(f"bad inputs tried: {tried}; refused cleanly: {tried - len(failures)}")
        for failure in failures:
            print(f"  not clean: {failure}")


if __name__ == "__main__":
    main()
