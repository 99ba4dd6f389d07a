"""AgreedModelCoordinator: what the ZooKeeper and Azure coordinators share on a processor's side.

Both run one processor per process, elect a leader and hand that processor the job model the
group agreed on. They keep the same state under a condition variable (the agreed model and its
version, leadership, stopped) and let a caller block until a model is agreed; only the service
and the place of the job's coordination data differ. Their factories share the options that
name the hosted processor (:class:`HostedProcessorOptions`, :func:`host_processor`).
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from typing import TypedDict, TypeVar, Unpack

from samza_nb.coordination.coordinator import JobCoordinator, JobCoordinatorListener
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.errors import CoordinationError
from samza_nb.model import JobModel, LocationId

__all__ = ["AgreedModelCoordinator", "HostedProcessorOptions", "host_processor"]


class AgreedModelCoordinator(JobCoordinator):
    """A JobCoordinator whose processor runs the model its group agreed on.

    Subclasses set ``_model``, ``_model_version``, ``_leading`` and ``_stopped`` under
    ``_changed`` (and notify it), keep the leader's ``_calculator``, and name their service and
    coordination data.
    """

    _service: str  # "ZooKeeper", "Azure"
    #: How a model becomes this processor's: "agreed" (ZooKeeper's barrier), "confirmed".
    _agreed_as: str = "agreed"
    _changed: threading.Condition
    _model: JobModel | None
    _model_version: str | None
    _leading: bool
    _stopped: bool
    _calculator: JobModelCalculator

    def __init__(self) -> None:
        super().__init__()
        #: The deployment's run id, when the runtime passes one.
        self.run_id: str | None = None

    def attach(
        self, processor_id: str, location_id: LocationId, listener: JobCoordinatorListener
    ) -> None:
        """Host ``processor_id``, the one processor of this coordinator."""
        self._check_processor(processor_id, location_id)
        if self._listeners and processor_id not in self._listeners:
            article = "an" if self._service[:1] in "AEIOU" else "a"
            msg = (
                f"{article} {self._service} coordinator hosts one processor; "
                f"{sorted(self._listeners)[0]!r} is attached, so {processor_id!r} needs a "
                "coordinator of its own"
            )
            raise CoordinationError(msg)
        super().attach(processor_id, location_id, listener)

    @abstractmethod
    def _check_processor(self, processor_id: str, location_id: LocationId) -> None:
        """Raise CoordinationError when the service cannot host this processor id or location."""

    @property
    def processor_id(self) -> str:
        if not self._listeners:
            msg = (
                f"no processor is attached to this {self._service} coordinator (call attach first)"
            )
            raise CoordinationError(msg)
        return next(iter(self._listeners))

    @property
    def calculator(self) -> JobModelCalculator:
        """The calculator the leader uses now (ZooKeeper's partition monitor may replace it)."""
        return self._calculator

    def _listener(self) -> JobCoordinatorListener:
        return self._listeners[self.processor_id]

    def _tell_stopped(self, failure: BaseException | None) -> None:
        """The last step of stopping: the hosted processor hears that it stopped or failed."""
        if not self._listeners:
            return
        if failure is None:
            self._listener().on_coordinator_stop()
        else:
            self._listener().on_coordinator_failure(failure)

    @abstractmethod
    def _coordination_place(self) -> str:
        """Where the job's coordination data live, for messages (``under /app-…``)."""

    @property
    def job_model(self) -> JobModel | None:
        return self._model

    @property
    def job_model_version(self) -> str | None:
        """The version of :attr:`job_model` (None before the first one)."""
        return self._model_version

    @property
    def is_leader(self) -> bool:
        return self._leading

    def wait_for_job_model(self, timeout: float, newer_than: str | None = None) -> JobModel:
        """Block until a model (with a version other than ``newer_than``) is agreed."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._model is None or self._model_version == newer_than:
                if self._stopped:
                    msg = f"the {self._service} coordinator of {self.processor_id!r} stopped"
                    raise CoordinationError(msg)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    msg = (
                        f"no job model {self._agreed_as} within {timeout:g} s for processor "
                        f"{self.processor_id!r} {self._coordination_place()}"
                    )
                    raise CoordinationError(msg)
                self._changed.wait(remaining)
            return self._model


class HostedProcessorOptions(TypedDict, total=False):
    """The factory options that name the one processor a coordinator hosts.

    - ``processor_id``, ``location_id``, ``listener``: when all three are given the processor is
      attached at once (else call ``attach`` before ``start``);
    - ``run_id``: accepted for symmetry with the embedded coordinator and kept as ``run_id``.
    """

    processor_id: str | None
    location_id: LocationId | None
    listener: JobCoordinatorListener | None
    run_id: str | None


_Coordinator = TypeVar("_Coordinator", bound=AgreedModelCoordinator)


def host_processor(
    coordinator: _Coordinator, **options: Unpack[HostedProcessorOptions]
) -> _Coordinator:
    """``coordinator`` with the run id and, when all three are named, the processor attached."""
    unknown = sorted(set(options) - HostedProcessorOptions.__optional_keys__)
    if unknown:
        # What Python says of a keyword the factory's signature did not name.
        msg = f"the {coordinator.name} job coordinator got unexpected keyword options: {unknown}"
        raise TypeError(msg)
    coordinator.run_id = options.get("run_id")
    processor_id = options.get("processor_id")
    location_id = options.get("location_id")
    listener = options.get("listener")
    if processor_id is not None and location_id is not None and listener is not None:
        coordinator.attach(processor_id, location_id, listener)
    return coordinator
