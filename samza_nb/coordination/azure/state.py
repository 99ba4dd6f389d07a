"""What the parts of one processor's Azure coordinator share: its settings, the job's storage
(the coordination blob and the processor table), the lock its threads take, and the processor
it hosts with the row it heartbeats.

:class:`~samza_nb.coordination.azure.coordinator.AzureJobCoordinator` is composed of the
leader's side (``leadership``), a processor's side of a round (``agreement``) and its fencing
lease (``fencing``); each is handed this state and the parts it calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.azure.blob import CoordinationBlob
from samza_nb.coordination.azure.names import AzureNames
from samza_nb.coordination.azure.processors import UNASSIGNED, ProcessorTable, new_incarnation
from samza_nb.coordination.azure.timings import AzureTimings
from samza_nb.coordination.coordinator import JobCoordinatorListener
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import AzureAccount
from samza_nb.model import LocationId

__all__ = ["AzureSettings", "AzureState"]


class AzureSettings:
    """``azure.storage.*``, the job's names, the ``job.coordinator.azure.*`` timings and
    ``job.debounce.time.ms`` (in seconds)."""

    def __init__(self, config: Config, connect: str | None = None) -> None:
        self.account = AzureAccount.from_config(config, connect)
        self.names = AzureNames.for_job(config)
        self.timings = AzureTimings.from_config(config)
        self.blob_length = config.get_int("job.coordinator.azure.blob.length")
        self.debounce = config.get_int("job.debounce.time.ms") / 1000


class AzureState:
    """One processor's view of the job's coordination: set up by the coordinator's ``start``.

    ``lock`` guards what the protocol thread and the heartbeat thread both change; ``changed``
    (on the same lock) is notified when the agreed model changes or the coordinator stops.
    """

    # Set by the coordinator's ``start``.
    container: Any
    blob: CoordinationBlob
    table: ProcessorTable

    def __init__(
        self,
        settings: AzureSettings,
        *,
        metadata: MetadataStore | None,
        processor_id: Callable[[], str],
        locations: Mapping[str, LocationId],
        listener: Callable[[], JobCoordinatorListener],
    ) -> None:
        self.settings = settings
        self.names = settings.names
        self.timings = settings.timings
        self.metadata = metadata
        self._processor_id = processor_id
        self._locations = locations
        self.listener = listener
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        #: Set to wake the heartbeat thread (the coordinator stops).
        self.wake = threading.Event()
        self.stopped = False
        #: Whether this processor holds the leader's lease (its heartbeats say so).
        self.leading = False
        #: The version this processor confirmed (its heartbeats refresh its row there).
        self.version: str | None = None
        #: This process's incarnation of its processor id (see processors.py).
        self.incarnation = new_incarnation()
        self.run_id = ""

    @property
    def processor_id(self) -> str:
        return self._processor_id()

    @property
    def location_id(self) -> LocationId:
        return self._locations[self.processor_id]

    def fenced_store(self) -> AzureBlobMetadataStore | None:
        """The metadata store whose commit blob holds the processors' fencing tokens (None
        without one: then no commit can be fenced, and ``fence`` refuses them)."""
        return self.metadata if isinstance(self.metadata, AzureBlobMetadataStore) else None

    # -- heartbeats --------------------------------------------------------------------------------
    def heartbeat(self) -> None:
        self.write_row(self.version or UNASSIGNED)

    def write_row(self, version: str) -> None:
        """This processor's row in ``version`` (a heartbeat refreshes it)."""
        self.table.upsert(
            version,
            self.processor_id,
            is_leader=self.leading,
            location_id=self.location_id,
            run_id=self.run_id,
            incarnation=self.incarnation,
        )
