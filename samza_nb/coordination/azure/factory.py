"""The ``azure`` entry of the coordinator registry (``job.coordinator.factory=azure``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Unpack

from samza_nb.config import Config
from samza_nb.coordination.agreed_model import HostedProcessorOptions, host_processor
from samza_nb.coordination.azure.coordinator import AzureJobCoordinator
from samza_nb.coordination.coordinator import register_job_coordinator
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.metadata import MetadataStore
from samza_nb.model import JobModel

__all__ = ["azure_job_coordinator"]


def azure_job_coordinator(
    *,
    calculator: JobModelCalculator,
    config: Config | Mapping[str, Any] | None = None,
    metadata: MetadataStore | None = None,
    connect: str | None = None,
    before_first_publish: Callable[[JobModel], None] | None = None,
    **processor: Unpack[HostedProcessorOptions],
) -> AzureJobCoordinator:
    """Build an :class:`AzureJobCoordinator` (keyword options only).

    - ``calculator``: computes the job models (its inputs' config is the default ``config``);
    - ``config``: ``azure.storage.connect`` (unless ``connect`` or
      ``$SAMZA_NB_AZURE_CONNECTION_STRING``), ``azure.storage.*`` and the
      ``job.coordinator.azure.*`` timings; the app name and id name the container and table;
    - ``metadata``: the job's metadata store (assignments and locality);
    - ``before_first_publish(model)``: called once by a leader before its first model;
    - ``processor_id``, ``location_id``, ``listener``, ``run_id``: see
      :class:`~samza_nb.coordination.agreed_model.HostedProcessorOptions`.
    """
    coordinator = AzureJobCoordinator(
        calculator,
        config,
        metadata=metadata,
        connect=connect,
        before_first_publish=before_first_publish,
    )
    return host_processor(coordinator, **processor)


register_job_coordinator(AzureJobCoordinator.name, azure_job_coordinator)
