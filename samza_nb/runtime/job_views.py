"""What a Job shows of itself: status, metrics, watermarks, outputs, its HTML.

A mixin of :class:`~samza_nb.runtime.job.Job`, kept apart so the handle's module holds its
lifecycle and control; these read the Job's plan, job model, processors, checkpoints, metrics
and state and change nothing.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from samza_nb.coordination.job_model_calculator import unassigned_standbys
from samza_nb.errors import JobError
from samza_nb.grouping.standby import active_task_name
from samza_nb.model import JobModel, SystemStreamPartition, TaskMode
from samza_nb.plan.serdes import KVSerde
from samza_nb.runtime.context import system_of
from samza_nb.runtime.epoch_driver import newest_offsets, producer_counts, ssp_lags
from samza_nb.runtime.standby import standby_lag
from samza_nb.runtime.status import JobStatus, ProcessorStatus

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan
    from samza_nb.runtime.checkpoints import CheckpointStore
    from samza_nb.runtime.metrics import JobMetrics
    from samza_nb.runtime.processor import StreamProcessor

__all__ = ["JobViews"]


class JobViews:
    """Read-only views of a running or finished job."""

    plan: ExecutionPlan
    checkpoints: CheckpointStore
    run_id: str
    _metrics: JobMetrics
    _processors: dict[str, StreamProcessor]
    _done_tasks: set[str]
    _state: str
    _error: BaseException | None

    @property
    def job_model(self) -> JobModel:
        raise NotImplementedError

    @property
    def grouper(self) -> str:
        raise NotImplementedError

    @property
    def epoch(self) -> int:
        """The highest epoch of any processor."""
        return max((p.epoch for p in list(self._processors.values())), default=0)

    def _task_ssps(self) -> dict[str, frozenset[SystemStreamPartition]]:
        return {n: t.ssps for n, t in self.job_model.active_tasks().items()}

    def _producer_counts(self) -> dict[str, int]:
        return producer_counts(self.plan, self._task_ssps())

    def _ssp_lags(self) -> dict[tuple[str, SystemStreamPartition], int]:
        return ssp_lags(self._task_ssps(), self.checkpoints.cached(), newest_offsets(self.plan))

    def status(self) -> JobStatus:
        model = self.job_model
        lag_by_task: dict[str, int] = {}
        for (task, _ssp), lag in self._ssp_lags().items():
            lag_by_task[task] = lag_by_task.get(task, 0) + lag
        cached = self.checkpoints.cached()
        tasks = {
            task: {
                "epochs": cached[task].seq if task in cached else 0,
                "lag": lag_by_task.get(task, 0),
                "done": task in self._done_tasks,
                "restore": self._metrics.restore_of(task),
            }
            for task in sorted(self._task_ssps())
        }
        processors = {}
        for pid, container in sorted(model.containers.items()):
            processor = self._processors.get(pid)
            # A container of standbys only is as alive as its processor.
            actives = [t for t, model in container.tasks.items() if model.mode is TaskMode.ACTIVE]
            finished = (bool(actives) or not container.tasks) and all(t in self._done_tasks for t in actives)
            state = "stopped" if finished or processor is None else processor.state
            location = container.location_id or (processor.location_id if processor else "")
            processors[pid] = ProcessorStatus(pid, location, sorted(container.tasks), state)
        error = None if self._error is None else str(self._error)
        return JobStatus(
            self._state, self.epoch, self.run_id, processors, tasks, error,
            standbys=self.standby_lags(), unassigned_standbys=self._unassigned_standbys(),
        )

    def standby_lags(self) -> dict[str, dict[str, Any]]:
        """Per standby task of this process's processors: where it runs and how far it is
        behind its active's committed checkpoint (records of the changelog, epochs)."""
        out: dict[str, dict[str, Any]] = {}
        for pid, container in sorted(self.job_model.containers.items()):
            processor = self._processors.get(pid)
            if processor is None:
                continue
            for name, task in sorted(self.job_model.standby_tasks().items()):
                if name not in container.tasks:
                    continue
                progress = processor.standbys.get(name)
                active = active_task_name(name)
                lag = standby_lag(self.plan, task, progress, self.checkpoints.read_committed(active))
                out[name] = {
                    "active": active,
                    "processor": pid,
                    "location": container.location_id or processor.location_id,
                    "lag_records": lag["records"],
                    "lag_epochs": lag["epochs"],
                    "applied_records": progress.applied_records if progress else 0,
                    "apply_seconds": progress.seconds if progress else 0.0,
                }
        return out

    def _unassigned_standbys(self) -> int:
        factor = getattr(self.coordinator, "replication_factor", None)  # type: ignore[attr-defined]
        if factor is None:
            factor = self.plan.config.get_int("job.standbytasks.replication.factor")
        return unassigned_standbys(self.job_model, int(factor))

    def metrics(self) -> dict[str, Any]:
        """Per task and per stream: messages in/out, lag, epoch time, restores."""
        lag_by_stream: dict[str, int] = {}
        lag_by_task: dict[str, int] = {}
        for (task, ssp), lag in self._ssp_lags().items():
            lag_by_stream[ssp.stream] = lag_by_stream.get(ssp.stream, 0) + lag
            lag_by_task[task] = lag_by_task.get(task, 0) + lag
        kinds = {stream_id: info.kind for stream_id, info in self.plan.streams.items()}
        snapshot = self._metrics.snapshot(self._task_ssps(), kinds, lag_by_task, lag_by_stream, self.epoch)
        snapshot["standbys"] = self.standby_lags()
        snapshot["unassigned_standbys"] = self._unassigned_standbys()
        return snapshot

    def operator_watermarks(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Per task and operator: (input watermark, output watermark) as last committed."""
        result: dict[str, dict[str, tuple[int, int]]] = {}
        for task, checkpoint in sorted(self.checkpoints.cached().items()):
            operators = checkpoint.control.get("operators", {})
            result[task] = {
                op_id: (int(state.get("in", -1)), int(state.get("out", -1)))
                for op_id, state in sorted(operators.items())
            }
        return result

    def collect(self, output_stream_id: str) -> Any:
        """The messages of an output stream as a DataFrame (partition, offset, key, value,
        timestamp); a KV sent to an output is split into key and value."""
        info = self.plan.streams.get(output_stream_id)
        if info is None:
            msg = f"{output_stream_id!r} is not a stream of this job; streams: {sorted(self.plan.streams)}"
            raise JobError(msg)
        serde = info.serde
        system = system_of(self.plan, output_stream_id)
        if isinstance(serde, KVSerde):
            return system.read_frame(output_stream_id, serde=serde.value_serde, key_serde=serde.key_serde)
        return system.read_frame(output_stream_id, serde=serde)

    def __repr__(self) -> str:
        return f"Job({self.plan.app_name!r}, state={self._state!r}, epoch={self.epoch})"

    def _repr_html_(self) -> str:
        return (
            f"<p>Job <b>{html.escape(self.plan.app_name)}</b> (grouper "
            f"<code>{html.escape(self.grouper)}</code>)</p>{self.status()._repr_html_()}"
        )
