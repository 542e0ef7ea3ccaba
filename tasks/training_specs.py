"""The validated requests of the training flows: search, pretrain, transfer.

Each `validate_*` checks every parameter against the store with lookups and counting queries
(models.dataset.check_dataset), never loading a dataset or a model's weights, and returns a
frozen spec (core.spec). The flows' first tasks load the data, once.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.errors import TenforgeError
from core.spec import Spec
from models.dataset import DataSpec, check_dataset
from models.splits import SplitSpec, check_holdout
from storage.store import Store
from tasks.hardware import profile_name, profile_names
from tasks.training import default_hardware, default_study_name, model_config, study_storage
from tasks.validation import check_db_path


def _existing_store(db: str | None, hint: str) -> str:
    path = check_db_path(db)
    if not Path(path).exists():
        raise TenforgeError(f"store {path} does not exist; {hint}")
    return path


def check_holdout_collected(path: str, hardware: tuple[str, ...],
                            holdout: tuple[str, ...]) -> None:
    """Refuse, before any training, held-out networks that no profile collected: the gate
    scores a network only where a profile measured MIN_NETWORK_COVERAGE of its work, so a
    network of which these profiles measured only the tasks it shares with others could not
    be scored after the model had trained."""
    from models.dataset import network_name
    from models.evaluate import MIN_NETWORK_COVERAGE
    from storage.queries import network_coverage_shares

    with Store(path, read_only=True) as store:
        shares = network_coverage_shares(store, hardware)
    short = {n: shares.get(network_name(n), 0.0) for n in holdout}
    short = {n: s for n, s in short.items() if s < MIN_NETWORK_COVERAGE}
    if short:
        collected = sorted(n for n, s in shares.items() if s >= MIN_NETWORK_COVERAGE)
        raise TenforgeError(
            "holdout network " + ", ".join(f"{n} ({s:.1%} of its work)" for n, s in short.items())
            + f" was not collected on {', '.join(hardware)}: a held-out network is scored where "
            f"a profile measured at least {MIN_NETWORK_COVERAGE:.0%} of it; collect it first "
            "(`tenforge collect --networks NAME --hardware H`) or hold out networks these "
            f"profiles collected ({', '.join(collected)})")


@dataclass(frozen=True)
class SearchFlowSpec(Spec):
    """A validated search request. (models.search.SearchSpec is the search space inside it.)"""

    data_spec: dict[str, Any] = field(default_factory=dict)  # models.dataset.DataSpec.to_json()
    split_spec: dict[str, Any] = field(default_factory=dict)  # models.splits.SplitSpec fields
    search_spec: dict[str, Any] = field(default_factory=dict)  # models.search.SearchSpec fields
    study: str = ""


def validate_search(db: str | None, hardware: list[str] | None, networks: list[str] | None,
                    split: str, holdout: list[str] | None, families: list[str] | None,
                    trials: int, time_budget_s: float, metric: str, multi_objective: bool,
                    seed: int, max_epochs: int, study: str | None,
                    register_if_better: bool = False) -> SearchFlowSpec:
    """Check every search parameter against the store before any work."""
    if register_if_better and split != "by_network":
        raise TenforgeError("register-if-better compares models on networks none of them "
                            "trained on: use it with --split by_network --holdout NETWORKS")
    from models.search import FAMILIES, SearchSpec, open_study_signature

    path = _existing_store(db, "collect data or load the seed first "
                               "(`tenforge dataset load-seed --db ...`)")
    from models.search import TRACE_FAMILIES

    data_spec = DataSpec(hardware=tuple(profile_names(hardware) or default_hardware(path)),
                         networks=tuple(networks or ()),
                         traces=bool(set(families or FAMILIES) & set(TRACE_FAMILIES)))
    if split == "by_target":  # held-out hardware may be named by alias too
        holdout = profile_names(holdout)
    split_spec = SplitSpec(kind=split, seed=seed, holdout=tuple(holdout or ()))
    search_spec = SearchSpec(families=tuple(families or FAMILIES), trials=trials,
                             time_budget_s=time_budget_s, metric=metric,
                             multi_objective=multi_objective, seed=seed, max_epochs=max_epochs)
    # What only the loaded data shows (an empty validation part) is refused by the first task.
    found_data = check_dataset(path, data_spec)
    check_holdout(split_spec, data_spec.hardware, found_data.networks)
    if register_if_better:  # the gate scores the held-out networks: they must be scorable
        check_holdout_collected(path, data_spec.hardware, split_spec.holdout)
    name = study or default_study_name(data_spec, split_spec)
    found = open_study_signature(name, study_storage(path))
    if found is not None and found != search_spec.signature():
        raise TenforgeError(f"study {name!r} exists with another search space "
                            f"({json.dumps(found)}); pick another --study name or the same "
                            "families, metric and epochs")
    return SearchFlowSpec(db=path, data_spec=data_spec.to_json(), split_spec=asdict(split_spec),
                          search_spec=asdict(search_spec), study=name)


@dataclass(frozen=True)
class PretrainSpec(Spec):
    """A validated pretrain request: the source profiles resolved, the family decided."""

    hardware: tuple[str, ...] = ()
    networks: tuple[str, ...] = ()
    family: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    from_model: str | None = None
    holdout: tuple[str, ...] = ()  # networks kept out and scored (by_network)
    register_if_better: bool = False


def validate_pretrain(db: str | None, hardware: list[str] | None, family: str,
                      params: dict | None, from_model: str | None,
                      networks: list[str] | None, holdout: list[str] | None = None,
                      register_if_better: bool = False) -> PretrainSpec:
    """Check pretrain's parameters before any work."""
    from models.registry import model_class

    if register_if_better and not holdout:
        raise TenforgeError("register-if-better compares models on networks none of them "
                            "trained on: name them with --holdout NETWORKS")

    path = _existing_store(db, "load the seed first (`tenforge dataset load-seed --db ...`)")
    if from_model:
        family, _ = model_config(path, from_model)
    model_class(family)(**(params or {}))  # unknown hyperparameters fail here, in one line
    sources = tuple(profile_names(hardware) or default_hardware(path))
    found = check_dataset(path, DataSpec(hardware=sources, networks=tuple(networks or ())))
    unknown = [n for n in holdout or () if n not in found.networks]
    if unknown:
        raise TenforgeError(f"holdout network {', '.join(unknown)} has no measurements on "
                            f"{', '.join(sources)}; measured: {', '.join(sorted(found.networks))}")
    check_holdout_collected(path, sources, tuple(holdout or ()))
    return PretrainSpec(db=path, hardware=sources, networks=tuple(networks or ()),
                        family=family, params=dict(params or {}), from_model=from_model,
                        holdout=tuple(holdout or ()), register_if_better=register_if_better)


def check_strategy(parent_row: dict[str, Any], strategy: str) -> None:
    """Refuse a strategy the parent's family cannot do, before loading anything heavy."""
    from models.registry import model_class

    cls = model_class(parent_row["kind"])
    config = json.loads(parent_row["config_json"])
    if strategy != "residual" and strategy not in cls.STRATEGIES:
        raise TenforgeError(f"{parent_row['kind']} cannot be fine-tuned with strategy "
                            f"{strategy!r} (it supports: {', '.join(cls.STRATEGIES) or 'none'}; "
                            "any model supports residual)")
    if strategy == "multi_head" and not config.get("head_per_hardware"):
        raise TenforgeError(f"strategy multi_head needs a parent pre-trained with "
                            f"head_per_hardware=true; {parent_row['model_id']} has one head "
                            "(pretrain --params '{\"head_per_hardware\": true}')")


@dataclass(frozen=True)
class TransferSpec(Spec):
    """A validated transfer request: the parent model decided, the profile's real name."""

    parent: str = ""
    hardware: str = ""
    samples: int | None = None
    strategy: str = "full"
    networks: tuple[str, ...] = ()
    seed: int = 0


def validate_transfer(db: str | None, parent: str | None, hardware: str, samples: int | None,
                      strategy: str, networks: list[str] | None, seed: int = 0
                      ) -> TransferSpec:
    """Check transfer's parameters before any work."""
    from models.transfer import check_strategy_name

    path = _existing_store(db, "pre-train a model first (`tenforge pretrain`)")
    check_strategy_name(strategy)
    if samples is not None and samples < 1:
        raise TenforgeError(f"samples must be a positive number (or omitted for all), got "
                            f"{samples}")
    with Store(path, read_only=True) as store:
        if parent is None:  # the newest pre-trained model (scheduled transfers use this)
            parent = store.newest_pretrained()
            if parent is None:
                raise TenforgeError(f"no pre-trained model in {path}; run `tenforge pretrain` "
                                    "first or name a parent model")
        row = store.model_row(parent)  # an unknown parent fails here
    check_strategy(row, strategy)
    name = profile_name(hardware)
    # Counted, not loaded: the target's measurements. Whether its training tasks hold
    # `samples` of them needs the split, so the fine-tuning task checks that too.
    found_data = check_dataset(path, DataSpec(hardware=(name,), networks=tuple(networks or ())))
    if samples is not None and samples > found_data.candidates:
        raise TenforgeError(f"asked for {samples} target samples but {name} has only "
                            f"{found_data.candidates} measurements")
    return TransferSpec(db=path, parent=parent, hardware=name, samples=samples,
                        strategy=strategy, networks=tuple(networks or ()), seed=seed)
