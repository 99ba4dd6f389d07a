"""The embedded job coordinator: every processor of a job in one process (the default).

It plays the leader's part for its logical processors: it computes each job model with the
:class:`JobModelCalculator`, persists it with the task → processor, task-mode, SSP and locality
assignments (Samza's namespaces, coordination/assignments.py), expires the processors whose
container changed (each returns once its epoch in flight committed), then hands them the new
model. Processors whose container did not change keep working through a regroup.

On start it reads the job's previous model back: its changelog partitions always carry over;
its placement and the stored task locality feed the grouper only within the same run id (a
restart of one deployment keeps every task where its stores are; a new run id does not keep
locality, as DESIGN.md decides). Every grouping also reads where the processors reported the
tasks' stores in this run (coordination/store_locality.py), so a processor that joins at a
location gets the tasks whose stores are there.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.assignments import LocalityManager, update_task_assignments
from samza_nb.coordination.coordinator import JobCoordinator
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.store_locality import StoreLocality
from samza_nb.errors import CoordinationError, MetadataStoreError, ModelError
from samza_nb.grouping import GrouperMetadata
from samza_nb.metadata import MetadataStore, NamespacedMetadataStore
from samza_nb.model import JobModel, LocationId, TaskMode, check_location_folders

__all__ = ["JOB_MODEL_NAMESPACE", "EmbeddedJobCoordinator", "read_stored_job_model"]

#: Where the embedded coordinator keeps the job model it published last (with its run id).
JOB_MODEL_NAMESPACE = "samza-nb-job-model-v1"
_LATEST = "latest"


def read_stored_job_model(store: MetadataStore) -> tuple[str | None, JobModel | None]:
    """(run id, job model) as the embedded coordinator last published them."""
    raw = NamespacedMetadataStore(store, JOB_MODEL_NAMESPACE).get(_LATEST)
    if raw is None:
        return None, None
    try:
        stored = json.loads(raw)
        return stored.get("runId"), JobModel.from_dict(stored["jobModel"])
    except (ValueError, KeyError, TypeError, ModelError) as error:
        msg = f"metadata namespace {JOB_MODEL_NAMESPACE!r}: the stored job model is unreadable: {error}"
        raise MetadataStoreError(msg) from error


class EmbeddedJobCoordinator(JobCoordinator):
    """Decides job models for the logical processors of this process."""

    name = "embedded"

    def __init__(
        self,
        calculator: JobModelCalculator,
        metadata: MetadataStore,
        *,
        run_id: str,
        config: Config | None = None,
    ) -> None:
        """``config`` is the job's (the calculator already holds what grouping reads)."""
        super().__init__()
        self._calculator = calculator
        self._metadata = metadata
        self._run_id = run_id
        self._model: JobModel | None = None
        self._lock = threading.RLock()
        self._stopped = False

    @property
    def job_model(self) -> JobModel | None:
        return self._model

    @property
    def grouper(self) -> str:
        return self._calculator.grouper

    @property
    def grouper_options(self) -> dict[str, Any]:
        return dict(self._calculator.options)

    @property
    def replication_factor(self) -> int:
        """Copies of each task's state the models place (1 active + standbys)."""
        return self._calculator.replication_factor

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            check_location_folders(self.hosted_processors.values())  # one store root for all
            stored_run, previous = read_stored_job_model(self._metadata)
            if stored_run == self._run_id and previous is not None:
                metadata = GrouperMetadata.from_job_model(
                    previous,
                    self.hosted_processors,
                    LocalityManager(self._metadata).read_task_locality(),
                    StoreLocality(self._metadata).read(self._run_id),
                )
            else:
                metadata = GrouperMetadata(processor_locality=self.hosted_processors)
            model = self._calculator.calculate(
                self.hosted_processors, metadata, previous, same_run=stored_run == self._run_id
            )
            self._publish(model)

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            listeners = list(self._listeners.values())
        for listener in listeners:
            listener.on_coordinator_stop()

    # -- regrouping --------------------------------------------------------------------------
    def propose(
        self,
        processors: Mapping[str, LocationId],
        grouper: str | None = None,
        options: Mapping[str, Any] | None = None,
        replication_factor: int | None = None,
    ) -> JobModel:
        """The model :meth:`regroup` would publish, without publishing it."""
        check_location_folders(processors.values())  # one store root for all
        with self._lock:
            previous = self._model
            calculator = self._calculator.with_grouper(grouper, options).with_replication_factor(
                replication_factor
            )
            metadata = GrouperMetadata.from_job_model(
                previous, dict(processors), store_locality=StoreLocality(self._metadata).read(self._run_id)
            )
            return calculator.calculate(dict(processors), metadata, previous)

    def regroup(
        self,
        processors: Mapping[str, LocationId],
        grouper: str | None = None,
        options: Mapping[str, Any] | None = None,
        replication_factor: int | None = None,
    ) -> JobModel:
        """Publish a model for ``processors`` (id → location), optionally with another grouper
        or standby replication factor.

        Processors must be attached first; those left out are expired and detached. A grouper
        that fails leaves the running model, grouper and processors as they were.
        """
        with self._lock:
            if self._stopped:
                msg = "the job's coordinator has stopped; nothing to regroup"
                raise CoordinationError(msg)
            unknown = sorted(set(processors) - set(self._listeners))
            if unknown:
                msg = f"processors {unknown} are not attached to this coordinator"
                raise CoordinationError(msg)
            model = self.propose(processors, grouper, options, replication_factor)
            self._calculator = self._calculator.with_grouper(grouper, options).with_replication_factor(
                replication_factor
            )
            removed = [pid for pid in self._listeners if pid not in processors]
            self._publish(model, removed=removed)
            for pid in removed:
                self.detach(pid)
            return model

    def _publish(self, model: JobModel, removed: Collection[str] = ()) -> None:
        previous = self._model
        changed = [
            pid
            for pid in self._listeners
            if previous is None
            or pid in removed
            or _actives(previous, pid) != _actives(model, pid)
        ]
        # Placing or moving a standby never expires a processor's active work: it gets the
        # new model after the expired ones stopped and before they resume.
        standbys_only = [
            pid
            for pid in self._listeners
            if pid not in changed and previous.containers.get(pid) != model.containers.get(pid)  # type: ignore[union-attr]
        ]
        if previous is not None:
            for pid in changed:
                self._listeners[pid].on_job_model_expired()
        self._persist(model)
        self._model = model
        for pid in standbys_only:
            self._listeners[pid].on_new_job_model(pid, model)
        for pid in changed:
            if pid in removed:
                self._listeners[pid].on_coordinator_stop()
            else:
                self._listeners[pid].on_new_job_model(pid, model)

    def _persist(self, model: JobModel) -> None:
        record = {"runId": self._run_id, "jobModel": model.to_dict()}
        NamespacedMetadataStore(self._metadata, JOB_MODEL_NAMESPACE).put(
            _LATEST, json.dumps(record, sort_keys=True).encode()
        )
        update_task_assignments(self._metadata, model)



def _actives(model: JobModel, pid: str) -> tuple[object, ...] | None:
    """What of a processor's container an expiry is about: its location and active tasks."""
    container = model.containers.get(pid)
    if container is None:
        return None
    return (
        container.location_id,
        frozenset((name, task) for name, task in container.tasks.items() if task.mode is TaskMode.ACTIVE),
    )
