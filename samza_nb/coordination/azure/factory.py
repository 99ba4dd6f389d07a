"""The ``azure`` entry of the coordinator registry (``job.coordinator.factory=azure``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.azure.coordinator import AzureJobCoordinator
from samza_nb.coordination.coordinator import JobCoordinatorListener, register_job_coordinator
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.metadata import MetadataStore
from samza_nb.model import JobModel, LocationId

__all__ = ["azure_job_coordinator"]


def azure_job_coordinator(
    *,
    calculator: JobModelCalculator,
    config: Config | Mapping[str, Any] | None = None,
    metadata: MetadataStore | None = None,
    connect: str | None = None,
    processor_id: str | None = None,
    location_id: LocationId | None = None,
    listener: JobCoordinatorListener | None = None,
    run_id: str | None = None,
    before_first_publish: Callable[[JobModel], None] | None = None,
) -> AzureJobCoordinator:
    """Build an :class:`AzureJobCoordinator` (keyword options only).

    - ``calculator``: computes the job models (its inputs' config is the default ``config``);
    - ``config``: ``azure.storage.connect`` (unless ``connect`` or
      ``$SAMZA_NB_AZURE_CONNECTION_STRING``), ``azure.storage.*`` and the
      ``job.coordinator.azure.*`` timings; the app name and id name the container and table;
    - ``metadata``: the job's metadata store (assignments and locality);
    - ``processor_id``, ``location_id``, ``listener``: when all three are given the processor is
      attached at once (else call ``attach`` before ``start``);
    - ``run_id``: accepted for symmetry with the embedded coordinator and kept as ``run_id``;
    - ``before_first_publish(model)``: called once by a leader before its first model.
    """
    coordinator = AzureJobCoordinator(
        calculator,
        config,
        metadata=metadata,
        connect=connect,
        before_first_publish=before_first_publish,
    )
    coordinator.run_id = run_id
    if processor_id is not None and location_id is not None and listener is not None:
        coordinator.attach(processor_id, location_id, listener)
    return coordinator


register_job_coordinator(AzureJobCoordinator.name, azure_job_coordinator)
