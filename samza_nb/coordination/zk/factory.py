"""The ``zookeeper`` entry of the coordinator registry (``job.coordinator.factory=zookeeper``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Unpack

from samza_nb.config import Config
from samza_nb.coordination.agreed_model import HostedProcessorOptions, host_processor
from samza_nb.coordination.coordinator import register_job_coordinator
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.zk.coordinator import ZkJobCoordinator
from samza_nb.metadata import MetadataStore
from samza_nb.model import JobModel

__all__ = ["zookeeper_job_coordinator"]


def zookeeper_job_coordinator(
    *,
    calculator: JobModelCalculator,
    config: Config | Mapping[str, Any] | None = None,
    metadata: MetadataStore | None = None,
    partition_counts: Callable[[], Mapping[str, int]] | None = None,
    connect: str | None = None,
    before_first_publish: Callable[[JobModel], None] | None = None,
    **processor: Unpack[HostedProcessorOptions],
) -> ZkJobCoordinator:
    """Build a :class:`ZkJobCoordinator` (keyword options only).

    - ``calculator``: computes the job models (its inputs' config is the default ``config``);
    - ``config``: ``job.coordinator.zk.connect`` (required unless ``connect``), the
      ``job.coordinator.zk.*`` timeouts, ``job.debounce.time.ms``, the app name and job id that
      name the coordination tree;
    - ``metadata``: the job's metadata store, which receives assignments and locality;
    - ``partition_counts``: a callable giving stream → partition count now (leader's monitor);
    - ``before_first_publish(model)``: called once by a leader before its first model is
      published (create intermediate, checkpoint and changelog streams there);
    - ``processor_id``, ``location_id``, ``listener``, ``run_id``: see
      :class:`~samza_nb.coordination.agreed_model.HostedProcessorOptions`.
    """
    coordinator = ZkJobCoordinator(
        calculator,
        config,
        metadata=metadata,
        partition_counts=partition_counts,
        connect=connect,
        before_first_publish=before_first_publish,
    )
    return host_processor(coordinator, **processor)


register_job_coordinator(ZkJobCoordinator.name, zookeeper_job_coordinator)
