"""AttachedJob: a notebook's handle on a distributed job it did not start.

The handle reads the job's coordination state through a
:class:`~samza_nb.coordination.observation.JobObserver` (it never joins the group) and drains
the job through its metadata store, where every processor's DrainMonitor looks. It answers
``status()`` like a :class:`~samza_nb.job.handle.Job`, so the live widgets refresh it the same
way: it is done once processors were seen and none is left (or after :meth:`close`).
:class:`~samza_nb.notebook.widgets.attached_job.AttachedJobWidget` draws it (``%samza attach``
displays one).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from samza_nb.coordination.observation import JobObservation, JobObserver
from samza_nb.drain import (
    carried_run_id,
    read_drain_notifications,
    read_run_id,
    write_drain_notification,
)
from samza_nb.errors import DrainError, JobError
from samza_nb.metadata import MetadataStore
from samza_nb.model import JobModel

__all__ = ["AttachedJob", "AttachedJobStatus"]

#: How long a drain waits for a starting deployment's processors to agree on their run id.
_RUN_ID_WAIT_S = 15.0


@dataclass(frozen=True)
class AttachedJobStatus:
    """``state``: ``waiting`` (no processor seen yet), ``running``, ``draining``, ``drained``,
    ``stopped`` (processors seen, none left) or ``detached`` (the handle was closed)."""

    state: str
    processors: dict[str, str]
    leader: str | None
    version: str | None
    active_version: str | None
    barrier: str | None

    @property
    def done(self) -> bool:
        return self.state in ("drained", "stopped", "detached")


class AttachedJob:
    """``url`` names what is attached (no secrets); ``app_name``/``job_id`` the job;
    ``observer`` reads its coordination state; ``metadata`` is its metadata store (drain).

    The notebook only observes: the grouper explorer shows an attached job's model and its
    proposals but cannot apply them (:attr:`preview_only` says why)."""

    #: Why what a widget proposes for this job is a preview only (GrouperExplorer's Apply).
    preview_only = (
        "attached: preview only (this notebook observes the job without joining its group, "
        "so it cannot regroup it; its leader decides the job models)"
    )

    def __init__(
        self,
        url: str,
        app_name: str,
        job_id: str,
        observer: JobObserver,
        metadata: MetadataStore,
    ) -> None:
        self.url = url
        self.app_name = app_name
        self.job_id = job_id
        self.observer = observer
        self.metadata = metadata
        self._lock = threading.Lock()
        self._last: JobObservation | None = None
        self._seen_processors = False
        self._drain_uuid: str | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"AttachedJob({self.url!r}, app={self.app_name!r}, job_id={self.job_id!r})"

    # -- reading -------------------------------------------------------------------------
    def observe(self) -> JobObservation:
        """Read the coordination state now (after :meth:`close`: the last one read)."""
        with self._lock:
            if self._closed:
                if self._last is None:
                    msg = f"{self!r} is closed and observed nothing"
                    raise JobError(msg)
                return self._last
            observation = self.observer.observe()
            self._last = observation
            self._seen_processors = self._seen_processors or bool(observation.processors)
            return observation

    @property
    def last(self) -> JobObservation | None:
        """The last observation (None before the first)."""
        return self._last

    def status(self) -> AttachedJobStatus:
        observation = self.observe()
        processors = {p.processor_id: p.location_id for p in observation.processors}
        if self._closed:
            state = "detached"
        elif not self._seen_processors:
            state = "waiting"
        elif processors:
            state = "draining" if self._drain_uuid else "running"
        else:
            state = "drained" if self._drain_uuid else "stopped"
        return AttachedJobStatus(
            state,
            processors,
            observation.leader,
            observation.latest,
            observation.active,
            observation.barrier,
        )

    @property
    def done(self) -> bool:
        """Whether no processor of the job is left (or the handle was closed): reads the
        coordination state, as :meth:`status` does."""
        return self.status().done

    @property
    def job_model(self) -> JobModel | None:
        """The job model the processors run: the active version's (the latest one's before
        any reached consensus); None before the first."""
        observation = self.observe()
        wanted = observation.active or observation.latest
        return next((v.model for v in observation.versions if v.version == wanted), None)

    @property
    def processors(self) -> dict[str, str]:
        """The live processors: id → location."""
        return {p.processor_id: p.location_id for p in self.observe().processors}

    @property
    def replication_factor(self) -> int:
        """Copies of each task's state the current model places (1 active + its standbys)."""
        model = self.job_model
        if model is None or not model.active_tasks():
            return 1
        return 1 + len(model.standby_tasks()) // len(model.active_tasks())

    @property
    def run_id(self) -> str | None:
        """The run id the job's processors agreed on (None before the first one started)."""
        return read_run_id(self.metadata)

    # -- drain ---------------------------------------------------------------------------
    def drain(self, wait: bool = False, timeout: float = 300.0) -> AttachedJobStatus:
        """Write a drain notification for the job's run; every processor drains and stops.
        ``wait``: until the processors removed it (all stopped), at most ``timeout`` s."""
        if self._closed:
            msg = f"{self!r} is closed; attach again to drain it"
            raise JobError(msg)
        run_id = self._current_run_id()
        self._drain_uuid = write_drain_notification(self.metadata, run_id)
        if wait:
            self.wait_drained(timeout)
        return self.status()

    def _current_run_id(self) -> str:
        """The run id the live processors carry (drain.carried_run_id). Processors that just
        registered carry none until the first of them stored the new deployment's: waited
        for, at most :data:`_RUN_ID_WAIT_S`."""
        deadline = time.monotonic() + _RUN_ID_WAIT_S
        while True:
            observation = self.observe()
            if not observation.processors:
                msg = (
                    f"job {self.app_name!r} (job id {self.job_id}) at {self.url} has no live "
                    "processor (not started yet, or its last run ended): nothing to drain"
                )
                raise DrainError(msg)
            run_id = carried_run_id(self.metadata, observation.run_ids)
            if run_id is not None:
                return run_id
            if time.monotonic() > deadline:
                msg = (
                    f"job {self.app_name!r} at {self.url}: its live processors carry no one run id "
                    f"after {_RUN_ID_WAIT_S:g} s (a deployment starting, or one ending beside the next)"
                )
                raise DrainError(msg)
            time.sleep(0.25)

    def wait_drained(self, timeout: float = 300.0) -> AttachedJobStatus:
        """Wait until the drain notification was cleaned up and no processor is left."""
        if self._drain_uuid is None:
            msg = f"no drain was requested through {self!r}"
            raise DrainError(msg)
        deadline = time.monotonic() + timeout
        while True:
            pending = any(n.uuid == self._drain_uuid for n in read_drain_notifications(self.metadata))
            status = self.status()
            if not pending and not status.processors:
                return status
            if time.monotonic() > deadline:
                msg = (
                    f"job {self.app_name!r} at {self.url} has not drained within {timeout:g} s "
                    f"(processors left: {sorted(status.processors)}, notification "
                    f"{'pending' if pending else 'cleaned up'})"
                )
                raise DrainError(msg)
            time.sleep(0.25)

    def close(self) -> None:
        """Stop observing (idempotent); the job keeps running."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self.observer.close()
        finally:
            self.metadata.close()
