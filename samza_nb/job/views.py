"""What a Job shows of itself: status, metrics, watermarks, outputs, the latest messages, its
course. A part of :class:`~samza_nb.job.handle.Job`, which answers these by asking its views.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from samza_nb.coordination.job_model_calculator import unassigned_standbys
from samza_nb.errors import JobError, SamzaNbError, TaskError, error_text
from samza_nb.grouping.standby import active_task_name
from samza_nb.job.charts import JobChart, LagHeatmap
from samza_nb.job.history import JobHistory
from samza_nb.job.overview import JobOverview, LatestMessages, latest_stream_messages
from samza_nb.job.status import JobStatus, ProcessorStatus
from samza_nb.model import SystemStreamPartition, TaskMode
from samza_nb.plan.serdes import KVSerde
from samza_nb.runtime.epoch import ssp_key
from samza_nb.runtime.plan_systems import system_of
from samza_nb.runtime.processor.epoch_driver import newest_offsets, producer_counts, ssp_lags
from samza_nb.runtime.processor.standby import standby_lag

if TYPE_CHECKING:
    from samza_nb.job.host import ProcessorHost
    from samza_nb.job.metrics import JobMetrics
    from samza_nb.job.run_state import RunState
    from samza_nb.plan.execution_plan import ExecutionPlan
    from samza_nb.runtime.checkpoints import Checkpoint, CheckpointStore
    from samza_nb.runtime.epoch import EpochResult
    from samza_nb.runtime.executors.executor import Executor
    from samza_nb.runtime.processor.epoch_driver import EpochDriver

__all__ = ["JobViews"]


class JobViews:
    """Read-only views of a running or finished job: they read its plan, job model,
    processors, checkpoints, metrics and run state, and change nothing."""

    def __init__(
        self,
        plan: ExecutionPlan,
        host: ProcessorHost,
        run: RunState,
        *,
        checkpoints: CheckpointStore,
        metrics: JobMetrics,
        driver: EpochDriver,
        executor: Executor,
        one_process: bool,
    ) -> None:
        self.plan = plan
        self._host = host
        self._run = run
        self._checkpoints = checkpoints
        self._metrics = metrics
        #: The job's course, a point after every commit (plot(), average_rate()).
        self._timeline = JobHistory()
        self._driver = driver
        self._executor = executor
        #: Whether one process hosts every processor of the job (the embedded coordinator).
        self._one_process = one_process
        #: Per sampled operator: its latest messages (show(op)).
        self._samples: dict[str, deque[str]] = {}

    def task_ssps(self) -> dict[str, frozenset[SystemStreamPartition]]:
        """The input SSPs of every active task of the current job model."""
        return {n: t.ssps for n, t in self._host.job_model.active_tasks().items()}

    def producer_counts(self) -> dict[str, int]:
        return producer_counts(self.plan, self.task_ssps())

    def _known_checkpoints(self) -> dict[str, Checkpoint]:
        """Every task's checkpoint as far as this process knows: its own tasks' (the freshest)
        and, in a processor process of a distributed job, the other processes' as committed
        in the shared metadata store (else their lag would count everything they read)."""
        cached = self._checkpoints.cached()
        if self._one_process:
            return cached
        model = self._host.job_model
        mine = {task for pid, container in model.containers.items() if pid in self._host.running for task in container.tasks}
        try:
            stored = self._checkpoints.read_all()
        except SamzaNbError:  # the store is away: this process's own view only
            return cached
        # This process's own commits win for its tasks; a task of its model it never ran (one
        # that drained or ended elsewhere, and is never opened again) keeps the stored one.
        known = dict(stored)
        known.update((task, cp) for task, cp in cached.items() if task in mine or task not in stored)
        return known

    def ssp_lags(self) -> dict[tuple[str, SystemStreamPartition], int]:
        """Per (task, SSP): offsets not read yet, as far as this process knows."""
        return ssp_lags(self.task_ssps(), self._known_checkpoints(), newest_offsets(self.plan))

    def _message_lags(
        self, known: dict[str, Checkpoint] | None = None
    ) -> dict[tuple[str, SystemStreamPartition], int]:
        """Per (task, SSP): the messages not read yet, control messages (watermarks,
        end-of-stream, drain) left out, so 2,000 events read by nobody show a lag of 2,000.
        ``known``: the checkpoints when the caller already read them."""
        cached = self._known_checkpoints() if known is None else known
        lags = ssp_lags(self.task_ssps(), cached, newest_offsets(self.plan))
        for (task, ssp), lag in lags.items():
            if lag:
                checkpoint = cached.get(task)
                start = checkpoint.offsets.get(ssp_key(ssp.stream, ssp.partition), 0) if checkpoint else 0
                system = system_of(self.plan, ssp.stream)
                controls = system.control_messages(ssp.stream, ssp.partition, start, start + lag)
                lags[(task, ssp)] = max(0, lag - controls)
        return lags

    def status(self) -> JobStatus:
        model = self._host.job_model
        lag_by_task: dict[str, int] = {}
        cached = self._known_checkpoints()
        newest = newest_offsets(self.plan)
        partitions = []
        for (task, ssp), lag in sorted(self._message_lags(cached).items(),
                                       key=lambda item: (item[0][1].stream, item[0][1].partition)):
            lag_by_task[task] = lag_by_task.get(task, 0) + lag
            if self.plan.streams[ssp.stream].kind != "input":
                continue
            key = ssp_key(ssp.stream, ssp.partition)
            checkpoint = cached.get(task)
            partitions.append({
                "stream": ssp.stream,
                "partition": ssp.partition,
                "task": task,
                "committed": checkpoint.offsets.get(key, 0) if checkpoint else 0,
                "newest": newest.get(key, 0),
                "lag": lag,
            })
        tasks = {
            task: {
                "epochs": cached[task].seq if task in cached else 0,
                "lag": lag_by_task.get(task, 0),
                "done": task in self._run.done_tasks,
                "restore": self._metrics.restore_of(task),
            }
            for task in sorted(self.task_ssps())
        }
        processors = {}
        for pid, container in sorted(model.containers.items()):
            processor = self._host.running.get(pid)
            # A container of standbys only is as alive as its processor.
            actives = [t for t, model in container.tasks.items() if model.mode is TaskMode.ACTIVE]
            finished = (bool(actives) or not container.tasks) and all(t in self._run.done_tasks for t in actives)
            state = "stopped" if finished or processor is None else processor.state
            location = container.location_id or (processor.location_id if processor else "")
            processors[pid] = ProcessorStatus(pid, location, sorted(container.tasks), state)
        error = None if self._run.error is None else error_text(self._run.error)
        failed = self._run.error.op_id if isinstance(self._run.error, TaskError) else None
        troubled = {
            op_id: {key: counts[key] for key in ("skipped", "dropped", "errors")}
            for op_id, counts in sorted(self._metrics.operator_counters(failed).items())
            if counts["skipped"] or counts["dropped"] or counts["errors"]
        }
        return JobStatus(
            self._run.state, self._host.epoch, self._run.run_id, processors, tasks, error, troubled, partitions,
            standbys=self.standby_lags(), unassigned_standbys=self._unassigned_standbys(),
        )

    def standby_lags(self) -> dict[str, dict[str, Any]]:
        """Per standby task of this process's processors: where it runs and how far it is
        behind its active's committed checkpoint (records of the changelog, epochs)."""
        out: dict[str, dict[str, Any]] = {}
        model = self._host.job_model
        for pid, container in sorted(model.containers.items()):
            processor = self._host.running.get(pid)
            if processor is None:
                continue
            for name, task in sorted(model.standby_tasks().items()):
                if name not in container.tasks:
                    continue
                progress = processor.standbys.get(name)
                active = active_task_name(name)
                lag = standby_lag(self.plan, task, progress, self._checkpoints.read_committed(active))
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
        return unassigned_standbys(self._host.job_model, self._host.replication_factor)

    def metrics(self) -> dict[str, Any]:
        """Per task and per stream: messages in/out, lag, epoch time, restores; changelog
        compactions and their failures; Spark Python workers lost mid-epoch."""
        lag_by_stream: dict[str, int] = {}
        lag_by_task: dict[str, int] = {}
        lag_by_partition: dict[str, int] = {}
        for (task, ssp), lag in self._message_lags().items():
            lag_by_stream[ssp.stream] = lag_by_stream.get(ssp.stream, 0) + lag
            lag_by_task[task] = lag_by_task.get(task, 0) + lag
            if self.plan.streams[ssp.stream].kind == "input":
                lag_by_partition[ssp_key(ssp.stream, ssp.partition)] = lag
        kinds = {stream_id: info.kind for stream_id, info in self.plan.streams.items()}
        failed = self._run.error.op_id if isinstance(self._run.error, TaskError) else None
        snapshot = self._metrics.snapshot(
            self.task_ssps(), kinds, lag_by_task, lag_by_stream, self._host.epoch, failed_op=failed
        )
        # Consumer lag per input partition (``stream#partition``), as Kafka reports it.
        snapshot["partitions"] = dict(sorted(lag_by_partition.items()))
        snapshot["standbys"] = self.standby_lags()
        snapshot["unassigned_standbys"] = self._unassigned_standbys()
        snapshot["changelog_compaction"] = self._compaction_report()
        # Spark Python workers lost mid-epoch; each such epoch ran again (job.spark.epoch.retries).
        snapshot["workers_lost"] = {
            "count": self._executor.workers_lost,
            "last": self._executor.last_worker_lost,
        }
        return snapshot

    def _compaction_report(self) -> dict[str, Any]:
        """Changelog compactions of this process's processors (only the retention owner
        compacts): how many ran, how many failed, the newest failure."""
        report: dict[str, Any] = {"compactions": 0, "failures": 0, "last_failure": None}
        for processor in self._host.all():
            mine = processor.compactor.report()
            report["compactions"] += mine["compactions"]
            report["failures"] += mine["failures"]
            report["last_failure"] = mine["last_failure"] or report["last_failure"]
        return report

    def operator_watermarks(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Per task and operator: (input watermark, output watermark) as last committed."""
        result: dict[str, dict[str, tuple[int, int]]] = {}
        for task, checkpoint in sorted(self._checkpoints.cached().items()):
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

    # -- looking at the data and the job's course ---------------------------------------------
    def begin(self) -> None:
        """The job's course starts now (the job started)."""
        self._timeline.begin()

    def record(self, results: list[EpochResult]) -> None:
        """After a commit: the samples tasks took, and a point of the job's course."""
        for result in results:
            for op_id, texts in result.samples.items():
                kept = self._samples.get(op_id)
                if kept is not None:
                    kept.extend(texts)
        kinds = {stream_id: info.kind for stream_id, info in self.plan.streams.items()}
        counts = self._metrics.stream_counts()
        try:
            lag = self._input_lag(kinds) if self._timeline.lag_due() else None
        except Exception:  # a view must never fail the job: this point goes without lag
            lag = None
        read = sum(c["in"] for s, c in counts.items() if kinds.get(s) == "input")
        if self._timeline.is_empty() and lag is not None:
            # The course starts at the job's start, with what the first epoch read still to read.
            self._timeline.add_start(lag + read)
        self._timeline.add(
            self._host.epoch, read, sum(c["out"] for s, c in counts.items() if kinds.get(s) == "output"), lag
        )

    def _input_lag(self, kinds: Mapping[str, str]) -> int:
        return sum(lag for (_t, ssp), lag in self._message_lags().items() if kinds.get(ssp.stream) == "input")

    def show(self, target: str | None = None, n: int = 20) -> JobOverview | LatestMessages:
        """The latest ``n`` messages of a stream (input, intermediate or output) or operator,
        or with no target the job at a glance. An operator is sampled inside the tasks from
        the next epoch on (its stream, for inputs, outputs and shuffles, is read back)."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            msg = f"show(n=...) takes a positive number of messages, got {n!r}"
            raise JobError(msg)
        plan = self.plan
        if target is None:
            outputs = [latest_stream_messages(plan, stream_id, n) for stream_id in plan.outputs]
            return JobOverview(plan.app_name, self.status(), self.lag_heatmap(), outputs, self.spark_ui)
        if target in plan.streams:
            return latest_stream_messages(plan, target, n)
        # An operator by its full id, or by the op_id= the user gave it ("by-page").
        named = [op_id for op_id in plan.operators if op_id.endswith(f"-{target}")]
        spec = plan.operators.get(target) or (plan.operators[named[0]] if len(named) == 1 else None)
        if spec is None:
            msg = (
                f"{target!r} is neither a stream nor an operator of this job; streams: "
                f"{sorted(plan.streams)}; operators: {sorted(plan.operators)}"
            )
            raise JobError(msg)
        stream_id = getattr(spec, "stream_id", "")
        if stream_id in plan.streams:
            return latest_stream_messages(plan, stream_id, n)
        op_id = spec.op_id
        with self._run.lock:
            kept = self._samples.get(op_id)
            if kept is None or kept.maxlen != n:
                kept = self._samples[op_id] = deque(kept or (), maxlen=n)
                self._driver.samples[op_id] = n
            rows = [{"message": text} for text in kept]
        note = "" if rows else "sampling from the next epoch on: show it again once one ran"
        return LatestMessages(op_id, "operator", rows, note)

    def lag_heatmap(self) -> LagHeatmap:
        """Lag per task and input stream partition, as committed (control messages left out)."""
        return LagHeatmap(
            {
                (task, ssp_key(ssp.stream, ssp.partition)): lag
                for (task, ssp), lag in self._message_lags().items()
            }
        )

    def average_rate(self) -> float | None:
        """Input messages read per second, from the job's start to the commit that read its
        last input message so far (None before it read any)."""
        return self._timeline.average_rate()

    def plot(self, *panels: str, x: str = "seconds") -> JobChart:
        """The job's course after every committed epoch, drawn in real units on one time axis
        (seconds since the job started): by default the input rate (messages/s over the last
        10 s, with the job's average rate, both as RunProgress computes them) and the input lag
        (messages); panels may also be messages_in, messages_out and epoch, and ``x`` may be
        "epoch". ``.to_frame()`` gives the numbers."""
        chosen = panels or ("rate", "lag")
        known = ("rate", "lag", "messages_in", "messages_out", "epoch")
        wrong = [panel for panel in (*chosen, x) if panel not in (*known, "seconds")]
        if wrong:
            msg = f"plot() knows {', '.join(known)} (and x='seconds' or x='epoch'), not {wrong[0]!r}"
            raise JobError(msg)
        kinds = {stream_id: info.kind for stream_id, info in self.plan.streams.items()}
        self._timeline.set_last_lag(self._input_lag(kinds))
        return JobChart(
            self.plan.app_name, self._timeline.rows(), tuple(chosen), x, self._timeline.average_rate()
        )

    @property
    def spark_ui(self) -> str | None:
        """The Spark UI's address when the job runs on Spark with the UI on
        (``spark.ui.enabled=true``), else None."""
        return self._executor.ui_url()
