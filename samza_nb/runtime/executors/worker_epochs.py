"""What a Spark Python worker does with a task epoch it is handed: the job's plan unpickled
once per worker (by digest: workers are reused) and the epoch run with CPython's cycle
collector paused. Both ways of handing epochs over use it: one Spark job per epoch
(runtime/executors/executor.py) and resident workers (runtime/executors/resident_workers.py), whose loop,
:func:`serve_resident`, is here too."""

from __future__ import annotations

import gc
import os
import traceback
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Client
from typing import Any

from samza_nb.runtime.epoch import EpochAssignment, EpochResult
from samza_nb.runtime.task.kept_stores import keeping_stores_open
from samza_nb.runtime.task.stores import task_store_folder
from samza_nb.runtime.task.task import run_task_epoch

__all__ = ["collector_paused", "plan_in_worker", "run_in_worker", "serve_resident"]

# A Python worker unpickles each plan once and keeps it by digest (workers are reused, and
# resident workers live as long as a notebook runs jobs): the plans of the last few jobs.
_worker_plans: OrderedDict[str, Any] = OrderedDict()
_KEPT_PLANS = 8


def plan_in_worker(digest: str, blob: bytes | None) -> Any:
    """The plan of ``digest``: unpickled from ``blob`` the first time (a resident worker is
    sent the blob only once)."""
    plan = _worker_plans.get(digest)
    if plan is None:
        if blob is None:
            msg = f"plan {digest[:12]} was never sent to this worker (pid {os.getpid()})"
            raise RuntimeError(msg)
        from pyspark import cloudpickle

        plan = _worker_plans[digest] = cloudpickle.loads(blob)
        while len(_worker_plans) > _KEPT_PLANS:
            _worker_plans.popitem(last=False)
    else:
        _worker_plans.move_to_end(digest)
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


def run_in_worker(digest: str, blob: bytes | None, assignment: EpochAssignment) -> EpochResult:
    """One task epoch in a Python worker, on the plan of ``digest`` (``blob`` when the worker
    has not unpickled it yet)."""
    plan = plan_in_worker(digest, blob)
    with collector_paused():
        return run_task_epoch(plan, assignment)


def serve_resident(address: str, authkey: bytes, slot: int, _items: Any) -> Iterator[int]:
    """A resident worker's loop, the resident Spark job's function (runtime/executors/resident_workers.py):
    take task epochs from the job's process until told to stop or until that process goes
    away. The stores of the tasks it ran stay open until it is told to release them or
    returns (runtime/task/kept_stores.py).

    Messages in: ``("epochs", digest, plan blob or None, [(index, assignment), ...])``,
    ``("release", [task store folder, ...])`` or None (return). Out: per task epoch
    ``(index, result, traceback or None, whether it keeps the task's stores open)``; per
    release ``("released", stores closed)``."""
    try:
        connection = Client(address, family="AF_UNIX", authkey=authkey)
    except Exception:  # the pool closed before this Spark task started: nothing to do
        yield slot
        return
    try:
        connection.send((slot, os.getpid()))
        with keeping_stores_open() as kept:
            while True:
                message = connection.recv()
                if message is None:
                    break
                if message[0] == "release":
                    connection.send(("released", kept.release(message[1])))
                    continue
                _epochs, digest, blob, tasks = message
                for index, a in tasks:
                    try:
                        result = run_in_worker(digest, blob, a)
                    except Exception:  # an engine bug: the driver raises it with this traceback
                        connection.send((index, None, traceback.format_exc(), False))
                        break
                    keeps = kept.holds_under(task_store_folder(a.store_root, a.location_id, a.task_name))
                    connection.send((index, result, None, keeps))
    except (EOFError, OSError):  # the job's process closed the pool or ended
        pass
    finally:
        connection.close()
    yield slot
