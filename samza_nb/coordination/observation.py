"""What an observer sees of a distributed job's coordination, whatever the coordinator.

A :class:`JobObserver` reads a job's coordination state (ZooKeeper's tree, Azure's blob and
table) without joining the group, and returns a :class:`JobObservation`: the live processors
with their locations, the leader, the job-model versions with their barrier states, and the
task → processor → location assignment of the newest model. Observers are opened by URL
scheme (``zookeeper://``; Azure adds ``azure://``) in ``samza_nb.notebook.magics.attach_schemes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from samza_nb.model import JobModel, LocationId

__all__ = ["JobObservation", "JobObserver", "ObservedProcessor", "ObservedVersion", "moved_tasks"]


@dataclass(frozen=True)
class ObservedProcessor:
    """A live processor: its id, location and whether it leads."""

    processor_id: str
    location_id: LocationId
    leader: bool = False


@dataclass(frozen=True)
class ObservedVersion:
    """One published job-model version and its barrier.

    ``barrier`` is the barrier's state (``NEW``, ``DONE``, ``TIMED_OUT``; None when it is gone),
    ``expected`` the processors it waits for, ``joined`` those that joined, ``moved`` the tasks
    whose processor differs from the previous version's (every task for the first version).
    """

    version: str
    barrier: str | None
    expected: tuple[str, ...] = ()
    joined: tuple[str, ...] = ()
    moved: tuple[str, ...] = ()
    model: JobModel | None = None


@dataclass(frozen=True)
class JobObservation:
    """One read of a job's coordination state (see the module docstring).

    ``where`` names what was read (with no secret); ``latest`` is the newest published
    version, ``active`` the newest one that reached consensus; ``versions`` are the kept
    versions, oldest first; ``assignment`` is task → (processor, location) in the latest model;
    ``task_locality`` is task → location where each task last ran; ``run_ids`` are the run ids
    the live processors carry (one, unless a deployment is starting or ending).
    """

    where: str
    processors: tuple[ObservedProcessor, ...] = ()
    latest: str | None = None
    active: str | None = None
    versions: tuple[ObservedVersion, ...] = ()
    assignment: dict[str, tuple[str, LocationId | None]] = field(default_factory=dict)
    task_locality: dict[str, LocationId] = field(default_factory=dict)
    run_ids: frozenset[str] = frozenset()

    @property
    def leader(self) -> str | None:
        """The leading processor's id (None when no processor is live)."""
        return next((p.processor_id for p in self.processors if p.leader), None)

    @property
    def latest_version(self) -> ObservedVersion | None:
        return next((v for v in self.versions if v.version == self.latest), None)

    @property
    def barrier(self) -> str | None:
        """The barrier state of the latest version."""
        version = self.latest_version
        return version.barrier if version else None


class JobObserver(Protocol):
    """Reads one job's coordination state; never joins its group."""

    def observe(self) -> JobObservation:
        """Read the state now."""

    def close(self) -> None:
        """Release the connection (idempotent)."""


def moved_tasks(before: JobModel | None, after: JobModel) -> tuple[str, ...]:
    """Tasks whose processor differs between two models (all of ``after``'s without ``before``).

    >>> from samza_nb.model import ContainerModel, TaskModel
    >>> one = JobModel({}, [ContainerModel("p1", [TaskModel("t1", [], 0), TaskModel("t2", [], 1)])])
    >>> two = JobModel({}, [ContainerModel("p1", [TaskModel("t1", [], 0)]),
    ...                     ContainerModel("p2", [TaskModel("t2", [], 1)])])
    >>> moved_tasks(one, two)
    ('t2',)
    """
    now = after.task_to_processor()
    if before is None:
        return tuple(sorted(now))
    then = before.task_to_processor()
    return tuple(sorted(task for task, pid in now.items() if then.get(task) != pid))
