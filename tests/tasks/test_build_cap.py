"""A tuning run's build cap: the settings' timeout until it has seen enough builds, then a
multiple of their median, never below its floor nor above the settings'."""

import threading

import pytest

from tasks.measure.build_cap import BuildCap


def test_the_settings_timeout_holds_until_warmup_builds_finished():
    cap = BuildCap(floor_s=10.0, factor=20.0, warmup=3)
    cap.finished(0.2)
    cap.finished(0.3)
    assert cap.timeout(60.0) == 60.0
    cap.finished(0.25)
    assert cap.timeout(60.0) == 10.0  # 20 x 0.25 s is under the floor


def test_the_cap_follows_the_median_build_between_the_floor_and_the_settings_timeout():
    cap = BuildCap(floor_s=10.0, factor=20.0, warmup=3)
    for seconds in (0.1, 2.0, 1.0, 50.0):  # one straggler moves a median little
        cap.finished(seconds)
    assert cap.timeout(60.0) == pytest.approx(20 * 1.5)
    assert cap.timeout(25.0) == 25.0  # never longer than the settings allow
    for _ in range(8):
        cap.finished(4.0)
    assert cap.timeout(600.0) == pytest.approx(80.0)


def test_the_median_is_over_the_latest_window_of_builds():
    cap = BuildCap(floor_s=1.0, factor=2.0, warmup=2, window=4)
    for seconds in (9.0, 9.0, 9.0, 9.0, 1.0, 1.0, 1.0, 1.0):
        cap.finished(seconds)
    assert cap.timeout(60.0) == 2.0  # the four 9 s builds are out of the window


def test_a_missing_or_negative_build_time_is_not_counted():
    cap = BuildCap(floor_s=1.0, factor=2.0, warmup=1)
    cap.finished(None)
    cap.finished(-1.0)
    assert cap.timeout(60.0) == 60.0


def test_a_cut_is_counted_and_says_what_the_cap_was():
    cap = BuildCap(floor_s=10.0, factor=20.0, warmup=1)
    cap.finished(0.3)
    message = cap.note_cut(cap.timeout(60.0))
    assert cap.cut == 1
    assert message == "build cut at 10.0 s: the tuning run's cap, max(10 s, 20x its median " \
        "build 0.30 s)"


def test_build_threads_share_one_cap():
    cap = BuildCap(floor_s=1.0, factor=2.0, warmup=1, window=10_000)
    threads = [threading.Thread(target=lambda: [cap.finished(0.5) for _ in range(1000)])
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cap._recent) == 4000 and cap.timeout(60.0) == 1.0


@pytest.mark.parametrize("kwargs", [{"floor_s": 0}, {"factor": -1}, {"warmup": 0},
                                    {"warmup": 8, "window": 4}])
def test_a_cap_that_could_not_work_is_refused(kwargs):
    with pytest.raises(ValueError, match="build cap"):
        BuildCap(**kwargs)
