"""Closing pools: an exiting process waits (bounded) for their Spark jobs to end."""

from __future__ import annotations

import threading
import time

from samza_nb.runtime.executors import other_spark_jobs


def test_an_exiting_process_waits_for_a_closing_pools_spark_job() -> None:
    other_spark_jobs.ending("pool-a")
    ends = threading.Timer(0.2, other_spark_jobs.ended, args=("pool-a",))
    ends.start()
    started = time.monotonic()
    assert other_spark_jobs.wait_for_closing_pools(timeout=5.0)
    assert 0.15 <= time.monotonic() - started < 5.0  # woken by the end, not the timeout
    ends.join()


def test_the_wait_is_bounded_when_a_job_does_not_end() -> None:
    other_spark_jobs.ending("pool-stuck")
    try:
        started = time.monotonic()
        assert not other_spark_jobs.wait_for_closing_pools(timeout=0.1)
        assert time.monotonic() - started < 1.0
    finally:
        other_spark_jobs.ended("pool-stuck")
    assert other_spark_jobs.wait_for_closing_pools(timeout=0.0)
