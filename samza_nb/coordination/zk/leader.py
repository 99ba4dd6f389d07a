"""The leader's job-model generation (SAMZA.md §8.5 step 4, Samza's doOnProcessorChange).

From the live processor nodes (skipped while two carry the same id), the task locality nodes
and the active model, compute the next model with the :class:`JobModelCalculator`, store it
as the next version, open its barrier for the live processors and publish the version with a
compare-and-set. Scheduling, watches and the barrier timer stay with the coordinator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.zk.barrier import VersionBarrier
from samza_nb.coordination.zk.job_models import JobModelVersions
from samza_nb.coordination.zk.processors import ProcessorRegistry
from samza_nb.coordination.zk.task_locality import ZkTaskLocality
from samza_nb.errors import CoordinationError
from samza_nb.grouping import GrouperMetadata
from samza_nb.model import JobModel, LocationId

__all__ = ["JobModelPublisher"]

_log = logging.getLogger(__name__)


class JobModelPublisher:
    """Publishes new job-model versions for a leader.

    With ``skip_unchanged`` (``enable-startup-with-active-job-model``), a model whose
    containers equal the active model's is not published. ``before_first_publish(model)`` runs
    once, before the first version this leader publishes. ``store_locality()`` gives where the
    processors reported the tasks' stores (location → {task → epoch}), when the job has a
    metadata store.
    """

    def __init__(
        self,
        versions: JobModelVersions,
        barrier: VersionBarrier,
        registry: ProcessorRegistry,
        locality: ZkTaskLocality,
        *,
        skip_unchanged: bool = False,
        before_first_publish: Callable[[JobModel], None] | None = None,
        store_locality: Callable[[], Mapping[LocationId, Mapping[str, int]]] | None = None,
    ) -> None:
        self.versions = versions
        self.barrier = barrier
        self.registry = registry
        self.locality = locality
        self.skip_unchanged = skip_unchanged
        self._before_first_publish = before_first_publish
        self._store_locality = store_locality

    def read_active(self) -> JobModel | None:
        """The last agreed model (None when there is none or it was cleaned up)."""
        version = self.versions.active()
        if version is None:
            return None
        try:
            return self.versions.read(version)
        except CoordinationError:
            _log.warning("active job model %s is gone; computing from scratch", version)
            return None

    def publish_next(
        self, calculator: JobModelCalculator, opened: Callable[[str], None]
    ) -> str | None:
        """Publish the next version computed by ``calculator``; returns it, or None when
        nothing was published.

        ``opened(version)`` runs after the barrier exists and before the version is published
        (the caller watches the barrier and starts its timer there).
        """
        nodes = self.registry.read()
        ids = [node.processor_id for node in nodes]
        if len(set(ids)) != len(ids):
            _log.warning("duplicate processor ids %s: no new job model until they settle", ids)
            return None
        if not nodes:
            return None
        processors = {node.processor_id: node.location_id for node in nodes}
        active = self.read_active()
        stores = self._store_locality() if self._store_locality is not None else None
        metadata = GrouperMetadata.from_job_model(active, processors, self.locality.read() or None, stores)
        model = calculator.calculate(processors, metadata, active)
        if self.skip_unchanged and active is not None and model.containers == active.containers:
            _log.info("the new job model equals the active one: no rebalance")
            return None
        if self._before_first_publish is not None:
            setup, self._before_first_publish = self._before_first_publish, None
            setup(model)
        current, stat_version = self.versions.current()
        version = self.versions.next_version(current)
        self.versions.write(version, model)
        self.barrier.create(version, ids)
        opened(version)
        self.versions.publish(version, stat_version)
        return version

    def cleanup(self, keep: int) -> None:
        """Keep the ``keep`` newest job models and barriers."""
        self.versions.cleanup(keep)
        self.barrier.cleanup(keep)
