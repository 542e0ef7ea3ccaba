"""Tune a network with MetaSchedule, driven by a cost model, and measure what it gained.

One `tune_network` call: import the network into Relax, extract MetaSchedule's tuning tasks,
keep the tasks that carry `flops_share` of the network's FLOPs (x occurrences), tune them with
`ms.tune_tasks` under a trial budget (and optionally a wall-clock budget), then compile the
network with the tuning database and time it end to end, untuned and tuned, on the profile's
threads. Builds and runs go through tenforge's long-lived workers (tasks.ms_backend).

The tuning curve is recorded after every measured batch: trials so far, wall time, and the
estimated network latency = sum over tuned tasks of occurrences x best latency so far (what
MetaSchedule's task scheduler optimizes). The end-to-end latency is measured once, at the end:
it also contains the untuned tasks, the Relax VM's overhead and memory traffic between
functions, so it is larger than the estimate; the result reports both.

Schedulers (tasks.schedulers): "gradient" and "round-robin" are MetaSchedule's, ported so they
can stop at any batch; "gain" and "dual" are tenforge's; "instant" does no search
(tasks.instant). A deadline, SIGTERM or Ctrl-C ends the search after the batch in flight, and
the run still compiles and times what it found. Cost models: "xgb" (MetaSchedule's XGBModel,
from scratch) or the path of a saved tenforge model (models.ms_adapter).

Modules: `selection` (which tasks, scheduler kinds), `log` (curve, stop reasons, signal and
measure hooks), `contexts` (MetaSchedule tune contexts), `run` (tune_network),
`result` (what it gives back).
"""

from tasks.tuning.log import CurvePoint, TuningLog
from tasks.tuning.result import TuningResult
from tasks.tuning.run import tune_network
from tasks.tuning.selection import SCHEDULERS, SEARCH_SCHEDULERS, Scheduler, TaskShare, select_tasks

__all__ = ["SCHEDULERS", "SEARCH_SCHEDULERS", "CurvePoint", "Scheduler", "TaskShare",
           "TuningLog", "TuningResult", "select_tasks", "tune_network"]
