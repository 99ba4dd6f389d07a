"""A Spark Python worker lost mid-epoch costs the epoch a rerun, not the job.

A worker can be killed (the kernel's OOM killer, a user's ``kill``) or crash in native code
while it runs a task epoch. Nothing of the epoch was committed then: its plan was persisted
before it ran and its appends are tagged with (task, epoch), so the epoch runs again, up to
``job.spark.epoch.retries`` times. Spark itself retries a failed task
``spark.task.maxFailures`` times on a cluster; a local master does not, and resident workers
(runtime/executors/resident_workers.py) are outside Spark's retries either way.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TypeVar

from samza_nb.errors import WorkerLostError
from samza_nb.runtime.epoch import EpochAssignment

__all__ = ["failure_reason", "python_worker_lost", "rerun_when_workers_are_lost"]

_log = logging.getLogger("samza_nb.runtime.executors.executor")

Results = TypeVar("Results")

#: What Spark says when the Python worker of a task went away (its reader saw the socket end),
#: or when a cluster lost the executor holding it. Nothing broader: another failure retried
#: would be reported as a lost worker.
_LOST_WORKER_SIGNS = ("Python worker exited unexpectedly", "ExecutorLostFailure")


def failure_reason(error: BaseException | None) -> str:
    """What a Spark job's failure says happened, in a sentence: py4j's first line only names
    the call, and Spark nests the task's reason after its stage's."""
    if error is None:
        return ""
    lines = [line.strip().lstrip(": ") for line in str(error).splitlines() if line.strip()]
    telling = [line for line in lines if "Job aborted" in line or "Exception:" in line or "Error:" in line]
    line = (telling or lines or [type(error).__name__])[0]
    reason = line.rsplit("Exception: ", 1)[-1].split(". ", 1)[0]
    return reason if len(reason) <= 300 else reason[:300] + "…"


def python_worker_lost(error: BaseException) -> bool:
    """Whether a Spark job failed because a Python worker went away (not because of what it
    ran: a task epoch never raises, its failures are in its result)."""
    text = str(error)
    return any(sign in text for sign in _LOST_WORKER_SIGNS)


def rerun_when_workers_are_lost(
    attempt: Callable[[list[EpochAssignment]], Results],
    assignments: list[EpochAssignment],
    *,
    retries: int,
    stopping: Callable[[], bool],
    noted: Callable[[WorkerLostError], None],
) -> Results:
    """``attempt(assignments)``, again while it raises WorkerLostError, at most ``retries``
    more times and not once the executor is ``stopping``; ``noted`` counts every loss."""
    lost = 0
    while True:
        try:
            return attempt(assignments)
        except WorkerLostError as error:
            noted(error)
            if stopping() or lost >= retries:
                if lost:
                    msg = f"{error} (the epoch ran {lost + 1} times)"
                    raise WorkerLostError(msg) from error
                raise
            lost += 1
            _log.warning("%s; running the epoch again on new workers (retry %d of %d)", error, lost, retries)
            # Any task epoch of the lost attempt may have committed (exactly-once): the retry
            # reads what was committed instead of trusting a worker's memory.
            assignments = [dataclasses.replace(a, retry=lost) for a in assignments]
