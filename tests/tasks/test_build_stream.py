"""BuildStream: a GPU collect's builders build the next chunk while a chunk waits for its
slowest build, never more than `ahead` chunks past the one being run, and a build that raises
is its candidate's error, not a lost candidate. Fake builds (threading events), nothing
compiled; tests/tasks/test_measure.py runs the real path."""

import threading

import pytest

from core.records import MeasureJob
from tasks.measure.build_stream import BuildStream


def _jobs(*ids):
    return [MeasureJob(i, "0xtask", "{}", "[[], []]", 1.0) for i in ids]


@pytest.fixture
def slow_first():
    """Chunks [0 slow, 1], [2, 3], [4, 5] on two builders; build 0 blocks until released."""
    release, started, lock = threading.Event(), [], threading.Lock()

    def build(worker, job):
        with lock:
            started.append(job.candidate_id)
        if job.candidate_id == 0:
            assert release.wait(10)
        return {"artifact": f"{worker}:{job.candidate_id}"}

    chunks = [_jobs(0, 1), _jobs(2, 3), _jobs(4, 5)]
    stream = BuildStream(["w1", "w2"], build, chunks, ahead=1)
    yield stream, chunks, release, started
    release.set()
    stream.close()


def test_the_next_chunk_builds_while_one_waits_for_its_slowest_build(slow_first):
    stream, chunks, release, started = slow_first
    stream.start_chunk(0)
    assert stream.outcome(chunks[0][1])["artifact"].endswith(":1")
    # build 0 still blocks one builder; the other goes on with chunk 1, not chunk 2
    assert stream.outcome(chunks[1][0])["artifact"].endswith(":2")
    assert stream.outcome(chunks[1][1])["artifact"].endswith(":3")
    assert 4 not in started and 5 not in started
    release.set()
    assert stream.outcome(chunks[0][0])["artifact"].endswith(":0")
    stream.start_chunk(1)
    assert [stream.outcome(j)["artifact"][-1] for j in chunks[2]] == ["4", "5"]
    assert sorted(started) == [0, 1, 2, 3, 4, 5]  # each built once


def test_a_build_that_raises_is_its_candidates_error_and_the_rest_build():
    def build(worker, job):
        if job.candidate_id == 1:
            raise ValueError("no such block")
        return {"artifact": str(job.candidate_id)}

    chunks = [_jobs(0, 1, 2)]
    stream = BuildStream(["w"], build, chunks)
    stream.start_chunk(0)
    outcomes = [stream.outcome(j) for j in chunks[0]]
    stream.close()
    assert outcomes[1]["error_kind"] == "build_error"
    assert "no such block" in outcomes[1]["error_msg"]
    assert [outcomes[0]["artifact"], outcomes[2]["artifact"]] == ["0", "2"]


def test_a_closed_stream_starts_no_more_builds_and_a_waiting_caller_is_told():
    gate = threading.Event()

    def build(worker, job):
        gate.wait(10)
        return {"artifact": str(job.candidate_id)}

    chunks = [_jobs(0, 1, 2)]
    stream = BuildStream(["w"], build, chunks)
    stream.close()
    gate.set()
    with pytest.raises(RuntimeError, match="closed"):
        stream.outcome(chunks[0][2])
