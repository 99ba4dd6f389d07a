"""The ``zookeeper`` entry of the coordinator registry (``job.coordinator.factory=zookeeper``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.coordinator import JobCoordinatorListener, register_job_coordinator
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.zk.coordinator import ZkJobCoordinator
from samza_nb.metadata import MetadataStore
from samza_nb.model import JobModel, LocationId

__all__ = ["zookeeper_job_coordinator"]


def zookeeper_job_coordinator(
    *,
    calculator: JobModelCalculator,
    config: Config | Mapping[str, Any] | None = None,
    metadata: MetadataStore | None = None,
    partition_counts: Callable[[], Mapping[str, int]] | None = None,
    connect: str | None = None,
    processor_id: str | None = None,
    location_id: LocationId | None = None,
    listener: JobCoordinatorListener | None = None,
    run_id: str | None = None,
    before_first_publish: Callable[[JobModel], None] | None = None,
) -> ZkJobCoordinator:
    """Build a :class:`ZkJobCoordinator` (keyword options only).

    - ``calculator``: computes the job models (its inputs' config is the default ``config``);
    - ``config``: ``job.coordinator.zk.connect`` (required unless ``connect``), the
      ``job.coordinator.zk.*`` timeouts, ``job.debounce.time.ms``, the app name and job id that
      name the coordination tree;
    - ``metadata``: the job's metadata store, which receives assignments and locality;
    - ``partition_counts``: a callable giving stream → partition count now (leader's monitor);
    - ``processor_id``, ``location_id``, ``listener``: when all three are given the processor is
      attached at once (else call ``attach`` before ``start``);
    - ``run_id``: accepted for symmetry with the embedded coordinator and kept as ``run_id``;
    - ``before_first_publish(model)``: called once by a leader before its first model is
      published (create intermediate, checkpoint and changelog streams there).
    """
    coordinator = ZkJobCoordinator(
        calculator,
        config,
        metadata=metadata,
        partition_counts=partition_counts,
        connect=connect,
        before_first_publish=before_first_publish,
    )
    coordinator.run_id = run_id
    if processor_id is not None and location_id is not None and listener is not None:
        coordinator.attach(processor_id, location_id, listener)
    return coordinator


register_job_coordinator(ZkJobCoordinator.name, zookeeper_job_coordinator)
