"""ZkJobObserver: reads a ZooKeeper job's coordination tree without joining it (SAMZA.md §8.1).

It registers no processor, joins no barrier, takes no lock and writes nothing: its own session
only reads ``processors/``, ``jobModelGeneration/`` and ``taskLocality/``. The leader is the
processor whose node has the smallest sequence number (the election's rule, §8.4). Job models
are immutable once published, so each version is read once and kept.
"""

from __future__ import annotations

from samza_nb.config import Config
from samza_nb.coordination.observation import (
    JobObservation,
    ObservedProcessor,
    ObservedVersion,
    moved_tasks,
)
from samza_nb.coordination.zk.barrier import VersionBarrier
from samza_nb.coordination.zk.job_models import JobModelVersions
from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.coordination.zk.processors import ProcessorRegistry
from samza_nb.coordination.zk.run_id import member_run_ids
from samza_nb.coordination.zk.task_locality import ZkTaskLocality
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import JobModel

__all__ = ["ZkJobObserver"]


class ZkJobObserver:
    """``ZkJobObserver("host:port/chroot", config).observe()`` → a :class:`JobObservation`.

    ``config`` names the job (``app.name``, ``job.id``) and may set
    ``job.coordinator.zk.session.timeout.ms`` / ``connection.timeout.ms``.
    """

    def __init__(self, connect: str, config: Config) -> None:
        self.keys = ZkKeyBuilder.for_job(config)
        self.zk = ZkClient(
            connect,
            session_timeout=config.get_int("job.coordinator.zk.session.timeout.ms") / 1000,
            connection_timeout=config.get_int("job.coordinator.zk.connection.timeout.ms") / 1000,
            error=CoordinationError,
        )
        self.where = f"{self.zk.description}{self.keys.root}"
        self._versions = JobModelVersions(self.zk, self.keys)
        self._barrier = VersionBarrier(self.zk, self.keys)
        self._registry = ProcessorRegistry(self.zk, self.keys)
        self._locality = ZkTaskLocality(self.zk, self.keys)
        self._models: dict[str, JobModel] = {}

    def __repr__(self) -> str:
        return f"ZkJobObserver({self.where!r})"

    def observe(self) -> JobObservation:
        nodes = self._registry.read() if self.zk.exists(self.keys.processors) else []
        processors = tuple(
            ObservedProcessor(node.processor_id, node.location_id, leader=i == 0)
            for i, node in enumerate(nodes)
        )
        latest, _ = self._versions.current() if self.zk.exists(self.keys.root) else (None, -1)
        active = self._versions.active() if latest else None
        versions: list[ObservedVersion] = []
        previous: JobModel | None = None
        for version in self._versions.published() if latest else []:
            model = self._model(version)
            if model is None:
                continue
            versions.append(
                ObservedVersion(
                    version,
                    self._barrier.state(version),
                    tuple(self._barrier.expected(version)),
                    tuple(self._barrier.participants(version)),
                    moved_tasks(previous, model),
                    model,
                )
            )
            previous = model
        self._models = {v.version: v.model for v in versions if v.model is not None}
        newest = self._models.get(latest or "")
        assignment = {}
        if newest is not None:
            for pid, container in newest.containers.items():
                for task in container.tasks:
                    assignment[task] = (pid, container.location_id)
        return JobObservation(
            self.where,
            processors,
            latest,
            active,
            tuple(versions),
            dict(sorted(assignment.items())),
            self._locality.read() if self.zk.exists(self.keys.task_locality) else {},
            member_run_ids(self.zk, self.keys),
        )

    def _model(self, version: str) -> JobModel | None:
        if version not in self._models:
            try:
                self._models[version] = self._versions.read(version)
            except CoordinationError:
                return None  # cleaned up (or half written) between listing and reading
        return self._models[version]

    def close(self) -> None:
        self.zk.close()
