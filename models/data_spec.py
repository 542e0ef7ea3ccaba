"""What a cost-model dataset is made of (models/dataset.py loads it): the hardware profiles,
networks, feature extractor, candidate sources, extra columns and label statistic. Its JSON is
part of a model's lineage, and leaves out what is at its default where the option is newer than
the lineages recorded without it, so their fingerprints still hold."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.errors import TenforgeError

CANDIDATE_SOURCES = ("sampled", "tuning", "imported")  # candidates.source (storage/schema.sql)
# What a label's latency is made of: a measurement's repeats (run_secs), by their mean (what
# MetaSchedule's runner reports and measurements.mean_latency_s keeps) or by their median, which
# one OS hiccup on a shared VM cannot move (docs/cost-models.md, session 94: of Zen 4 candidates
# whose stored mean was over 1.5x their median, timed again, the median was the closer for
# 100 of 100, and the fresh times did not spike again)
LATENCY_STATISTICS = ("mean", "median")


@dataclass(frozen=True)
class DataSpec:
    """Which measurements make a dataset. Empty `networks` = every task of those profiles."""

    hardware: tuple[str, ...]
    networks: tuple[str, ...] = ()
    extractor: str = "per_store_feature_v1"
    # A task with one candidate (elementwise ops often have a one-schedule design space) has
    # nothing to rank: it would add label-1 rows to training and pairwise 0.5 to every metric.
    min_candidates: int = 2
    # also each candidate's trace summary (models/trace_features.py), for models that take it
    traces: bool = False
    # candidate sources to keep: "sampled" (collect's random samples), "tuning" (what retunes
    # measured near each task's optimum, tasks/tuning/writeback.py), "imported"; empty = all
    sources: tuple[str, ...] = ()
    # also each candidate's assembly columns (models/asm_features.py), for models that take
    # them: rows `tenforge dataset asm` stored (a build each); NaN where a candidate has none
    asm: bool = False
    # the statistic of a measurement's repeats the labels are made from (LATENCY_STATISTICS)
    latency: str = "mean"

    def __post_init__(self) -> None:
        object.__setattr__(self, "hardware", tuple(self.hardware))
        object.__setattr__(self, "networks", tuple(self.networks))
        object.__setattr__(self, "sources", tuple(self.sources))
        unknown = set(self.sources) - set(CANDIDATE_SOURCES)
        if unknown:
            raise TenforgeError(f"unknown candidate source(s) {sorted(unknown)} in the data "
                                f"spec; use some of {', '.join(CANDIDATE_SOURCES)}")
        if self.latency not in LATENCY_STATISTICS:
            raise TenforgeError(f"unknown latency statistic {self.latency!r} in the data spec; "
                                f"use {' or '.join(LATENCY_STATISTICS)}")
        if not self.hardware:
            raise TenforgeError("the data spec names no hardware; give at least one profile "
                                "(`tenforge query \"SELECT name FROM hardware\"` lists them)")

    def to_json(self) -> dict:
        out = asdict(self)
        if not self.sources:  # all sources: the spec (and fingerprint) of the data before them
            del out["sources"]
        if not self.asm:  # likewise: the spec of the data before the assembly columns
            del out["asm"]
        if self.latency == "mean":  # and before the label statistic could be chosen
            del out["latency"]
        return out

    @classmethod
    def from_json(cls, data: dict) -> "DataSpec":
        return cls(**data)
