"""Several models of one family, trained alike but for their seed, ranking together.

Why: on held-out networks one lgbm + trace model's network-level top-1 moved by up to 0.15
with nothing but its seed (its bagging draws, and so where early stopping lands). Five averaged
were 0.653-0.690 where single seeds of the same splits were 0.606-0.633 by the median
(4 x86 profiles, resnet50 / mobilenet_v2 / bert held out, 3 splits; docs/cost-models.md).

Member i is `family` with `member_params`, this config's loss and hardware_features, and seed
`seed + i`. Each member's scores are divided by its scale, the mean spread (std) of its scores
within a task on the validation rows (the training rows without them), so that no member
outweighs the others by the size of its numbers; the bag's score is their sum. A scale fixed
at training time, not per call: MetaSchedule ranks one task's candidates over many calls, and
scores must compare across them. Members are saved as ordinary artifacts in member-<i>/.

`others` adds members of other families after those, each {"family", "params", "weight"}: a
blend, such as MetaSchedule's XGB beside lgbm members (it ranks channel-blocked tasks and the
Xeons' held-out rows as well as the bag, and the Zen CPUs' worse). Each is scaled like the rest
and counts `weight` (default 1) where a same-family member counts 1. Measured: XGB at weight 1
beside five lgbm gained 0.01-0.03 on two of three splits and lost 0.02 on the third; the
shipped bag stays lgbm alone (docs/cost-models.md, 2026-11-25).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TenforgeError
from models.base import CostModel, ModelConfig, Report, valid_peak1
from models.dataset import Dataset

SCALES_FILE = "bag.json"


@dataclass(frozen=True)
class BaggedConfig(ModelConfig):
    family: str = "lgbm"
    members: int = 5
    member_params: dict[str, Any] = field(default_factory=dict)
    others: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.members < 1:
            raise TenforgeError(f"a bag needs at least 1 member, not {self.members}")
        object.__setattr__(self, "others", tuple(_other(o) for o in self.others))
        for family, params in [(self.family, self.member_params),
                               *((o["family"], o["params"]) for o in self.others)]:
            if family == BaggedCostModel.kind:
                raise TenforgeError("a bag's members cannot be bags; name a family such as lgbm")
            clash = {"seed", "loss", "hardware_features"} & set(params)
            if clash:
                raise TenforgeError(f"a member's params cannot set {', '.join(sorted(clash))}: "
                                    "the bag's own settings apply to every member")

    def member_specs(self) -> list[tuple[str, dict[str, Any], float]]:
        """(family, params, weight) of each member, in member order."""
        return ([(self.family, self.member_params, 1.0)] * self.members
                + [(o["family"], o["params"], o["weight"]) for o in self.others])


def _other(spec: Any) -> dict[str, Any]:
    """One `others` entry, checked: {"family": str, "params": dict, "weight": number > 0}."""
    if not isinstance(spec, dict) or not isinstance(spec.get("family"), str) \
            or set(spec) - {"family", "params", "weight"}:
        raise TenforgeError(f"a bag's other member {spec!r} must be "
                            '{"family": NAME, "params": {...}, "weight": W} (params and weight '
                            "optional)")
    weight = spec.get("weight", 1.0)
    if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight <= 0:
        raise TenforgeError(f"a bag's other member {spec['family']} has weight {weight!r}; "
                            "give a number above 0")
    return {"family": spec["family"], "params": dict(spec.get("params") or {}),
            "weight": float(weight)}


def within_task_spread(scores: np.ndarray, group: np.ndarray) -> float:
    """Mean standard deviation of `scores` within each group of two or more rows (1.0 when
    no group varies: a constant model needs no scaling)."""
    spreads = [scores[group == g].std() for g in np.unique(group) if (group == g).sum() > 1]
    value = float(np.mean(spreads)) if spreads else 0.0
    return value if value > 0 else 1.0


class BaggedCostModel(CostModel):
    kind = "bagged"
    config_class = BaggedConfig

    def __init__(self, config: ModelConfig | None = None, **params: Any):
        super().__init__(config, **params)
        self.members: list[CostModel] = []
        self.scales: list[float] = []
        # members made now refuse bad params before any training, and say what the bag is:
        # the fine-tuning strategies they all have (each member fine-tuned alike), its inputs
        total = len(self.config.member_specs())
        probes = [self._new_member(i) for i in [0, *range(self.config.members, total)]]
        self.STRATEGIES = tuple(s for s in probes[0].STRATEGIES
                                if all(s in p.STRATEGIES for p in probes))
        self._takes_traces = any(p.takes_traces for p in probes)
        self._takes_asm = any(p.takes_asm for p in probes)

    @property
    def takes_traces(self) -> bool:
        return self._takes_traces

    @property
    def takes_asm(self) -> bool:
        return self._takes_asm

    def _new_member(self, index: int) -> CostModel:
        from models.registry import create_model

        c = self.config
        family, params, _ = c.member_specs()[index]
        return create_model(family, **params, seed=c.seed + index, loss=c.loss,
                            hardware_features=c.hardware_features)

    def _fit(self, train: Dataset, valid: Dataset | None, report: Report | None) -> dict:
        self.members = [self._new_member(i) for i in range(len(self.config.member_specs()))]
        infos = [member.fit(train, valid) for member in self.members]  # report: see below
        self._set_scales(valid if valid is not None else train)
        # Optuna prunes on one curve; a bag's members each have their own, so it reports once
        if report is not None and valid is not None:
            report(1, valid_peak1(self._predict, valid))
        return {"members": [{k: v for k, v in info.items() if k != "kind"} for info in infos]}

    def _fine_tune(self, train: Dataset, valid: Dataset | None, strategy: str,
                   report: Report | None) -> dict:
        infos = [member.fine_tune(train, valid, strategy) for member in self.members]
        self._set_scales(valid if valid is not None else train)
        return {"members": [{k: v for k, v in info.items() if k != "kind"} for info in infos]}

    def _set_scales(self, data: Dataset) -> None:
        self.scales = [within_task_spread(member.predict(data), data.group)
                       for member in self.members]

    def _predict(self, data: Dataset) -> np.ndarray:
        return sum(weight * member.predict(data) / scale for member, scale, (_, _, weight)
                   in zip(self.members, self.scales, self.config.member_specs()))

    def _save_weights(self, path: Path) -> None:
        for i, member in enumerate(self.members):
            member.save(path / f"member-{i}")
        (path / SCALES_FILE).write_text(json.dumps({"scales": self.scales}))

    def _load_weights(self, path: Path) -> None:
        from models.registry import load_model

        families = [family for family, _, _ in self.config.member_specs()]
        self.members = [load_model(path / f"member-{i}") for i in range(len(families))]
        for i, (member, family) in enumerate(zip(self.members, families)):
            if member.kind != family:
                raise TenforgeError(f"{path}/member-{i} is a {member.kind} model; this bag "
                                    f"holds {family} there")
        self.scales = [float(s) for s in json.loads((path / SCALES_FILE).read_text())["scales"]]
        if len(self.scales) != len(self.members):
            raise TenforgeError(f"{path}/{SCALES_FILE} has {len(self.scales)} scales for "
                                f"{len(self.members)} members")
