"""Train / validation / test splits of a Dataset, seeded and reproducible.

- within_task: candidates of every task are shuffled into the three parts (optimistic: the
  model has seen each test task).
- by_task: whole workloads go to one part (on every hardware alike), so test tasks are unseen.
- by_target: the test part is whole hardware profiles (`holdout`), train/valid the others.
- by_network: the test part is every task of the held-out networks (`holdout`); a task shared
  with a training network counts as a test task and is removed from training. The validation
  part is whole networks too (seeded), so early stopping and a search's model choice reward
  ranking networks the model has not seen.

Headline numbers use by_task, by_target or by_network (DESIGN.md section 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from core.errors import TenforgeError
from models.dataset import Dataset, network_family


@dataclass(frozen=True)
class SplitSpec:
    kind: str = "by_task"
    seed: int = 0
    valid_fraction: float = 0.15
    test_fraction: float = 0.2
    holdout: tuple[str, ...] = field(default=())  # hardware (by_target) or networks (by_network)

    def __post_init__(self) -> None:
        object.__setattr__(self, "holdout", tuple(self.holdout))
        if self.kind not in SPLITS:
            raise TenforgeError(f"unknown split {self.kind!r}; choose one of {', '.join(SPLITS)}")
        if not (0 <= self.valid_fraction < 1 and 0 <= self.test_fraction < 1
                and self.valid_fraction + self.test_fraction < 1):
            raise TenforgeError("split fractions must be in [0, 1) and sum to less than 1, got "
                                f"valid {self.valid_fraction}, test {self.test_fraction}")
        if self.kind in ("by_target", "by_network") and not self.holdout:
            raise TenforgeError(f"split {self.kind} needs holdout=... (the "
                                f"{'hardware profiles' if self.kind == 'by_target' else 'networks'}"
                                " to test on)")


@dataclass(frozen=True, eq=False)
class Split:
    spec: SplitSpec
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray

    def sizes(self) -> dict[str, int]:
        return {"train": int(self.train.size), "valid": int(self.valid.size),
                "test": int(self.test.size)}


def _assign(keys: np.ndarray, rng: np.random.Generator, valid: float, test: float
            ) -> tuple[set, set, set]:
    """Shuffle distinct keys into (train, valid, test) sets by fraction."""
    unique = np.unique(keys)
    rng.shuffle(unique)
    n_test = int(round(test * unique.size))
    n_valid = int(round(valid * unique.size))
    return (set(unique[n_test + n_valid:]), set(unique[n_test:n_test + n_valid]),
            set(unique[:n_test]))


def _where(keys: np.ndarray, chosen: set) -> np.ndarray:
    return np.flatnonzero(np.isin(keys, list(chosen))) if chosen else np.array([], np.int64)


def check_holdout(spec: SplitSpec, hardware: Iterable[str], networks: Iterable[str]) -> None:
    """Refuse held-out hardware (by_target) or networks (by_network) the data does not hold,
    or that hold all of it (nothing left to train on)."""
    kind, known = {"by_target": ("hardware", sorted(hardware)),
                   "by_network": ("network", sorted(networks))}.get(spec.kind, ("", []))
    unknown = [h for h in spec.holdout if h not in known] if kind else []
    if unknown:
        raise TenforgeError(f"holdout {kind} {', '.join(unknown)} is not in the dataset "
                            f"({', '.join(known)})")
    if kind and known and set(known) <= set(spec.holdout):
        raise _no_training_data(spec, f"every {kind} is held out")


def _no_training_data(spec: SplitSpec, sizes: Any) -> TenforgeError:
    return TenforgeError(f"split {spec.kind} leaves no training data ({sizes}); use more data "
                         "or another split")


def _within_task(data: Dataset, spec: SplitSpec, rng: np.random.Generator) -> tuple:
    order = rng.permutation(len(data))
    groups = data.group[order]
    # rank of each candidate within its group, as a fraction of the group size
    rank = np.empty(len(data))
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        rank[members] = np.arange(members.size) / members.size
    test = order[rank < spec.test_fraction]
    valid = order[(rank >= spec.test_fraction)
                  & (rank < spec.test_fraction + spec.valid_fraction)]
    train = order[rank >= spec.test_fraction + spec.valid_fraction]
    return train, valid, test


def _by_task(data: Dataset, spec: SplitSpec, rng: np.random.Generator) -> tuple:
    workload = data.group_workload[data.group]
    tr, va, te = _assign(workload, rng, spec.valid_fraction, spec.test_fraction)
    return _where(workload, tr), _where(workload, va), _where(workload, te)


def _held_out(data: Dataset, spec: SplitSpec, rng: np.random.Generator,
              in_test: np.ndarray) -> tuple:
    """Test = the held-out rows; the rest split by task into train and valid."""
    workload = data.group_workload[data.group]
    test = np.flatnonzero(in_test)
    rest = np.flatnonzero(~in_test)
    tr, va, _ = _assign(workload[rest], rng, spec.valid_fraction, 0.0)
    return (rest[np.isin(workload[rest], list(tr))], rest[np.isin(workload[rest], list(va))],
            test)


def _by_target(data: Dataset, spec: SplitSpec, rng: np.random.Generator) -> tuple:
    check_holdout(spec, data.hardware_names, ())
    hw = np.array(data.hardware_names)[data.candidate_hardware()]
    return _held_out(data, spec, rng, np.isin(hw, spec.holdout))


def _by_network(data: Dataset, spec: SplitSpec, rng: np.random.Generator) -> tuple:
    """A held-out name is every instance of it (resnet18 at each size and batch); one instance
    (resnet18@160) may be held out alone. Validation is whole networks too (_valid_networks):
    a model chosen on random tasks of its training networks is chosen for the wrong job."""
    labels = {n for nets in data.workload_networks.values() for n in nets}
    check_holdout(spec, (), labels | {network_family(n) for n in labels})
    in_test = rows_of_networks(data, spec.holdout)
    workload = data.group_workload[data.group]
    valid_families = _valid_networks(data, spec, rng, in_test)
    if not valid_families:  # too few networks left to hold one out for validation
        return _held_out(data, spec, rng, in_test)
    in_valid = ~in_test & np.isin(workload, list(_tasks_of(
        data, lambda n: network_family(n) in valid_families)))
    return np.flatnonzero(~in_test & ~in_valid), np.flatnonzero(in_valid), \
        np.flatnonzero(in_test)


def rows_of_networks(data: Dataset, names: Iterable[str]) -> np.ndarray:
    """Boolean mask of the rows whose task belongs to any network `names` names (a name is
    every instance and prepared graph of that network, resnet18@160 one instance), including
    tasks another network shares: what "held out" means for a network."""
    names = set(names)
    held = _tasks_of(data, lambda n: n in names or network_family(n) in names)
    return np.isin(data.group_workload[data.group], list(held))


def _tasks_of(data: Dataset, picks: Callable[[str], bool]) -> set[str]:
    """The workloads of every network (label) `picks` chooses."""
    return {w for w, nets in data.workload_networks.items() if any(picks(n) for n in nets)}


def _valid_networks(data: Dataset, spec: SplitSpec, rng: np.random.Generator,
                    in_test: np.ndarray) -> set[str]:
    """Whole network families, in a seeded order, until their rows outside the test part reach
    `valid_fraction` of those rows; empty when fewer than three families remain (validation
    would take half of what there is to learn from)."""
    workload = data.group_workload[data.group]
    rest = workload[~in_test]
    rows = dict(zip(*np.unique(rest, return_counts=True)))
    families = sorted({network_family(n) for w in rows for n in data.workload_networks.get(w, {})})
    if spec.valid_fraction == 0 or len(families) < 3:
        return set()
    chosen: set[str] = set()
    taken: set[str] = set()
    for family in rng.permutation(families):
        if sum(rows[w] for w in taken) >= spec.valid_fraction * rest.size or \
                len(chosen) == len(families) - 1:
            break
        chosen.add(str(family))
        taken |= {w for w in rows if any(network_family(n) == family
                                         for n in data.workload_networks.get(w, {}))}
    return chosen


# The registry: kind -> (data, spec, rng) -> (train, valid, test) row indices.
SPLITTERS = {"within_task": _within_task, "by_task": _by_task, "by_target": _by_target,
             "by_network": _by_network}
SPLITS = tuple(SPLITTERS)


def make_split(data: Dataset, spec: SplitSpec) -> Split:
    """Split `data` as `spec` says; raises if a part that must not be empty is."""
    train, valid, test = SPLITTERS[spec.kind](data, spec, np.random.default_rng(spec.seed))
    split = Split(spec, np.sort(train), np.sort(valid), np.sort(test))
    if split.train.size == 0:
        raise _no_training_data(spec, split.sizes())
    return split


def sample_by_task(data: Dataset, pool: np.ndarray, n: int, seed: int,
                   per_task: int = 16) -> np.ndarray:
    """`n` rows of `pool` (sorted), whole tasks at a time: tasks in a seeded random order, up to
    `per_task` random candidates of each, until `n` rows are taken.

    This is how a few measurements on new hardware are best spent: a ranking model learns from
    pairs inside one task, and 200 rows drawn uniformly from ~130 tasks leave about one
    candidate per task, i.e. almost no pairs at all.
    """
    if n >= pool.size:
        return np.sort(pool)
    rng = np.random.default_rng(seed)
    groups = data.group[pool]
    chosen: list[np.ndarray] = []
    taken = 0
    for g in rng.permutation(np.unique(groups)):
        rows = pool[groups == g]
        take = rng.choice(rows, size=min(per_task, rows.size, n - taken), replace=False)
        chosen.append(take)
        taken += take.size
        if taken >= n:
            break
    return np.sort(np.concatenate(chosen))


def task_keys(data: Dataset) -> np.ndarray:
    """Per row, the task it belongs to as `profile/workload hash`: a key that means the same in
    every dataset of a store, whatever rows each holds (group numbers do not)."""
    names = np.asarray(data.hardware_names)[data.candidate_hardware()]
    return np.char.add(np.char.add(names.astype(str), "/"), data.group_workload[data.group])


def rows_in_tasks_of(data: Dataset, part: Dataset) -> np.ndarray:
    """The rows of `data` whose task `part` (another dataset of the same store) holds.

    What compares data kinds fairly (bench/leaderboard.py): split the random samples, then train
    on every source's rows of the training tasks (the search-biased ones too) and score both
    models on the same random rows of the held-out networks."""
    return np.flatnonzero(np.isin(task_keys(data), np.unique(task_keys(part))))
