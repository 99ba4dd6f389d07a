"""What every part of the Azure coordinator shares: its settings, its state and its listener.

:class:`~samza_nb.coordination.azure.coordinator.AzureJobCoordinator` is made of this base, the
leader's side (``leadership``) and a processor's side of a round (``agreement``); the
coordinator module itself holds the threads, storage set-up, fencing and stopping.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.agreed_model import AgreedModelCoordinator
from samza_nb.coordination.azure.blob import CoordinationBlob
from samza_nb.coordination.azure.lock import AzureLock
from samza_nb.coordination.azure.names import AzureNames
from samza_nb.coordination.azure.processors import UNASSIGNED, ProcessorTable, new_incarnation
from samza_nb.coordination.azure.timings import AzureTimings
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.errors import CoordinationError
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import AzureAccount
from samza_nb.model import JobModel, LocationId

__all__ = ["AzureCoordinatorBase"]


@dataclass
class _Round:
    """The leader's barrier of one version."""

    version: str
    model: JobModel
    started: float
    #: (processor id, incarnation) of the participants.
    members: frozenset[tuple[str, str]]

    @property
    def participants(self) -> frozenset[str]:
        """The participants' processor ids."""
        return frozenset(pid for pid, _ in self.members)


class AzureCoordinatorBase(AgreedModelCoordinator):
    """The state of an :class:`AzureJobCoordinator` and what all its parts call."""

    # Set by ``start``.
    container: Any
    blob: CoordinationBlob
    table: ProcessorTable
    _fence_blob: Any

    def __init__(
        self,
        calculator: JobModelCalculator,
        config: Config | Mapping[str, Any] | None = None,
        *,
        metadata: MetadataStore | None = None,
        connect: str | None = None,
        before_first_publish: Callable[[JobModel], None] | None = None,
    ) -> None:
        super().__init__()
        self._calculator = calculator
        self.config = calculator.inputs.config if config is None else Config.of(config)
        self.account = AzureAccount.from_config(self.config, connect)
        self.names = AzureNames.for_job(self.config)
        self.timings = AzureTimings.from_config(self.config)
        self.blob_length = self.config.get_int("job.coordinator.azure.blob.length")
        self.debounce = self.config.get_int("job.debounce.time.ms") / 1000
        self._metadata = metadata
        self._before_first_publish = before_first_publish
        self._state = threading.RLock()
        self._changed = threading.Condition(self._state)
        self._wake = threading.Event()
        self._stopped = False
        self._leading = False
        self._lease_id: str | None = None
        self._renewed_at = 0.0
        self._version: str | None = None  # the version this processor confirmed
        self._model: JobModel | None = None
        self._model_version: str | None = None  # the version of _model
        self._pending: tuple[str, JobModel] | None = None
        self._round: _Round | None = None
        self._needs_round = False
        #: The live (processor id, incarnation) pairs the leader saw last, and published last.
        self._seen_live: frozenset[tuple[str, str]] | None = None
        self._published_members: frozenset[tuple[str, str]] | None = None
        #: This process's incarnation of its processor id (see processors.py).
        self._incarnation = new_incarnation()
        self._seen_at = 0.0  # when it last changed
        self._working = False
        self._expired = True
        self._fence_lease: str | None = None
        #: Set by the heartbeat thread: the fencing lease found broken while no other process
        #: holds this processor id (the protocol thread looks at why; a lease taken since
        #: replaces it).
        self._broken_fence_lease: str | None = None
        self._run_id = ""
        self._threads: list[threading.Thread] = []
        self._services: list[Any] = []

    def __repr__(self) -> str:
        pid = next(iter(self._listeners), None)
        return (
            f"AzureJobCoordinator({self.account.description!r}, {self.names.container!r}, "
            f"processor={pid!r}, leader={self._leading}, version={self._version})"
        )

    # -- the contract --------------------------------------------------------------------------
    def _check_processor(self, processor_id: str, location_id: LocationId) -> None:
        if not processor_id or not isinstance(processor_id, str):
            msg = f"an Azure processor needs a non-empty processor id, got {processor_id!r}"
            raise CoordinationError(msg)

    @property
    def location_id(self) -> LocationId:
        return self._locations[self.processor_id]

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _coordination_place(self) -> str:
        return f"in {self.names.container}"

    def _fenced_store(self) -> AzureBlobMetadataStore | None:
        """The metadata store whose commit blob holds the processors' fencing tokens (None
        without one: then no commit can be fenced, and ``fence`` refuses them)."""
        return self._metadata if isinstance(self._metadata, AzureBlobMetadataStore) else None

    # -- heartbeats --------------------------------------------------------------------------------
    def _heartbeat(self) -> None:
        self._write_row(self._version or UNASSIGNED)

    def _write_row(self, version: str) -> None:
        """This processor's row in ``version`` (a heartbeat refreshes it)."""
        self.table.upsert(
            version,
            self.processor_id,
            is_leader=self._leading,
            location_id=self.location_id,
            run_id=self._run_id,
            incarnation=self._incarnation,
        )

    @abstractmethod
    def lock(self, lock_id: str, *, timeout: float = 60.0) -> AzureLock:
        """A lock of this job (call after ``start``)."""

    @abstractmethod
    def _retake_broken_fence(self, version: str) -> None:
        """After the fencing lease was found broken while this processor works on ``version``
        and is listed in it (a late break by a leader frozen since it dropped the processor):
        stop the work, take the lease anew and start the work again."""

    @abstractmethod
    def _regain_fence_lease(self) -> bool:
        """Whether this processor holds its fencing lease, taken again (its work stopped
        first) when the leader broke it on dropping the processor; called before it joins a
        version that lists it."""
