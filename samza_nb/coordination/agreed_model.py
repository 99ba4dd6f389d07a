"""AgreedModelCoordinator: what the ZooKeeper and Azure coordinators share on a processor's side.

Both run one processor per process, elect a leader and hand that processor the job model the
group agreed on. They keep the same state under a condition variable (the agreed model and its
version, leadership, stopped) and let a caller block until a model is agreed; only the service
and the place of the job's coordination data differ.
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod

from samza_nb.coordination.coordinator import JobCoordinator
from samza_nb.errors import CoordinationError
from samza_nb.model import JobModel

__all__ = ["AgreedModelCoordinator"]


class AgreedModelCoordinator(JobCoordinator):
    """A JobCoordinator whose processor runs the model its group agreed on.

    Subclasses set ``_model``, ``_model_version``, ``_leading`` and ``_stopped`` under
    ``_changed`` (and notify it), and name their service and coordination data.
    """

    _service: str  # "ZooKeeper", "Azure"
    #: How a model becomes this processor's: "agreed" (ZooKeeper's barrier), "confirmed".
    _agreement: str = "agreed"
    _changed: threading.Condition
    _model: JobModel | None
    _model_version: str | None
    _leading: bool
    _stopped: bool

    @property
    @abstractmethod
    def processor_id(self) -> str: ...

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
                        f"no job model {self._agreement} within {timeout:g} s for processor "
                        f"{self.processor_id!r} {self._coordination_place()}"
                    )
                    raise CoordinationError(msg)
                self._changed.wait(remaining)
            return self._model
