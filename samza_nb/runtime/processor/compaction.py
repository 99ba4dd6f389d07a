"""Changelog compaction at retention points, in the background.

The processor that owns retention (one per job) hands the compactor the job model and a reader
of the committed checkpoints after each epoch (read only when a compaction may be due: a job
whose system compacts by itself never reads them for it). For every store's changelog
partition whose committed part grew by at least ``job.changelog.compaction.min.messages``
records and by at least as many records as the last compaction kept (Kafka's dirty ratio of
0.5), the compactor rewrites that committed part to the latest record per key on a thread of
its own, one compaction at a time: an epoch never waits for it, and only the short rewrite
holds the log's write lock. Systems that compact by themselves (Kafka topics are created
``cleanup.policy=compact``) are skipped.

A compaction that fails does not stop the job (its changelog only keeps more records than it
needs, as when compaction is off): it is logged as a warning naming the changelog stream and
partition, counted in the job's metrics (``changelog_compaction``), and tried again after the
next epoch, when it is still due. The other partitions of the pass are still compacted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from samza_nb.errors import StreamSystemError
from samza_nb.model import JobModel
from samza_nb.runtime.checkpoints import Checkpoint
from samza_nb.runtime.epoch import ssp_key
from samza_nb.runtime.plan_systems import default_system_of
from samza_nb.runtime.task.changelog_records import is_tombstone

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["ChangelogCompactor"]

_log = logging.getLogger(__name__)

_KEEP_RESULTS = 100


class ChangelogCompactor:
    """Compacts a job's changelogs off the epoch path (see the module docstring)."""

    def __init__(self, plan: ExecutionPlan) -> None:
        self.plan = plan
        config = plan.config
        self.enabled = config.get_bool("job.changelog.compaction.enabled")
        self.min_messages = config.get_int("job.changelog.compaction.min.messages")
        self.retention_ms = config.get_int("job.changelog.delete.retention.ms")
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: The latest compactions (CompactionResult), oldest first.
        self.results: list[Any] = []
        #: Compactions that failed so far, and the newest failure.
        self.failures = 0
        self.error: StreamSystemError | None = None

    def applies(self) -> bool:
        """Whether this job has changelogs to compact: on, stores, a system that does not
        compact by itself."""
        system = default_system_of(self.plan)
        return self.enabled and bool(self.plan.store_names) and system is not None and hasattr(system, "compact")

    def due(self, model: JobModel, checkpoints: Mapping[str, Checkpoint]) -> list[tuple[str, int, int]]:
        """(changelog stream, partition, committed offset) of every partition to compact now."""
        if not self.applies():
            return []
        system: Any = default_system_of(self.plan)
        work = []
        for name, task in sorted(model.active_tasks().items()):
            checkpoint = checkpoints.get(name)
            if checkpoint is None:
                continue
            for store in self.plan.store_names:
                stream_id = self.plan.changelog_stream_id(store)
                committed = checkpoint.offsets.get(ssp_key(stream_id, task.changelog_partition))
                if committed is None:
                    continue
                compacted_below, live = system.compaction_state(
                    stream_id, task.changelog_partition
                )
                grown = committed - compacted_below
                if grown >= self.min_messages and grown >= live:
                    work.append((stream_id, task.changelog_partition, committed))
        return work

    def after_epoch(self, model: JobModel, read_checkpoints: Callable[[], Mapping[str, Checkpoint]]) -> bool:
        """Start compacting what is due unless a compaction is running; True if one started."""
        with self._lock:
            if not self.applies() or (self._thread is not None and self._thread.is_alive()):
                return False
            work = self.due(model, read_checkpoints())
            if not work:
                return False
            thread = threading.Thread(
                target=self._compact, args=(work,), name="samza-nb-changelog-compactor", daemon=True
            )
            thread.start()
            # Published once started: join() from another thread may read it at any moment.
            self._thread = thread
            return True

    def report(self) -> dict[str, Any]:
        """What the job's metrics show of compaction: counts and the newest failure."""
        return {
            "compactions": len(self.results),
            "failures": self.failures,
            "last_failure": str(self.error) if self.error is not None else None,
        }

    def _compact(self, work: list[tuple[str, int, int]]) -> None:
        system: Any = default_system_of(self.plan)
        for stream_id, partition, upto in work:
            try:
                result = system.compact(
                    stream_id, partition, upto,
                    is_tombstone=is_tombstone, tombstone_retention_ms=self.retention_ms,
                )
            except Exception as error:  # never stops the job: logged, counted, tried again
                failure = StreamSystemError(
                    f"compacting changelog {stream_id!r} partition {partition} below offset {upto} "
                    f"failed: {type(error).__name__}: {error}"
                )
                failure.__cause__ = error
                self.failures += 1
                self.error = failure
                _log.warning("%s; the changelog keeps its records, tried again after the next epoch", failure)
                continue
            if result is not None:
                self.results = [*self.results[-_KEEP_RESULTS + 1 :], result]

    def join(self, timeout: float | None = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
