"""The JobCoordinator contract (SAMZA.md §8.5) and the registry of coordinators by name.

A coordinator decides job models; the processors it hosts run them. It tells each processor's
:class:`JobCoordinatorListener`:

- ``on_job_model_expired()``: stop work; the call returns once the epoch in flight has
  committed, so no two processors ever run the same task at once;
- ``on_new_job_model(processor_id, job_model)``: run this processor's container of the model;
- ``on_coordinator_stop()`` / ``on_coordinator_failure(error)``: the coordinator ended.

The embedded coordinator hosts every processor of a job in one process; the ZooKeeper and Azure
coordinators host one processor each and elect a leader that computes models. Coordinators are
built by name (``job.coordinator.factory``). This layer sees no plan and no stream system: the
runtime hands it plain :class:`~samza_nb.coordination.job_model_calculator.JobInputs`.
"""

from __future__ import annotations

import difflib
import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol

from samza_nb.errors import ConfigError
from samza_nb.model import JobModel, LocationId

__all__ = [
    "JobCoordinator",
    "JobCoordinatorListener",
    "coordinator_factory",
    "get_job_coordinator",
    "job_coordinator_names",
    "register_job_coordinator",
]


class JobCoordinatorListener(Protocol):
    """What a coordinator tells one processor (Samza's JobCoordinatorListener)."""

    def on_job_model_expired(self) -> None:
        """Stop work after the epoch in flight commits; return once it has."""

    def on_new_job_model(self, processor_id: str, job_model: JobModel) -> None:
        """Run ``processor_id``'s container of ``job_model`` (no container: stay idle)."""

    def on_coordinator_stop(self) -> None:
        """The coordinator stopped: the processor stops too."""

    def on_coordinator_failure(self, error: BaseException) -> None:
        """The coordinator failed: the processor stops and reports ``error``."""


class JobCoordinator(ABC):
    """Decides the job models of one job for the processors it hosts.

    ``attach`` registers a processor of this process before ``start``; a distributed
    coordinator (ZooKeeper, Azure) hosts exactly one.
    """

    #: The registry name (``job.coordinator.factory``).
    name: str = ""

    def __init__(self) -> None:
        self._listeners: dict[str, JobCoordinatorListener] = {}
        self._locations: dict[str, LocationId] = {}

    def attach(
        self, processor_id: str, location_id: LocationId, listener: JobCoordinatorListener
    ) -> None:
        """Host processor ``processor_id`` at ``location_id``; its listener gets the callbacks."""
        self._listeners[processor_id] = listener
        self._locations[processor_id] = location_id

    def detach(self, processor_id: str) -> None:
        """Forget a processor of this process (after it stopped)."""
        self._listeners.pop(processor_id, None)
        self._locations.pop(processor_id, None)

    @property
    def hosted_processors(self) -> dict[str, LocationId]:
        """The processors of this process: id → location."""
        return dict(self._locations)

    @abstractmethod
    def start(self) -> None:
        """Join the job: compute or await the first job model and hand it to the listeners."""

    @abstractmethod
    def stop(self) -> None:
        """Leave the job (idempotent): listeners get ``on_coordinator_stop``."""

    @property
    @abstractmethod
    def job_model(self) -> JobModel | None:
        """The job model the processors run now (None before the first one)."""

    @property
    def is_leader(self) -> bool:
        """Whether this coordinator decides job models (the embedded one always does)."""
        return True


#: ``factory(**options)`` builds a coordinator.
JobCoordinatorFactory = Callable[..., JobCoordinator]

_COORDINATORS: dict[str, JobCoordinatorFactory] = {}

#: Built-in coordinators: name → (module, class), imported on first use so that this contract
#: module depends on none of its implementations.
_BUILTINS: dict[str, tuple[str, str]] = {
    "embedded": ("samza_nb.coordination.embedded", "EmbeddedJobCoordinator"),
    "zookeeper": ("samza_nb.coordination.zk.factory", "zookeeper_job_coordinator"),
    "azure": ("samza_nb.coordination.azure.factory", "azure_job_coordinator"),
}


def register_job_coordinator(name: str, factory: JobCoordinatorFactory) -> None:
    """Register a coordinator under ``name`` (a value of ``job.coordinator.factory``)."""
    if not isinstance(name, str) or not name:
        msg = f"job coordinator name must be a non-empty string, got {name!r}"
        raise ConfigError(msg)
    _COORDINATORS[name] = factory


def job_coordinator_names() -> list[str]:
    """The registered coordinator names."""
    _load_builtins()
    return sorted(_COORDINATORS)


def get_job_coordinator(name: str, **options: Any) -> JobCoordinator:
    """A coordinator by name, built with ``options``; an unknown name lists the known ones."""
    return coordinator_factory(name)(**options)


def coordinator_factory(name: str) -> JobCoordinatorFactory:
    """The factory registered as ``name``; an unknown name is a ConfigError listing the known
    ones (with the one it may mean)."""
    _load_builtins()
    factory = _COORDINATORS.get(name)
    if factory is None:
        close = difflib.get_close_matches(name, list(_COORDINATORS), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        msg = (
            f"unknown job.coordinator.factory {name!r}; {hint}known: "
            f"{', '.join(sorted(_COORDINATORS))}"
        )
        raise ConfigError(msg)
    return factory


def _load_builtins() -> None:
    for name, (module, attribute) in _BUILTINS.items():
        if name not in _COORDINATORS:
            _COORDINATORS[name] = getattr(importlib.import_module(module), attribute)

