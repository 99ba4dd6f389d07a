"""What a Spark Python worker does with a task epoch it is handed: the job's plan unpickled
once per worker (by digest: workers are reused) and the epoch run with CPython's cycle
collector paused. Both ways of handing epochs over use it: one Spark job per epoch
(runtime/executor.py) and resident workers (runtime/resident_workers.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from samza_nb.runtime.epoch import EpochAssignment, EpochResult
from samza_nb.runtime.task import run_task_epoch

__all__ = ["collector_paused", "plan_in_worker", "run_in_worker"]

# A Python worker unpickles each plan once and keeps it by digest (workers are reused).
_worker_plans: dict[str, Any] = {}


def plan_in_worker(digest: str, blob: bytes) -> Any:
    plan = _worker_plans.get(digest)
    if plan is None:
        from pyspark import cloudpickle

        plan = _worker_plans[digest] = cloudpickle.loads(blob)
    return plan


@contextmanager
def collector_paused() -> Iterator[None]:
    """CPython's cycle collector paused for one task epoch in a Spark worker process.

    An epoch allocates millions of short-lived containers (decoded messages, records) while
    hundreds of thousands are alive (the fetched batches): the collector would walk the live
    ones again every few hundred allocations, about half the cost of decoding a batch.
    Reference counting still frees everything at once; cycles made during the epoch (user code
    may make some) are collected when it ends, so memory stays bounded by the epoch. Only in a
    worker process: a notebook's process runs other threads whose collector is not ours."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            gc.collect(0)


def run_in_worker(digest: str, blob: bytes, assignment: EpochAssignment) -> EpochResult:
    """One task epoch in a Python worker, on the plan of ``digest`` (``blob`` when the worker
    has not unpickled it yet)."""
    plan = plan_in_worker(digest, blob)
    with collector_paused():
        return run_task_epoch(plan, assignment)
