"""Retention of intermediate streams (Samza's ``delete.committed.messages``).

Data of an intermediate stream partition is deleted once every task consuming it has committed
past it. This needs every consumer's checkpoint, so it has exactly one owner per job: the
processor of the coordinator that decides job models (the embedded coordinator's first
processor; the ZooKeeper or Azure leader's processor). It reads the checkpoints from the
metadata store, where every processor of every process commits, on the retention thread: in a
distributed job that read is a request per task to ZooKeeper or Azure, which the epoch does not
wait for, and epochs that end while a pass runs share the next pass's read. With the metadata
store shared by the job's processes, passes start at most once a second
(:data:`SHARED_STORE_PASS_INTERVAL_S`): with a pass after every epoch, 17 of the 53 ZooKeeper
requests of each epoch of an eight-task job were this read.

The owner deletes in the background (:class:`BackgroundRetention`): deleting a few hundred
thousand consumed messages from the embedded log takes 0.1–0.25 s, which the next epoch no
longer waits for. Deleting below committed offsets is idempotent, so a pass that a later one
overtakes, or that a crash cuts short, loses nothing: the next pass deletes the rest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from samza_nb.model import SystemStreamPartition
from samza_nb.runtime.checkpoints import Checkpoint
from samza_nb.runtime.epoch import ssp_key
from samza_nb.runtime.faults import reached as kill_point
from samza_nb.runtime.plan_systems import system_of
from samza_nb.systems.base import StreamSystem

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["SHARED_STORE_PASS_INTERVAL_S", "BackgroundRetention", "apply_retention"]

#: Seconds between the starts of two passes when every task's checkpoint is a request away.
SHARED_STORE_PASS_INTERVAL_S = 1.0


def apply_retention(
    plan: ExecutionPlan,
    task_ssps: Mapping[str, Iterable[SystemStreamPartition]],
    checkpoints: Mapping[str, Checkpoint],
    deleted_below: dict[tuple[str, int], int] | None = None,
) -> None:
    """Delete intermediate data every consuming task's checkpoint has passed.

    ``deleted_below`` (stream, partition) -> the offset this process last deleted below: a
    partition whose consumers did not move since is skipped (each deletion is a write
    transaction of the log, which the tasks' appends wait for), and it is updated after
    each deletion."""
    lowest: dict[tuple[str, int], int] = {}
    for task, ssps in task_ssps.items():
        checkpoint = checkpoints.get(task) or Checkpoint()
        for ssp in ssps:
            if plan.streams[ssp.stream].kind != "intermediate":
                continue
            offset = checkpoint.offsets.get(ssp_key(ssp.stream, ssp.partition), 0)
            place = (ssp.stream, ssp.partition)
            lowest[place] = min(lowest.get(place, offset), offset)
    by_system: dict[int, tuple[StreamSystem, list[tuple[str, int, int]]]] = {}
    for (stream_id, partition), offset in lowest.items():
        if offset > 0 and (deleted_below is None or deleted_below.get((stream_id, partition)) != offset):
            system = system_of(plan, stream_id)
            by_system.setdefault(id(system), (system, []))[1].append((stream_id, partition, offset))
    for system, deletions in by_system.values():
        system.delete_before_all(deletions)
        if deleted_below is not None:
            deleted_below.update(((stream_id, partition), offset) for stream_id, partition, offset in deletions)
        kill_point("in-retention")


class BackgroundRetention:
    """Runs :func:`apply_retention` on a thread of its own, for the checkpoints the newest
    request's reader returns when its pass starts; one pass at a time, passes asked for while
    one runs collapse into the newest. The thread (and its log connection) lives until
    :meth:`close`.

    A pass deletes a system's partitions in one write transaction of its log (a task's
    appends wait for each: with 64 partitions, one per partition held the embedded log's
    write lock for about 180 ms of a one-second run), and skips the partitions whose
    consumers did not move since the last pass.

    A pass that fails is raised by the next :meth:`after_epoch` or :meth:`join`, so a
    retention failure still fails the job (one epoch later), as it did in the epoch path.

    ``min_interval_s``: the least time between the starts of two passes (a request waits for
    it, and newer ones replace it meanwhile); :meth:`join` and :meth:`close` do not wait for it.
    """

    def __init__(self, plan: ExecutionPlan, *, min_interval_s: float = 0.0) -> None:
        self.plan = plan
        self.min_interval_s = min_interval_s
        self._last_pass = float("-inf")
        #: join() or close() waits: the pending pass starts without waiting for its interval.
        self._hurry = False
        #: A job without intermediate streams has nothing to delete (and reads nothing).
        self._applies = any(info.kind == "intermediate" for info in plan.streams.values())
        self._cond = threading.Condition()
        self._pending: (
            tuple[dict[str, frozenset[SystemStreamPartition]], Callable[[], Mapping[str, Checkpoint]]] | None
        ) = None
        #: A pass is asked for or running.
        self._busy = False
        self._closing = False
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        #: (stream, partition) -> the offset the passes last deleted below.
        self._deleted_below: dict[tuple[str, int], int] = {}

    def after_epoch(
        self,
        task_ssps: Mapping[str, Iterable[SystemStreamPartition]],
        read_checkpoints: Callable[[], Mapping[str, Checkpoint]],
    ) -> None:
        """Delete, in the background, what the committed checkpoints have passed
        (``read_checkpoints`` is called on the retention thread, once per pass)."""
        if not self._applies:
            return
        with self._cond:
            self._raise_error()
            self._pending = ({task: frozenset(ssps) for task, ssps in task_ssps.items()}, read_checkpoints)
            self._busy = True
            self._closing = False
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="samza-nb-intermediate-retention", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closing:
                    self._busy = False
                    self._hurry = False
                    self._cond.notify_all()
                    self._cond.wait()
                while not (self._closing or self._hurry):
                    wait = self._last_pass + self.min_interval_s - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                request, self._pending = self._pending, None
                if request is None:  # closing, nothing left to do
                    self._busy = False
                    self._thread = None
                    self._cond.notify_all()
                    return
            task_ssps, read_checkpoints = request
            self._last_pass = time.monotonic()
            try:
                apply_retention(self.plan, task_ssps, read_checkpoints(), self._deleted_below)
            except BaseException as error:  # reported by the next after_epoch or join
                with self._cond:
                    self._error = error

    def join(self, timeout: float | None = None) -> None:
        """Wait for the passes asked for so far; raise a pass's failure."""
        with self._cond:
            self._hurry = True
            self._cond.notify_all()
            self._cond.wait_for(lambda: not self._busy, timeout)
            self._raise_error()

    def close(self, timeout: float | None = None) -> None:
        """Wait for the passes asked for so far, end the thread; raise a pass's failure."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        with self._cond:
            self._raise_error()

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error
