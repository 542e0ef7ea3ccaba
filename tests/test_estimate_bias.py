"""bench/estimate_bias.py: the ranks it re-measures, and bad ones refused in one line."""

import pytest

from bench.estimate_bias import parse_ranks


def test_ranks_are_sorted_and_unique_and_bad_ones_exit_in_one_line():
    assert parse_ranks("5,0,1,5") == [0, 1, 5]
    for bad in ("", "a", "-1,2", "1.5"):
        with pytest.raises(SystemExit, match="give ranks as whole numbers >= 0"):
            parse_ranks(bad)
