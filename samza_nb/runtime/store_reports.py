"""A processor's reports of the task stores it holds at its location (host affinity, SEP).

The processor that holds a task's stores says so in the job's metadata store
(coordination/store_locality.py), once per task and stint at its location: an active task after
its first committed epoch there (its stores were opened, restored if need be, and flushed), a
standby after its first step. The coordinators' groupers read the reports, so a processor that
joins at a location gets the tasks whose stores are there.

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
        self._reported: set[tuple[TaskMode, str]] = set()
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
                self._reported = {entry for entry in self._reported if entry[1] not in gone}

    def actives_committed(self, location: str, results: Iterable[EpochResult]) -> None:
        """Report the active tasks of ``results`` (committed) not reported yet."""
        if not self._has_stores:
            return
        due = {r.task_name: r.seq for r in results if (TaskMode.ACTIVE, r.task_name) not in self._reported}
        self._write(location, due, TaskMode.ACTIVE)

    def standby_stepped(self, location: str, standby: str, active: str, epoch: int) -> None:
        """Report that the standby ``standby`` holds its active task's stores here."""
        if not self._has_stores or (TaskMode.STANDBY, standby) in self._reported:
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
            _log.warning(
                "processor %s: could not report the stores of %s at %r (tried again after the next "
                "epoch): %s", self._processor_id, sorted(tasks), location, error,
            )
            return
        with self._lock:
            self._reported.update((mode, (names or {}).get(name, name)) for name in tasks)
