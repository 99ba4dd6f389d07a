"""The processors one process hosts for a job: added, started and stopped, and changed through
the job's coordinator (the job model it runs, proposals, regroup, kill_processor, add_processor
and rebalance). A part of :class:`~samza_nb.job.handle.Job`, which makes its processors.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from samza_nb.errors import JobError
from samza_nb.job.preparation import base_location
from samza_nb.model import JobModel

if TYPE_CHECKING:
    from samza_nb.config import Config
    from samza_nb.coordination.coordinator import JobCoordinator
    from samza_nb.job.run_state import RunState
    from samza_nb.runtime.processor.processor import StreamProcessor

__all__ = ["ProcessorHost"]


class ProcessorHost:
    """The processors of a job in this process, and changes to them through its coordinator."""

    def __init__(
        self,
        app_name: str,
        config: Config,
        coordinator: JobCoordinator,
        run: RunState,
        new_processor: Callable[[str, str], StreamProcessor],
    ) -> None:
        self._app_name = app_name
        self.config = config
        self.coordinator = coordinator
        self._run = run
        self._new_processor = new_processor
        #: Every processor of this process by id, those leaving in a regroup included.
        self.running: dict[str, StreamProcessor] = {}
        self._leaving: set[str] = set()
        self._lock = threading.RLock()

    def add(self, processor_id: str, location: str) -> StreamProcessor:
        """A new processor, known to the coordinator; it runs once :meth:`start` started it."""
        processor = self._new_processor(processor_id, location)
        self.running[processor_id] = processor
        self.coordinator.attach(processor_id, location, processor)
        return processor

    def start(self, processor: StreamProcessor) -> None:
        processor.start(
            drain_monitor=self.config.get_bool("job.drain-monitor.enabled"),
            poll_interval_ms=self.config.get_int("job.drain-monitor.poll.interval.ms"),
            run_id=self._run.run_id,
        )

    def all(self) -> list[StreamProcessor]:
        return list(self.running.values())

    def request_stop(self) -> None:
        """Every processor stops after the epoch in flight."""
        for processor in self.all():
            processor.request_stop()

    def join(self, deadline: float | None = None) -> bool:
        """Wait until every processor's loop ended (False at ``deadline``, a monotonic time)."""
        for processor in self.all():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not processor.join(left):
                return False
        return True

    def is_leaving(self, processor_id: str) -> bool:
        return processor_id in self._leaving

    def staying(self) -> set[str]:
        """The ids of the processors that stay (not leaving in a regroup)."""
        return set(self.running) - self._leaving

    def owns_retention(self, processor: StreamProcessor) -> bool:
        """Retention needs every consumer's checkpoint: the leader's first processor owns it."""
        return self.coordinator.is_leader and processor.processor_id == min(self.running)

    @property
    def epoch(self) -> int:
        """The highest epoch of any processor."""
        return max((p.epoch for p in self.all()), default=0)

    @property
    def job_model(self) -> JobModel:
        """The job model the processors run now (no containers before the first one)."""
        return self.coordinator.job_model or JobModel({}, [])

    @property
    def grouper(self) -> str:
        """The registry name of the grouper that computed the current JobModel."""
        return str(getattr(self.coordinator, "grouper", ""))

    @property
    def grouper_options(self) -> dict[str, Any]:
        """The options the current grouper was given (``rebalance(grouper, **options)``)."""
        return dict(getattr(self.coordinator, "grouper_options", {}))

    @property
    def processors(self) -> dict[str, str]:
        """The live processors: processor id → location id (a grouper may leave one idle)."""
        with self._lock:
            return {pid: p.location_id for pid, p in self.running.items() if pid not in self._leaving}

    def propose(
        self,
        processors: Mapping[str, str] | None = None,
        grouper: str | None = None,
        *,
        replication_factor: int | None = None,
        **options: Any,
    ) -> JobModel:
        """The model :meth:`regroup` would apply to these processors (and grouper), unapplied."""
        propose = getattr(self.coordinator, "propose", None)
        if propose is None:
            msg = f"the {self.coordinator.name} coordinator decides models itself; nothing to propose"
            raise JobError(msg)
        extra = {} if replication_factor is None else {"replication_factor": replication_factor}
        return propose(dict(processors or self.processors), grouper, options if grouper else None, **extra)

    @property
    def replication_factor(self) -> int:
        """Copies of each task's state: 1 active + standbys (``job.standbytasks.replication.factor``,
        or what :meth:`regroup` set)."""
        factor = getattr(self.coordinator, "replication_factor", None)
        return int(factor) if factor is not None else self.config.get_int("job.standbytasks.replication.factor")

    def regroup(
        self,
        processors: Mapping[str, str],
        grouper: str | None = None,
        *,
        replication_factor: int | None = None,
        **options: Any,
    ) -> JobModel:
        """Set the live processors (id → location) and optionally the grouper (and the standby
        ``replication_factor``) in one step: the running job moves from its model to the new
        one with no model in between. On failure the job keeps its processors, grouper and
        model."""
        if not processors:
            msg = "regroup needs at least one processor; stop the job instead"
            raise JobError(msg)
        regroup = getattr(self.coordinator, "regroup", None)
        if regroup is None:
            msg = f"the {self.coordinator.name} coordinator regroups by itself when processors join or leave"
            raise JobError(msg)
        with self._lock:
            self._check_running()
            wanted = {str(pid): str(location) for pid, location in processors.items()}
            self._check_processors(wanted)
            new = [self.add(pid, loc) for pid, loc in wanted.items() if pid not in self.running]
            leaving = [pid for pid in self.running if pid not in wanted]
            self._leaving.update(leaving)
            try:
                for processor in new:
                    self.start(processor)
                extra = {} if replication_factor is None else {"replication_factor": replication_factor}
                model = regroup(wanted, grouper, options if grouper else None, **extra)
            except BaseException:
                self._leaving.difference_update(leaving)
                for processor in new:
                    processor.request_stop()
                    self.coordinator.detach(processor.processor_id)
                    del self.running[processor.processor_id]
                raise
            for pid in leaving:
                self.running.pop(pid).join()
                self._leaving.discard(pid)
            return model

    def _check_running(self) -> None:
        if self._run.ended:
            msg = f"job {self._app_name!r} has {self._run.state}; there is nothing to regroup"
            raise JobError(msg)

    def _check_processors(self, wanted: Mapping[str, str]) -> None:
        """Processor ids and locations are plain names, and a running processor stays where it
        runs (its stores are there): moving one is removing it and adding another."""
        for pid, location in wanted.items():
            if not pid or pid != pid.strip() or not location or location != location.strip():
                msg = f"regroup: processor {pid!r} at {location!r}: ids and locations are non-empty names without surrounding spaces"
                raise JobError(msg)
            running = self.running.get(pid)
            if running is not None and running.location_id != location:
                msg = (
                    f"regroup: processor {pid!r} runs at {running.location_id!r}, not {location!r}; "
                    f"a processor does not move: remove it and add one at {location!r} under a new id"
                )
                raise JobError(msg)

    def kill_processor(self, processor_id: str) -> JobModel:
        """Remove a processor; its tasks move per the grouper (host affinity keeps the rest).
        With standbys (``job.standbytasks.replication.factor`` > 1) each of its active tasks is
        promoted onto the processor holding its standby and replays only its store's tail."""
        if isinstance(processor_id, int) and not isinstance(processor_id, bool):
            processor_id = str(processor_id)  # ids are strings; kill_processor(0) means "0"
        with self._lock:
            if processor_id not in self.running:
                msg = f"no processor {processor_id!r}; processors are {sorted(self.running)}"
                raise JobError(msg)
            self._check_running()
            if len(self.running) == 1:
                msg = (
                    f"cannot kill processor {processor_id!r}: it is the last processor of job "
                    f"{self._app_name!r}; stop the job instead (job.stop() or job.drain())"
                )
                raise JobError(msg)
            return self.regroup({pid: loc for pid, loc in self.processors.items() if pid != processor_id})

    def add_processor(self, location_id: str | None = None) -> JobModel:
        """Add a processor (the next free number as its id) at ``location_id``; by default at
        its entry of ``processor.locations``, as ``run(processors=N)`` places the first N, or
        at this process's location."""
        if location_id is not None and (not isinstance(location_id, str) or not location_id.strip()):
            msg = f"add_processor: a location id is a non-empty string, got {location_id!r} (None: the default)"
            raise JobError(msg)
        with self._lock:
            number = max((int(p) for p in self.running if p.isdigit()), default=-1) + 1
            configured = self.config.get_list("processor.locations")
            location = location_id or (
                configured[number] if number < len(configured) else base_location(self.config)
            )
            return self.regroup({**self.processors, str(number): location})

    def rebalance(self, grouper: str | None = None, **options: Any) -> JobModel:
        """Regroup the tasks (optionally with another grouper); moved tasks continue from their
        checkpoints. A grouper that fails leaves the running JobModel as it was."""
        return self.regroup(self.processors, grouper, **options)
