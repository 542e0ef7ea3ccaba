"""Task schedulers for `ms.tune_tasks`, all in Python so that every one of them can stop.

Why not MetaSchedule's own: a tuning run must be able to end at any batch (a deadline, SIGTERM,
Ctrl-C) and keep what it measured. MetaSchedule's C++ schedulers cannot be told to stop, and
stopping them by terminating every task from a measure callback crashed the gradient scheduler
(`Check failed: (!task->is_terminated)`: it returns the task it just joined, which the callback
terminated meanwhile) and could not stop its first pass over the tasks at all (nothing is joined
until every task had a turn: 8+ minutes past a 1-minute deadline on mobilenet_v2's 49 tasks).

So the schedulers are ported here, each checking `log.should_stop()` before it picks the next
task: returning -1 makes MetaSchedule join what is in flight and end its loop normally, so a
stop costs at most the batch being measured. tenforge's runner measures synchronously (its
futures are done when `run` returns), which is what makes "one batch" the bound.

- `gradient`: MetaSchedule's GradientBased (alpha 0.2, window 3): one round-robin pass without
  joining, then the alive task with the largest weighted latency gradient; ties at random. The
  one difference: a context's best latency is the mean of its repeats (tenforge's label), where
  MetaSchedule takes the median.
  With `focus=True` (after a warm start) the blind pass covers only the contexts the warm start
  left with no valid measurement; the others start from their warm best and the gradient rule
  picks from the first batch on. Why: the blind pass spends a full batch on every task (resnet18
  on the Xeon: 21 x 23 = 483 trials, ~420 s) whatever they weigh, and joins nothing until it
  ends, so a warm-started run recorded no progress between its warm estimate (~120 s) and
  ~540 s. `warm_turn`: the part of a turn a warm start counts for in the rule's best / turns
  (1: a whole turn). A warm start measures a few picks a task (4) where a turn measures a
  batch (23-27), so counted whole it starves tasks that weigh a few percent: on the Zen 5's
  BERT the two attention batch matmuls (~2.5 ms each of ~108) never had a turn after it.
  Counted by its trials (4 / 27) they had turns, but the heavy matmuls had fewer and BERT ended
  worse (112 against 108 ms estimated, median of 3 seeds), so tune_network counts it whole.
- `round-robin`: MetaSchedule's RoundRobin.
- `gain` / `dual`: tenforge's expected-gain scheduler (`expected_gain`). No blind pass: an
  unseen context gets its first turn before any other; with `focus`, the warm-started ones are
  seen, so the gain rule picks among them from the first batch on.
"""

from __future__ import annotations

import math
import random
from typing import Any

GRADIENT_ALPHA = 0.2  # MetaSchedule's defaults for TaskScheduler.create("gradient")
GRADIENT_WINDOW = 3


def expected_gain(log: Any, context: int, rounds: list[float], window: int = 2,
                  explore: float = 0.05) -> float:
    """How much network latency one more round of `context` is expected to save.

    `rounds` is the context's best latency after each of its rounds so far. The context is
    expected to improve by its recent relative improvement r (over the last `window` rounds,
    floored by explore / rounds so a stalled context still gets an occasional turn); the gain
    is weight x (its task's best - what the context would reach). A design space lagging
    behind its task's best by more than it improves keeps a small exploration gain that fades
    with the turns it already had. With one context per task this is weight x best x r."""
    now = rounds[-1]
    weight = log.context_weight(context)
    task_best = log.best[log.context_task[context]]
    if math.isinf(now):  # nothing valid yet: a first chance is worth anything
        if len(rounds) < 2:
            return math.inf
        return weight * task_best * explore / len(rounds) ** 2 if math.isfinite(task_best) \
            else 0.0
    before = rounds[-1 - window] if len(rounds) > window else rounds[0]
    improvement = (before - now) / now if math.isfinite(before) else 1.0
    rate = max(improvement, explore / len(rounds))
    return weight * max(task_best - now * (1 - rate), task_best * explore / len(rounds) ** 2)


def gradient_pick(log: Any, alive: list[int], history: dict[int, list[float]],
                  rng: random.Random, alpha: float = GRADIENT_ALPHA,
                  window: int = GRADIENT_WINDOW,
                  head_start: dict[int, float] | None = None) -> int:
    """MetaSchedule's gradient rule: g = alpha x (best w rounds ago - best) / w + (1 - alpha)
    x best / rounds, times the task weight; a task with nothing valid yet gets -1e9; all equal:
    a random alive task. `head_start`: tasks whose first history entry is a warm start's, with
    the part of a round it counts for in `rounds` (absent: a whole round)."""
    grads = []
    for i in alive:
        best_history = history.get(i, [])
        n = len(best_history)
        if n > 0 and math.isfinite(best_history[-1]):
            best = best_history[-1]
            g1 = (best_history[n - 1 - window] - best) / window if n >= 1 + window else 0.0
            rounds = n - 1 + head_start[i] if head_start and i in head_start else n
            g2 = best / rounds
            grads.append((alpha * g1 + (1 - alpha) * g2) * log.context_weight(i))
        else:
            grads.append(-1e9)
    if max(grads) == min(grads):
        return alive[rng.randrange(len(alive))]
    return alive[grads.index(max(grads))]


def create_scheduler(kind: str, log: Any, seed: int = 0, focus: bool = False,
                     warm_turn: float = 1.0, overlap: bool = False) -> Any:
    """A PyTaskScheduler of `kind` (gradient, round-robin, gain, dual) that stops when
    `log.should_stop()` says so. `focus`: the contexts `log` already has a valid measurement
    of (a warm start's) start their history there: the gradient scheduler skips its blind
    first pass for them, and gain and dual do not give each of them an "unseen" first turn
    (38 rounds, ~500 trials on mobilenet_v2) before their gain rule picks. `warm_turn`
    (gradient, with focus): the part of a turn that warm start counts for. `overlap` (with
    tasks.ms_overlap's builder and runner): the batch handed out last is left in flight, not
    joined, and the next task is another one, so its search runs while that batch builds."""
    if not 0 < warm_turn <= 1:
        raise ValueError(f"warm_turn {warm_turn}: give the part of a turn a warm start counts "
                         "for, above 0 and at most 1")
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.task_scheduler import PyTaskScheduler

    @derived_object
    class StoppableScheduler(PyTaskScheduler):
        def __init__(self) -> None:
            super().__init__()
            self.pending: list[int] = []  # sent to builder and runner, not joined yet
            self.history: dict[int, list[float]] = {}  # best latency after each join
            self.blind: list[int] | None = None  # gradient: the first pass's tasks, to hand out
            self.head_start: dict[int, float] = {}  # gradient: warm starts, as part of a turn
            self.last = -1  # round-robin: the task handed out last
            self.rng = random.Random(seed)

        def join_pending(self, keep_last: bool = False) -> None:
            records = self._outer().tasks_
            kept = self.pending[-1:] if keep_last else []
            for i in self.pending[:len(self.pending) - len(kept)]:
                # A task handed out and then terminated was never sent: MetaSchedule ends a
                # task that has nothing left to measure (its trial cap, or a design space the
                # database already covers) instead of measuring it, and joining it would fail
                # `runner_futures.has_value()`. (Terminating is the only other way a task
                # ends, at the end of tune_tasks, after the last join.)
                if records[i].is_terminated:
                    continue
                self.join_running_task(i)
                if log.context_trials[i]:  # as MetaSchedule: only once it measured something
                    self.history.setdefault(i, []).append(log.context_best[i])
            self.pending = kept

        def hand_out(self, task: int) -> int:
            self.pending.append(task)
            return task

        def next_task_id(self) -> int:
            records = self._outer().tasks_
            n = len(records)
            if self.blind is None:
                # only the gradient rule has a blind first pass (gain and dual join after
                # every batch, and hand an unseen context its first turn before any other)
                self.blind = list(range(n)) if kind == "gradient" else []
                if focus:  # a warm start measured these: their history starts there
                    self.history = {i: [log.context_best[i]] for i in range(n)
                                    if math.isfinite(log.context_best[i])}
                    self.blind = [i for i in self.blind if i not in self.history]
                    self.head_start = {i: warm_turn for i in self.history}
            if self.blind:
                # MetaSchedule's first pass: every task once, nothing joined in between (the
                # cost model sees no result before every task had its first batch)
                if log.should_stop():
                    return -1
                return self.hand_out(self.blind.pop(0))
            self.join_pending(keep_last=overlap)
            if log.should_stop():
                return -1
            alive = [i for i, r in enumerate(records) if not r.is_terminated]
            if overlap:
                # MetaSchedule cannot hand out a task whose batch is in flight; where that task
                # is the only one left, it is joined and handed out again (nothing overlaps)
                others = [i for i in alive if i not in self.pending]
                if alive and not others:
                    self.join_pending()
                    alive = [i for i, r in enumerate(records) if not r.is_terminated]
                else:
                    alive = others
            if not alive:
                return -1
            if kind == "round-robin":
                for step in range(1, n + 1):
                    task = (self.last + step) % n
                    if task in alive:
                        self.last = task
                        return self.hand_out(task)
            if kind == "gradient":
                return self.hand_out(gradient_pick(log, alive, self.history, self.rng,
                                                   head_start=self.head_start))
            unseen = [i for i in alive if i not in self.history]  # gain, dual
            return self.hand_out(unseen[0] if unseen else max(
                alive, key=lambda i: expected_gain(log, i, self.history[i])))

    return StoppableScheduler()
