"""A processor's reports of the task stores it holds at its location (host affinity, SEP).

The processor that holds a task's stores says so in the job's metadata store
(coordination/store_locality.py), once per task and stint at its location: an active task after
its first committed epoch there (its stores were opened, restored if need be, and flushed), a
standby after its first step. The coordinators' groupers read the reports, so a processor that
joins at a location gets the tasks whose stores are there. On a Spark cluster a task's stores are
on the host of the executor that ran it (runtime/executors/spark_jobs.py): the report names that host, again
whenever the task's epochs move to another host, and a processor that takes the task over places
its epochs there (runtime/executors/host_placement.py).

A report that cannot be written (the metadata store is unreachable) is logged and tried again
after the next epoch: the stores are there either way, and the job goes on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from samza_nb.coordination.store_locality import StoreLocality
from samza_nb.errors import CoordinationError, MetadataStoreError
from samza_nb.metadata import MetadataStore
from samza_nb.model import TaskMode
from samza_nb.runtime.epoch import EpochResult

__all__ = ["StoreReports"]

_log = logging.getLogger(__name__)


class StoreReports:
    """What one processor reported of the stores it holds, and the reports still due."""

    def __init__(self, metadata: MetadataStore, processor_id: str, *, has_stores: bool) -> None:
        self._locality = StoreLocality(metadata)
        self._processor_id = processor_id
        self._has_stores = has_stores
        #: (mode, task) -> the location it was last reported at.
        self._reported: dict[tuple[TaskMode, str], str] = {}
        self._lock = threading.Lock()
        self.run_id = ""

    def forget(self, tasks: Iterable[str] | None = None) -> None:
        """Report these tasks (all when None) again at their next epoch or step: they may have
        run elsewhere meanwhile, so this location's stores are taken up anew."""
        with self._lock:
            if tasks is None:
                self._reported.clear()
            else:
                gone = set(tasks)
                self._reported = {entry: at for entry, at in self._reported.items() if entry[1] not in gone}

    def actives_committed(self, location: str, results: Iterable[EpochResult]) -> None:
        """Report the active tasks of ``results`` (committed) not reported yet, at the location
        each result names (on a cluster, its executor's host), else at ``location``."""
        if not self._has_stores:
            return
        due: dict[str, dict[str, int]] = {}
        for r in results:
            at = r.location_id or location
            if self._reported.get((TaskMode.ACTIVE, r.task_name)) != at:
                due.setdefault(at, {})[r.task_name] = r.seq
        for at, tasks in due.items():
            self._write(at, tasks, TaskMode.ACTIVE)

    def held(self) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
        """Where the job's processors reported holding the tasks' stores in this run: the
        active tasks' stores and the standbys' copies (each location -> {task -> epoch}); none
        when the metadata store cannot be read now."""
        try:
            return (
                self._locality.read(self.run_id, TaskMode.ACTIVE),
                self._locality.read(self.run_id, TaskMode.STANDBY),
            )
        except (MetadataStoreError, CoordinationError) as error:
            # INFO: the service's outage has its own status line, and the report is tried again
            _log.info("processor %s: could not read the store reports: %s", self._processor_id, error)
            return {}, {}

    def standby_stepped(self, location: str, standby: str, active: str, epoch: int) -> None:
        """Report that the standby ``standby`` holds its active task's stores here."""
        if not self._has_stores or self._reported.get((TaskMode.STANDBY, standby)) == location:
            return
        self._write(location, {active: epoch}, TaskMode.STANDBY, names={active: standby})

    def _write(
        self, location: str, tasks: dict[str, int], mode: TaskMode, names: dict[str, str] | None = None
    ) -> None:
        if not tasks:
            return
        try:
            self._locality.record(location, tasks, run_id=self.run_id, processor_id=self._processor_id, mode=mode)
        except (MetadataStoreError, CoordinationError) as error:
            # INFO: the service's outage has its own status line, and the report is tried again
            _log.info(
                "processor %s: could not report the stores of %s at %r (tried again after the next "
                "epoch): %s", self._processor_id, sorted(tasks), location, error,
            )
            return
        with self._lock:
            self._reported.update({(mode, (names or {}).get(name, name)): location for name in tasks})
