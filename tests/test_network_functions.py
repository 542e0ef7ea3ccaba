"""bench/network_functions.py: per-call clocks summed per function and run, subnormal counts."""

import numpy as np

from bench.network_functions import TINY, CallClock, subnormals


class _Tensor:
    def __init__(self, values: np.ndarray) -> None:
        self.values, self.dtype = values, values.dtype

    def numpy(self) -> np.ndarray:
        return self.values


def test_subnormals_counts_only_nonzero_values_below_the_smallest_normal():
    values = np.array([0.0, TINY, TINY / 2, -TINY / 4, 1.0, np.inf], dtype=np.float32)
    assert subnormals(_Tensor(values)) == 2
    assert subnormals(_Tensor(np.zeros(3, dtype=np.int64))) == 0


def test_the_clock_sums_calls_per_function_and_run_and_counts_outputs_in_the_census():
    clock = CallClock({"f", "g"})
    out = _Tensor(np.array([TINY / 2, 1.0], dtype=np.float32))
    for _ in range(2):  # two calls of f in one run
        assert clock(None, "f", True, None) == 0
        clock(None, "f", False, None, out)
    clock(None, "vm.builtin.alloc_storage", True, None)  # not a function of the network
    clock.end_run()
    assert set(clock.seconds) == {"f"} and len(clock.seconds["f"]) == 1
    assert clock.seconds["f"][0] >= 0 and clock.tiny == {}
    clock.census = True
    clock(None, "g", True, None)
    clock(None, "g", False, None, out)
    assert clock.tiny == {"g": 1}
