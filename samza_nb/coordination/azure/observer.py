"""AzureJobObserver: reads an Azure job's coordination state without joining it (SAMZA.md §10).

It adds no row, takes no lease and writes nothing: it reads the processor table (live
processors, who says it leads), the page blob (its lease state, the job model bundle, the
barrier, the published processor list) and the task locality of the job's metadata store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.assignments import LocalityManager
from samza_nb.coordination.azure.blob import CoordinationBlob
from samza_nb.coordination.azure.names import AzureNames
from samza_nb.coordination.azure.processors import ProcessorTable
from samza_nb.coordination.azure.timings import AzureTimings
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import AzureAccount
from samza_nb.model import JobModel, LocationId

__all__ = ["AzureJobObserver", "AzureObservation"]


@dataclass(frozen=True)
class AzureObservation:
    """One read of an Azure job: ``processors`` (live id → location), ``leader`` (the live
    processor whose row says it leads, None without one), ``lease`` (the page blob's lease
    state), ``version`` (the newest published job model version), ``barrier`` (``START``,
    ``END`` or ``TIMEOUT`` of ``barrier_version``), ``published`` (the processor list on the
    blob), ``joined`` (live processors with a row in that version: they joined its barrier),
    ``previous_version``/``previous_model`` (the bundle's previous ones), ``model`` and ``assignment`` (task → (processor, location)) of that version, and
    ``task_locality``; ``run_ids``: the run ids the live processors' rows carry."""

    where: str
    processors: dict[str, LocationId] = field(default_factory=dict)
    leader: str | None = None
    lease: str = "available"
    version: str | None = None
    barrier: str | None = None
    barrier_version: str | None = None
    published: tuple[str, ...] = ()
    joined: tuple[str, ...] = ()
    model: JobModel | None = None
    previous_version: str | None = None
    previous_model: JobModel | None = None
    assignment: dict[str, tuple[str, LocationId | None]] = field(default_factory=dict)
    task_locality: dict[str, LocationId] = field(default_factory=dict)
    run_ids: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        return (
            f"AzureObservation({self.where}: leader={self.leader}, lease={self.lease}, "
            f"version={self.version}, barrier={self.barrier} {self.barrier_version or ''}".rstrip()
            + f", live={sorted(self.processors)})"
        )


class AzureJobObserver:
    """``AzureJobObserver(config).observe()`` → an :class:`AzureObservation`.

    ``config`` names the job (``app.name``, ``job.id``) and the account
    (``azure.storage.connect`` or ``$SAMZA_NB_AZURE_CONNECTION_STRING``); it may set
    ``job.coordinator.azure.liveness.timeout.ms`` (what counts as live).
    """

    def __init__(self, config: Config | Mapping[str, Any], *, connect: str | None = None) -> None:
        cfg = Config.of(config)
        self.account = AzureAccount.from_config(cfg, connect)
        self.names = AzureNames.for_job(cfg)
        self.freshness = AzureTimings.from_config(cfg).liveness
        self.where = f"{self.account.description}/{self.names.container}"
        self._blobs = self.account.blob_service()
        self._tables = self.account.table_service()
        container = self._blobs.get_container_client(self.names.container)
        self.blob = CoordinationBlob(
            container.get_blob_client(self.names.blob),
            cfg.get_int("job.coordinator.azure.blob.length"),
        )
        self.table = ProcessorTable(self._tables.get_table_client(self.names.table))
        self.metadata = AzureBlobMetadataStore.for_job(cfg, connect=connect, create=False)

    def __repr__(self) -> str:
        return f"AzureJobObserver({self.where!r})"

    def observe(self) -> AzureObservation:
        if not self.blob.exists():
            return AzureObservation(self.where)
        rows = self.table.live(self.freshness)
        leaders = [row.processor_id for row in rows if row.is_leader]
        bundle = self.blob.read_bundle()
        barrier = self.blob.read_barrier()
        model = bundle.curr_model if bundle is not None else None
        assignment = {
            task: (pid, container.location_id)
            for pid, container in (model.containers.items() if model is not None else ())
            for task in container.tasks
        }
        return AzureObservation(
            self.where,
            {row.processor_id: row.location_id for row in rows},
            leaders[0] if len(leaders) == 1 else None,
            self.blob.lease_state(),
            bundle.curr_version if bundle is not None else None,
            barrier[0] if barrier else None,
            barrier[1] if barrier else None,
            tuple(self.blob.read_processors()),
            tuple(
                sorted(
                    row.processor_id
                    for row in rows
                    if bundle is not None and row.version == bundle.curr_version
                )
            ),
            model,
            bundle.prev_version if bundle is not None else None,
            bundle.prev_model if bundle is not None else None,
            dict(sorted(assignment.items())),
            self._task_locality(),
            frozenset(row.run_id for row in rows if row.run_id),
        )

    def _task_locality(self) -> dict[str, LocationId]:
        from samza_nb.errors import MetadataStoreError

        try:
            return LocalityManager(self.metadata).read_task_locality()
        except MetadataStoreError:
            return {}  # no metadata container yet

    def close(self) -> None:
        self.metadata.close()
        self._blobs.close()
        self._tables.close()
