"""Whether a Spark job of the session other than a resident pool's own waits for its cores.

A pool of resident workers (runtime/executors/resident_workers.py) holds Spark's cores, so it asks this
every 50 ms and gives them back once no epoch of it runs while another job is active (a
notebook's DataFrame query, another samza_nb job's pool). A pool that is closing (its Spark
job not ended yet) is not waiting for cores: its group is noted here while it ends.

Each py4j round trip costs the JVM and the job's process about half a millisecond of CPU on
the workers' cores; PySpark's tracker calls read Java arrays element by element, and a look
made six round trips. So the tracker is fetched once, and the groups' jobs are looked up only
when an active job is not one already known to be the pool's or a closing pool's (Spark never
reuses a job id).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["OtherSparkJobs", "ended", "ending", "wait_for_closing_pools"]

#: Job groups of closed pools whose Spark job has not ended yet.
_ending: set[str] = set()
_changed = threading.Condition()
#: How long an exiting process waits for closing pools' Spark jobs.
_EXIT_WAIT_S = 3.0


def ending(group: str) -> None:
    """The pool of ``group`` is closing: its Spark job is not one waiting for cores."""
    with _changed:
        _ending.add(group)


def ended(group: str) -> None:
    """The Spark job of ``group`` ended."""
    with _changed:
        _ending.discard(group)
        _changed.notify_all()


def wait_for_closing_pools(timeout: float = _EXIT_WAIT_S) -> bool:
    """Wait until the Spark jobs of closing pools ended (bounded); whether they did. A job's
    run returns without waiting for its resident Spark job (about 20 ms); a process exiting
    meanwhile (a script, a notebook kernel) would take its accumulator server with it while
    the job's tasks finish, and the JVM would print a stack trace per task: the session's exit
    handler (runtime/executors/spark.py) waits here before it removes the accumulator socket."""
    with _changed:
        return _changed.wait_for(lambda: not _ending, timeout)


class OtherSparkJobs:
    """Asks the session ``context`` whether a job outside ``group`` and the closing pools'
    groups is running or waiting."""

    def __init__(self, context: Any, group: str) -> None:
        self._context = context
        self._group = group
        self._tracker: Any = None
        #: Ids of the jobs known to be ``group``'s or a closing pool's.
        self._not_others: set[int] = set()

    def active(self) -> bool:
        try:
            tracker = self._tracker
            if tracker is None:
                tracker = self._tracker = self._context.statusTracker()
            active = set(tracker.getActiveJobsIds())  # first: a job of ours started after it is ours
            if active <= self._not_others:
                return False
            ours = set(tracker.getJobIdsForGroup(self._group))
            for group in list(_ending):
                ours.update(tracker.getJobIdsForGroup(group))
            self._not_others |= ours
            return not active <= self._not_others
        except Exception:  # a stopped context: the resident job ends with it
            return False
