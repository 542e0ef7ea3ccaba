"""MetaSchedule tune contexts for the selected tasks: default rules, resource-constraint rules
as a last postprocessor, and optionally one context per design space."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from core.hardware import HardwareProfile
from tasks.constraints import constraint_postproc
from tasks.tuning.task_logs import task_loggers

INSTANT_SAMPLES = 256  # instant tuning: candidates ranked per task when no population is given
# A warm start: sampled candidates the model ranks per task (retune --warm-samples). 128, the
# tuning bench's default learned search's (`-w128`, since the forty-eighth session at the
# latest), measured on resnet18, mobilenet_v2, ResNet-50 and BERT on five CPUs
# (docs/tuning-results.md). It was 256, as instant: on mobilenet_v2 (53 tasks, Emerald Rapids
# VM, 3 seeds) 128 reached MetaSchedule's final 4.6x sooner against 3.9x for the same tuned
# latency, and one early resnet18 seed tuned to 36.66 ms against 28.83 after 256; the bench's
# seeds since have not shown that gap.
WARM_SAMPLES = 128
GENETIC_ITERS = 4  # MetaSchedule's EvolutionarySearch default


def round_batch(trials: int, contexts: int, scale: float = 1.0) -> int:
    """Candidates measured per turn of a context: what gives every context at least two turns
    of the budget, 4 to 64 (MetaSchedule's default is 64); x `scale` (a bench's lever,
    tune_network's round_scale), at least 1."""
    return max(1, round(scale * max(4, min(64, trials // (2 * max(contexts, 1))))))


POPULATION_RATIO = 8  # MetaSchedule's own: population per candidate a round measures


def search_population(batch: int, ratio: int = POPULATION_RATIO) -> int:
    """The evolutionary search's population for rounds that measure `batch` candidates:
    `ratio` x the batch (8: MetaSchedule's own ratio, 512 for 64), 64 to 256.

    Why not always 256: a round's search cost grows with the population (it samples ~0.8x and
    mutates and ranks 4x the population), its use with the batch. Measured on resnet18, 192
    trials (16 a round), 2 cores (bench/throughput.py, docs/tuning-results.md): population 256
    tuned at 34 trials/min, 128 at 64/min (the collect path measures 83/min), and reached the
    same estimated latency. At 64 a round (budgets of ~800+ trials on a ResNet) it stays 256.
    A smaller `ratio` makes a round cheaper still: half of a learned model's search is the
    PerStoreFeature extraction of the population it ranks (docs/tuning-results.md)."""
    return max(64, min(256, ratio * batch))


def tune_contexts(extracted: list[Any], profile: HardwareProfile, work_dir: Path,
                  population: int, seed: int, rules: list[Any], per_design_space: bool,
                  on_reject: Callable[[str], None],
                  search_threads: int = 1,
                  genetic_iters: int = GENETIC_ITERS) -> tuple[list[Any], list[int]]:
    """MetaSchedule tune contexts for `extracted` tasks, and the task of each context.

    The target's default schedule rules, mutators and postprocessors, plus the resource-
    constraint rules as a last postprocessor. With `per_design_space`, a task whose rules give
    several design spaces (e.g. a conv tiled with and without a write cache) becomes one
    context per space, so a scheduler can give each space its own share of the budget: in the
    seed dataset the best candidate of a 3-space task lies in space 0, 1, 2 for 46, 74, 100 of
    220 tasks, so no space can be skipped, yet evolution over all of them at once tends to
    follow whichever looks best early.

    `search_threads`: threads of each context's evolutionary search (replaying and mutating
    traces, ~95% of a search's time). Safe to give it every core: tenforge's runner measures
    synchronously, so no candidate is ever timed while a search runs (tasks.schedulers).

    `genetic_iters`: rounds of mutation a round's population goes through, each replayed,
    featurized and ranked by the cost model, before the top candidates are measured
    (MetaSchedule's default 4). A round ranks ~init + iters x population candidates: at a
    population of 4x the batch, ~34 a measured trial on mobilenet_v2."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.utils import fork_seed

    kind = "cuda" if profile.target_kind == "cuda" else "llvm"
    postprocs = [*ms.postproc.Postproc.create(kind)]
    if rules:
        postprocs.append(constraint_postproc(rules, on_reject))

    def strategy() -> Any:
        return ms.search_strategy.EvolutionarySearch(
            population_size=population, init_min_unmeasured=min(50, population),
            genetic_num_iters=genetic_iters)

    contexts: list[Any] = []
    context_task: list[int] = []
    loggers = task_loggers(work_dir, [t.task_name for t in extracted])  # (not MetaSchedule's: see
    # tasks/tuning/task_logs.py, a deadlock inside Prefect flows)
    for task_id, (task, logger, rand_state) in enumerate(
            zip(extracted, loggers, fork_seed(seed, n=len(extracted)))):
        context = ms.TuneContext(
            mod=task.dispatched[0], target=task.target,
            space_generator=ms.space_generator.PostOrderApply(postprocs=postprocs),
            search_strategy=strategy(), task_name=task.task_name, logger=logger,
            rand_state=rand_state, num_threads=search_threads).clone()
        spaces = context.generate_design_space() if per_design_space else []
        if len(spaces) <= 1:
            contexts.append(context)
            context_task.append(task_id)
            continue
        for k, space in enumerate(spaces):
            trace = space.trace.simplified(remove_postproc=True)
            contexts.append(ms.TuneContext(
                mod=task.dispatched[0], target=task.target,
                space_generator=ms.space_generator.ScheduleFn(
                    _replay(trace), sch_rules=[], postprocs=postprocs),
                search_strategy=strategy(), task_name=f"{task.task_name}[space {k}]",
                logger=logger, rand_state=rand_state + k,
                num_threads=search_threads).clone())
            context_task.append(task_id)
    return contexts, context_task


def _replay(trace: Any) -> Callable[[Any], None]:
    """A schedule function that rebuilds one design space (its sampling decisions are drawn
    afresh by the search, as for any design space)."""

    def schedule(sch: Any) -> None:
        trace.apply_to_schedule(sch, remove_postproc=True)

    return schedule
