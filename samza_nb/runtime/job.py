"""Running an application: the driver, its logical processors and the Job handle.

``run(app)`` plans the application, creates its streams, groups input partitions into tasks and
tasks into processors (a JobModel), then runs epochs: in every epoch each live processor runs
its active tasks as one Spark job (one Spark partition per task) and the driver commits each
task's checkpoint once its outputs are durable. Processors are logical: they live in this
driver, share its SparkSession and each has a location id (configurable with
``processor.locations`` to simulate several hosts).
"""

from __future__ import annotations

import hashlib
import html
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.locality import get_location_id_provider
from samza_nb.drain import CONFIG_NAMESPACE, DrainMonitor, cleanup, write_drain_notification
from samza_nb.errors import ConfigError, JobError, StreamNotFoundError, TaskError
from samza_nb.grouping import GroupByPartition, GrouperMetadata, grouper_for_processors
from samza_nb.metadata import EmbeddedMetadataStore, MetadataStore, NamespacedMetadataStore
from samza_nb.metadata.registry import EMBEDDED_FILE_NAME
from samza_nb.model import ContainerModel, JobModel, SystemStreamPartition, TaskMode, TaskModel
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.plan.operators import OpCode
from samza_nb.plan.serdes import KVSerde
from samza_nb.runtime.checkpoints import Checkpoint, CheckpointStore, EpochPlan
from samza_nb.runtime.task import (
    EpochAssignment,
    EpochResult,
    changelog_stream_id,
    default_system,
    run_task_epoch,
    ssp_key,
    store_names,
)

__all__ = [
    "DrainStatesView",
    "Job",
    "JobStatus",
    "ProcessorStatus",
    "job_home",
    "metadata_store_path",
    "run",
]

_UNTIL = ("end-of-stream", "caught-up", "forever")
_IDLE_SLEEP_S = 0.2
_JOB_MODEL_NAMESPACE = "samza-nb-job-model-v1"


@dataclass
class ProcessorStatus:
    processor_id: str
    location_id: str
    tasks: list[str]
    state: str


@dataclass
class JobStatus:
    """A snapshot of a job: its state, epoch, processors and per-task progress."""

    state: str
    epoch: int
    run_id: str
    processors: dict[str, ProcessorStatus] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.state in ("finished", "stopped", "failed", "drained")

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{task.get('epochs', 0)}</td>"
            f"<td>{task.get('lag', 0):,}</td><td>{'done' if task.get('done') else ''}</td></tr>"
            for name, task in self.tasks.items()
        )
        processors = "; ".join(
            f"{html.escape(p.processor_id)} at {html.escape(p.location_id)} ({p.state})"
            for p in self.processors.values()
        )
        error = f"<p style='color:#cf222e'>{html.escape(self.error)}</p>" if self.error else ""
        return (
            f"<p><b>{html.escape(self.state)}</b> at epoch {self.epoch}, run "
            f"<code>{html.escape(self.run_id)}</code>; processors: {processors}</p>{error}"
            "<table><thead><tr><th>task</th><th>epochs</th><th>lag</th><th></th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )

    def __repr__(self) -> str:
        finished = sum(1 for task in self.tasks.values() if task.get("done"))
        return (
            f"JobStatus(state={self.state!r}, epoch={self.epoch}, processors={len(self.processors)}, "
            f"tasks={len(self.tasks)} ({finished} done))"
        )


@dataclass
class DrainStatesView:
    """DrainStates of every task, as committed, plus their history epoch by epoch.

    ``rows``: one dict per (task, ssp) with drained, heard (upstream task names), expected and
    drained_epoch. ``history``: (epoch, rows) as they stood after the first epoch and after
    every epoch that changed a DrainState, oldest first.
    """

    rows: list[dict[str, Any]]
    history: list[tuple[int, list[dict[str, Any]]]]

    @classmethod
    def build(
        cls,
        history: list[dict[str, Any]],
        producer_counts: dict[str, int],
        task_ssps: dict[str, frozenset[SystemStreamPartition]],
    ) -> DrainStatesView:
        drained_at: dict[tuple[str, str], int] = {}
        snapshots: list[tuple[int, list[dict[str, Any]]]] = []
        for entry in history:
            rows = []
            for task, ssps in sorted(task_ssps.items()):
                drain = entry["control"].get(task, {}).get("drain", {})
                for ssp in sorted(ssps):
                    state = drain.get(str(ssp))
                    if state is None:
                        continue
                    key = (task, str(ssp))
                    if state["done"] and key not in drained_at:
                        drained_at[key] = entry["epoch"]
                    rows.append(
                        {
                            "task": task,
                            "ssp": str(ssp),
                            "stream": ssp.stream,
                            "partition": ssp.partition,
                            "drained": bool(state["done"]),
                            "heard": list(state["heard"]),
                            "expected": producer_counts.get(ssp.stream, 0),
                            "drained_epoch": drained_at.get(key),
                        }
                    )
            snapshots.append((entry["epoch"], rows))
        return cls(snapshots[-1][1] if snapshots else [], snapshots)

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    @property
    def all_drained(self) -> bool:
        return bool(self.rows) and all(row["drained"] for row in self.rows)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(row['task'])}</td><td>{html.escape(row['ssp'])}</td>"
            f"<td>{'✓' if row['drained'] else '–'}</td>"
            f"<td>{len(row['heard'])} of {row['expected']}</td>"
            f"<td>{'' if row['drained_epoch'] is None else row['drained_epoch']}</td></tr>"
            for row in self.rows
        )
        return (
            f"<p>{html.escape(repr(self))}</p><table><thead><tr><th>task</th><th>SSP</th>"
            "<th>drained</th><th>upstream drains</th><th>epoch</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )

    def __repr__(self) -> str:
        done = sum(1 for row in self.rows if row["drained"])
        return f"DrainStatesView({done} of {len(self.rows)} SSPs drained, {len(self.history)} epochs)"


def _load_plan_cached() -> Callable[[str, bytes], Any]:
    cache: dict[str, Any] = {}

    def load(digest: str, blob: bytes) -> Any:
        plan = cache.get(digest)
        if plan is None:
            from pyspark import cloudpickle

            plan = cache[digest] = cloudpickle.loads(blob)
        return plan

    return load


_load_plan = _load_plan_cached()


def _epoch_on_spark(spark: Any, digest: str, blob: bytes, assignments: list[EpochAssignment]) -> list[EpochResult]:
    def run_partition(items: Any) -> Any:
        plan = _load_plan(digest, blob)
        for assignment in items:
            yield run_task_epoch(plan, assignment)

    rdd = spark.sparkContext.parallelize(assignments, numSlices=len(assignments))
    return list(rdd.mapPartitions(run_partition, preservesPartitioning=True).collect())


class Job:
    """A running (or finished) application. Created by :func:`run`."""

    def __init__(
        self,
        app: Any,
        config: Config,
        *,
        processors: int,
        grouper: str,
        until: str | int,
        clock: Callable[[], int] | None,
        spark: Any = None,
    ):
        self.app = app
        self.plan = app.plan(config)
        self.config: Config = self.plan.config
        self._until = until
        self._clock = clock or (lambda: int(time.time() * 1000))
        self._spark = spark
        self._lock = threading.RLock()
        self._stop_requested = threading.Event()
        self._thread: threading.Thread | None = None
        self._state = "created"
        self._error: BaseException | None = None
        self.epoch = 0
        self._drain_requested = False
        #: The epoch running (or last run) when a processor's DrainMonitor saw the notification.
        self.drain_seen_epoch: int | None = None
        self.system = default_system(self.plan)
        # A missing input is found before anything is written (the usual first-run mistake).
        self._check_inputs()
        self.home = self._job_home()
        self.metadata: MetadataStore = EmbeddedMetadataStore(metadata_store_path(self.plan))
        self.checkpoints = CheckpointStore(self.metadata)
        self.store_root = str(self.home / "stores")
        self.run_id = self._resolve_run_id()
        self._grouper_name = grouper
        self._grouper_options: dict[str, Any] = {}
        self._blob, self._digest = self._pickle_plan()
        self._metrics: dict[str, dict[str, Any]] = {}
        self._stream_metrics: dict[str, dict[str, int]] = {}
        self._operator_counts: dict[str, int] = {}
        self._done_tasks: set[str] = set()
        self._history: list[dict[str, Any]] = []
        self._monitors: dict[str, DrainMonitor] = {}
        self._has_windows = any(op.opcode == OpCode.WINDOW for op in self.plan.operators.values())
        self._create_streams()
        self._task_ssps = self._group_partitions()
        self._checkpoint_cache = {task: self.checkpoints.read(task) for task in self._task_ssps}
        self._producer_counts = self._compute_producer_counts()
        location = get_location_id_provider(
            self.config.get_str("locationid.provider.factory") or "default", self.config
        ).location_id()
        self._base_location = str(location)
        configured = self.config.get_list("processor.locations")
        self._locations = {
            str(i): (configured[i] if i < len(configured) else self._base_location)
            for i in range(processors)
        }
        self.job_model = self._compute_job_model(previous=None)

    # -- setup -----------------------------------------------------------------------------
    def _job_home(self) -> Path:
        return job_home(self.plan)

    def _resolve_run_id(self) -> str:
        run_id = self.config.get_str("app.run.id") or uuid.uuid4().hex
        store = NamespacedMetadataStore(self.metadata, CONFIG_NAMESPACE)
        store.put("app.run.id", run_id.encode())
        store.flush()
        return run_id

    def _pickle_plan(self) -> tuple[bytes, str]:
        from pyspark import cloudpickle

        blob = cloudpickle.dumps(self.plan)
        return blob, hashlib.sha256(blob).hexdigest()

    def _check_inputs(self) -> None:
        for stream_id, info in self.plan.streams.items():
            if info.kind in ("input", "side_input") and info.system.partition_count(stream_id) is None:
                msg = (
                    f"input stream {stream_id!r} does not exist in system {info.system.name!r}; "
                    f"create it with {info.system.name}.create_stream({stream_id!r}, partitions=N) "
                    f"and write to it"
                )
                raise StreamNotFoundError(msg)

    def _create_streams(self) -> None:
        plan = self.plan
        for stream_id, info in plan.streams.items():
            if info.kind not in ("input", "side_input") and info.system.partition_count(stream_id) is None:
                info.system.create_stream(stream_id, int(info.partitions))
        task_count = max(
            (info.partitions for info in plan.streams.values() if info.kind != "output"), default=1
        )
        for store in store_names(plan):
            stream_id = changelog_stream_id(plan, store)
            if self.system.partition_count(stream_id) is None:
                self.system.create_stream(stream_id, int(task_count))

    def _group_partitions(self) -> dict[str, frozenset[SystemStreamPartition]]:
        plan = self.plan
        ssps = []
        broadcast = []
        for stream_id, info in plan.streams.items():
            if info.kind == "output":
                continue
            for partition in range(int(info.partitions)):
                ssp = SystemStreamPartition(info.system.name, stream_id, partition)
                ssps.append(ssp)
                if info.is_broadcast:
                    broadcast.append(ssp)
        return dict(GroupByPartition(broadcast_inputs=broadcast).group(ssps))

    def _compute_producer_counts(self) -> dict[str, int]:
        """§5.5 with active tasks only: tasks consuming the streams that feed an intermediate."""
        consumers: dict[str, set[str]] = {}
        for task, ssps in self._task_ssps.items():
            for ssp in ssps:
                consumers.setdefault(ssp.stream, set()).add(task)
        counts: dict[str, int] = {}
        for stream_id in self.plan.intermediate_streams:
            producers: set[str] = set()
            for source in self.plan.producer_streams(stream_id):
                producers |= consumers.get(source, set())
            counts[stream_id] = len(producers)
        return counts

    def _task_models(self) -> list[TaskModel]:
        return [
            TaskModel(task, ssps, index)
            for index, (task, ssps) in enumerate(sorted(self._task_ssps.items()))
        ]

    def _grouper_metadata(self, previous: JobModel | None) -> GrouperMetadata:
        task_to_processor: dict[str, str] = {}
        task_locality: dict[str, str] = {}
        if previous is not None:
            for container in previous.containers.values():
                for task in container.tasks:
                    task_to_processor[task] = container.processor_id
                    task_locality[task] = container.location_id or self._base_location
        return GrouperMetadata(
            processor_locality=dict(self._locations),
            task_locality=task_locality,
            previous_task_to_processor=task_to_processor,
            previous_task_to_ssps={t: list(s) for t, s in self._task_ssps.items()} if previous else {},
        )

    def _compute_job_model(self, previous: JobModel | None) -> JobModel:
        grouper = grouper_for_processors(self._grouper_name, self._locations, self._grouper_options)
        containers = grouper.group(self._task_models(), self._grouper_metadata(previous))
        placed = {}
        for container in containers:
            location = self._locations.get(container.processor_id, self._base_location)
            placed[container.processor_id] = ContainerModel(
                container.processor_id, container.tasks, location
            )
        model = JobModel(self.config, placed)
        encoded = model.to_json()
        NamespacedMetadataStore(self.metadata, _JOB_MODEL_NAMESPACE).put(
            "latest", encoded.encode() if isinstance(encoded, str) else encoded
        )
        return model

    # -- control ---------------------------------------------------------------------------
    def _start_drain_monitors(self) -> None:
        """One DrainMonitor per processor, on the job's metadata store (Drain SEP)."""
        if not self.config.get_bool("job.drain-monitor.enabled"):
            return
        interval = self.config.get_int("job.drain-monitor.poll.interval.ms")
        for processor_id in sorted(self._locations):
            monitor = DrainMonitor(self.metadata, self.run_id, poll_interval_ms=interval)
            monitor.register_callback(self._on_drain_notification)
            self._monitors[processor_id] = monitor
            monitor.start()

    def _on_drain_notification(self) -> None:
        if not self._drain_requested:
            self.drain_seen_epoch = self.epoch
        self._drain_requested = True

    def _stop_drain_monitors(self) -> None:
        for monitor in self._monitors.values():
            monitor.stop()

    def drain(self, wait: bool = False, timeout: float | None = None) -> JobStatus:
        """Request a drain: writes a drain notification for this run and returns at once
        (``wait=True`` waits until every task drained and the job stopped). A job that has
        ended has nothing to drain: the notification would drain its next run at start."""
        status = self.status()
        if status.done:
            msg = f"job {self.plan.app_name!r} has already {status.state}; there is nothing to drain"
            raise JobError(msg)
        write_drain_notification(self.metadata, self.run_id)
        if wait:
            return self.wait(timeout)
        return self.status()

    def drain_states(self) -> DrainStatesView:
        """Per task and SSP: drained, upstream tasks heard from / expected, the epoch it drained
        at; ``.history`` replays propagation epoch by epoch."""
        return DrainStatesView.build(self._history, self._producer_counts, self._task_ssps)

    def start(self, background: bool) -> Job:
        self._state = "running"
        self._start_drain_monitors()
        if background:
            self._thread = threading.Thread(target=self._run_safely, name=f"samza-nb-{self.plan.app_name}", daemon=True)
            self._thread.start()
        else:
            self._run_safely()
            self._raise_if_failed()
        return self

    def _run_safely(self) -> None:
        try:
            self._loop()
            if self._state == "drained":
                cleanup(self.metadata, self.run_id)
        except BaseException as error:  # the job thread must record every failure
            self._error = error
            self._state = "failed"
        finally:
            self._stop_drain_monitors()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def wait(self, timeout: float | None = None) -> JobStatus:
        """Wait until the job ends; raises TimeoutError after ``timeout`` seconds and the job's
        error (for example TaskError) if it failed."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                msg = f"job {self.plan.app_name!r} still running after {timeout} s (epoch {self.epoch})"
                raise TimeoutError(msg)
        self._raise_if_failed()
        return self.status()

    def stop(self) -> JobStatus:
        """Stop after the current epoch (its checkpoint is committed)."""
        self._stop_requested.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._state == "running":
            self._state = "stopped"
        return self.status()

    def kill_processor(self, processor_id: str) -> JobModel:
        """Remove a processor; its tasks move per the grouper (host affinity keeps the rest)."""
        with self._lock:
            if processor_id not in self._locations:
                msg = f"no processor {processor_id!r}; processors are {sorted(self._locations)}"
                raise JobError(msg)
            if len(self._locations) == 1:
                msg = "cannot kill the last processor; stop the job instead"
                raise JobError(msg)
            survivors = {pid: loc for pid, loc in self._locations.items() if pid != processor_id}
            return self.regroup(survivors)

    def add_processor(self, location_id: str | None = None) -> JobModel:
        with self._lock:
            new_id = str(max((int(p) for p in self._locations if p.isdigit()), default=-1) + 1)
            return self.regroup({**self._locations, new_id: location_id or self._base_location})

    def regroup(
        self, processors: dict[str, str], grouper: str | None = None, **options: Any
    ) -> JobModel:
        """Set the live processors (id → location) and optionally the grouper in one step:
        the running job moves from its model to the new one with no model in between. On
        failure the job keeps its processors, grouper and model."""
        if not processors:
            msg = "regroup needs at least one processor; stop the job instead"
            raise JobError(msg)
        with self._lock:
            previous = (self._locations, self._grouper_name, self._grouper_options)
            self._locations = {str(pid): str(location) for pid, location in processors.items()}
            if grouper is not None:
                self._grouper_name, self._grouper_options = grouper, options
            try:
                self.job_model = self._compute_job_model(self.job_model)
            except BaseException:
                self._locations, self._grouper_name, self._grouper_options = previous
                raise
            return self.job_model

    def rebalance(self, grouper: str | None = None, **options: Any) -> JobModel:
        """Regroup the tasks (optionally with another grouper); moved tasks continue from their
        checkpoints. A grouper that fails leaves the running JobModel as it was."""
        with self._lock:
            return self.regroup(self._locations, grouper, **options)

    # -- the loop --------------------------------------------------------------------------
    def _spark_session(self) -> Any:
        if self._spark is None:
            from samza_nb.runtime.spark import get_spark

            if "spark.master" not in self.config:
                # Reuse the notebook's (or test suite's) session whatever its master: stopping
                # it would break every handle the user holds.
                from pyspark.sql import SparkSession

                # The active session is thread-local; the one instantiated in this process is not.
                active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
                if active is not None and getattr(active.sparkContext, "_jsc", None) is not None:
                    self._spark = active
                    return active
            self._spark = get_spark(self.config)
        return self._spark

    def _loop(self) -> None:
        spark = self._spark_session()
        until = self._until
        while not self._stop_requested.is_set():
            if isinstance(until, int) and self.epoch >= until:
                break
            with self._lock:
                model = self.job_model
            active = {
                pid: [t for t in sorted(c.tasks) if c.tasks[t].mode == TaskMode.ACTIVE and t not in self._done_tasks]
                for pid, c in model.containers.items()
            }
            active = {pid: tasks for pid, tasks in active.items() if tasks}
            if not active:
                self._state = "drained" if self._drain_requested else "finished"
                return
            newest = self._newest_offsets()
            if self._idle(active, newest):
                time.sleep(_IDLE_SLEEP_S)
                continue
            self.epoch += 1
            now = self._clock()
            assignments = {
                pid: [self._assignment(task, model, pid, now, newest) for task in tasks]
                for pid, tasks in active.items()
            }
            read_anything = any(
                a.bounds.get(k, 0) > a.start_offsets.get(k, 0)
                for group in assignments.values()
                for a in group
                for k in a.bounds
            )
            with ThreadPoolExecutor(max_workers=max(1, len(assignments))) as pool:
                futures = {
                    pid: pool.submit(_epoch_on_spark, spark, self._digest, self._blob, group)
                    for pid, group in assignments.items()
                }
                results = {pid: future.result() for pid, future in futures.items()}
            self._commit(results)
            self._apply_retention()
            if until == "caught-up" and self._caught_up():
                self._state = "finished"
                return
            if not read_anything:
                time.sleep(_IDLE_SLEEP_S)
        if self._state == "running":
            self._state = "stopped" if self._stop_requested.is_set() else "finished"

    def _idle(self, active: dict[str, list[str]], newest: dict[str, int]) -> bool:
        """Whether an epoch now would do nothing: no message to read, no window whose timers
        fire by processing time, no drain and no epoch left pending by a crash. A job waiting
        on a quiet input then costs no Spark job (epochs still count when ``until`` is one)."""
        if isinstance(self._until, int) or self._drain_requested or self._has_windows:
            return False
        if not self._caught_up(newest):
            return False
        return all(
            self.checkpoints.pending_plan(task, (self._checkpoint_cache.get(task) or Checkpoint()).seq) is None
            for tasks in active.values()
            for task in tasks
        )

    def _newest_offsets(self) -> dict[str, int]:
        newest: dict[str, int] = {}
        for stream_id, info in self.plan.streams.items():
            if info.kind == "output":
                continue
            for partition, offset in info.system.newest_offsets(stream_id).items():
                newest[ssp_key(stream_id, partition)] = offset
        return newest

    def _assignment(
        self, task: str, model: JobModel, processor_id: str, now: int, newest: dict[str, int]
    ) -> EpochAssignment:
        checkpoint = self._checkpoint_cache.get(task) or Checkpoint()
        ssps = sorted((ssp.stream, ssp.partition) for ssp in self._task_ssps[task])
        start_offsets = {
            ssp_key(s, p): checkpoint.offsets.get(
                ssp_key(s, p), self._default_offset(s, ssp_key(s, p), newest)
            )
            for s, p in ssps
        }
        plan = self.checkpoints.pending_plan(task, checkpoint.seq)
        if plan is None:
            limit = self.config.get_int("task.max.epoch.messages")
            bounds = {}
            for stream_id, partition in ssps:
                key = ssp_key(stream_id, partition)
                start = start_offsets[key]
                kind = self.plan.streams[stream_id].kind
                if not self._drain_requested:
                    bounds[key] = min(newest.get(key, start), start + limit)
                elif kind == "input":
                    bounds[key] = start  # Drain: no new source data after what was fetched.
                else:
                    # Drain: a task reads its whole intermediate backlog in one epoch (in
                    # bounded batches), so the drain crosses one shuffle per epoch.
                    bounds[key] = newest.get(key, start)
            plan = EpochPlan(checkpoint.seq, now, bounds, self._drain_requested)
            self.checkpoints.write_plan(task, plan)
        container = model.containers[processor_id]
        return EpochAssignment(
            task_name=task,
            producer=f"{self.plan.app_name}-{self.plan.job_id}/{task}",
            seq=checkpoint.seq,
            now_ms=plan.now_ms,
            run_id=self.run_id,
            location_id=container.location_id or self._base_location,
            store_root=self.store_root,
            changelog_partition=container.tasks[task].changelog_partition,
            ssps=ssps,
            start_offsets=start_offsets,
            bounds=plan.bounds,
            control=checkpoint.control,
            producer_counts=self._producer_counts,
            drain=plan.drain,
            skip_errors=self.config.get_bool("task.errors.skip"),
        )

    def _default_offset(self, stream_id: str, key: str, newest: dict[str, int]) -> int:
        default = self.config.get_str(f"streams.{stream_id}.samza.offset.default") or "oldest"
        if default == "upcoming" and self.plan.streams[stream_id].kind == "input":
            return newest.get(key, 0)
        return 0

    def _commit(self, results: dict[str, list[EpochResult]]) -> None:
        failure: dict[str, Any] | None = None
        for _pid, task_results in sorted(results.items()):
            for result in task_results:
                if result.error is not None:
                    failure = failure or result.error
                    continue
                checkpoint = Checkpoint(result.seq, dict(result.offsets), dict(result.control))
                self.checkpoints.write(result.task_name, checkpoint)
                self._checkpoint_cache[result.task_name] = checkpoint
                self._record_metrics(result)
                if result.end_of_stream or result.drained:
                    self._done_tasks.add(result.task_name)
        self.checkpoints.flush()
        control = {task: cp.control for task, cp in self._checkpoint_cache.items()}
        # The history replays drain propagation; an epoch that changed no DrainStates adds
        # nothing to replay, and a job idling for hours must not grow it epoch by epoch.
        if not self._history or _drains(control) != _drains(self._history[-1]["control"]):
            self._history.append({"epoch": self.epoch, "control": control})
        if failure is not None:
            where = f" (user code at {failure['user_location']})" if failure.get("user_location") else ""
            msg = (
                f"operator {failure['op_id']} failed in task {failure['task']!r} on {failure['ssp']} "
                f"at offset {failure['offset']}: {failure['error']}{where}; nothing past this offset "
                f"was committed (set task.errors.skip=true to skip such messages)"
            )
            raise TaskError(
                msg,
                op_id=failure["op_id"],
                task=failure["task"],
                ssp=failure["ssp"],
                offset=failure["offset"],
            )

    def _record_metrics(self, result: EpochResult) -> None:
        task = self._metrics.setdefault(result.task_name, _empty_task_metrics())
        task["messages_in"] += sum(result.messages_in.values())
        task["messages_out"] += sum(result.messages_out.values())
        task["epochs"] += 1
        task["epoch_seconds"] = result.seconds
        task["restores"] += result.restores
        task["restored_records"] += result.restored_records
        task["restore_seconds"] += result.restore_seconds
        task["skipped"] += result.skipped
        task["last_epoch_restores"] = result.restores
        for stream_id, count in result.messages_in.items():
            self._stream_metrics.setdefault(stream_id, {"in": 0, "out": 0})["in"] += count
        for stream_id, count in result.messages_out.items():
            self._stream_metrics.setdefault(stream_id, {"in": 0, "out": 0})["out"] += count
        for op_id, count in result.operator_counts.items():
            self._operator_counts[op_id] = self._operator_counts.get(op_id, 0) + count

    def _apply_retention(self) -> None:
        """Delete intermediate data every consuming task's checkpoint has passed."""
        lowest: dict[str, int] = {}
        for task, ssps in self._task_ssps.items():
            checkpoint = self._checkpoint_cache.get(task) or Checkpoint()
            for ssp in ssps:
                if self.plan.streams[ssp.stream].kind != "intermediate":
                    continue
                key = ssp_key(ssp.stream, ssp.partition)
                offset = checkpoint.offsets.get(key, 0)
                lowest[key] = min(lowest.get(key, offset), offset)
        for key, offset in lowest.items():
            stream_id, partition = key.rsplit("#", 1)
            if offset > 0:
                self.plan.streams[stream_id].system.delete_before(stream_id, int(partition), offset)

    def _caught_up(self, newest: dict[str, int] | None = None) -> bool:
        return not any(
            lag for (task, _ssp), lag in self._ssp_lags(newest).items() if task not in self._done_tasks
        )

    def _ssp_lags(
        self, newest: dict[str, int] | None = None
    ) -> dict[tuple[str, SystemStreamPartition], int]:
        """Per (task, SSP) of consumed streams: messages between checkpoint and newest offset
        (``newest`` as just read, else read now)."""
        newest = self._newest_offsets() if newest is None else newest
        lags = {}
        for task, ssps in self._task_ssps.items():
            checkpoint = self._checkpoint_cache.get(task) or Checkpoint()
            for ssp in ssps:
                key = ssp_key(ssp.stream, ssp.partition)
                lags[(task, ssp)] = max(0, newest.get(key, 0) - checkpoint.offsets.get(key, 0))
        return lags

    # -- views -----------------------------------------------------------------------------
    @property
    def grouper(self) -> str:
        """The registry name of the grouper that computed the current JobModel."""
        return self._grouper_name

    @property
    def processors(self) -> dict[str, str]:
        """The live processors: processor id → location id (a grouper may leave one idle)."""
        with self._lock:
            return dict(self._locations)

    @property
    def grouper_options(self) -> dict[str, Any]:
        """The options the current grouper was given (``rebalance(grouper, **options)``)."""
        return dict(self._grouper_options)

    def status(self) -> JobStatus:
        model = self.job_model
        lag_by_task: dict[str, int] = {}
        for (task, _ssp), lag in self._ssp_lags().items():
            lag_by_task[task] = lag_by_task.get(task, 0) + lag
        tasks = {
            task: {
                "epochs": (self._checkpoint_cache.get(task) or Checkpoint()).seq,
                "lag": lag_by_task.get(task, 0),
                "done": task in self._done_tasks,
            }
            for task in sorted(self._task_ssps)
        }
        processors = {
            pid: ProcessorStatus(
                pid,
                container.location_id or self._base_location,
                sorted(container.tasks),
                "stopped" if all(t in self._done_tasks for t in container.tasks) else self._state,
            )
            for pid, container in sorted(model.containers.items())
        }
        error = None if self._error is None else str(self._error)
        return JobStatus(self._state, self.epoch, self.run_id, processors, tasks, error)

    def metrics(self) -> dict[str, Any]:
        """Per task and per stream: messages in/out, lag, epoch time, restores."""
        lag_by_stream: dict[str, int] = {}
        lag_by_task: dict[str, int] = {}
        for (task, ssp), lag in self._ssp_lags().items():
            lag_by_stream[ssp.stream] = lag_by_stream.get(ssp.stream, 0) + lag
            lag_by_task[task] = lag_by_task.get(task, 0) + lag
        streams: dict[str, dict[str, int]] = {}
        for stream_id, info in self.plan.streams.items():
            entry = dict(self._stream_metrics.get(stream_id, {"in": 0, "out": 0}))
            if info.kind != "output":
                entry["lag"] = lag_by_stream.get(stream_id, 0)
            streams[stream_id] = entry
        return {
            "tasks": {
                task: {**self._metrics.get(task, _empty_task_metrics()), "lag": lag_by_task.get(task, 0)}
                for task in sorted(self._task_ssps)
            },
            "streams": streams,
            "operators": dict(self._operator_counts),
            "epochs": self.epoch,
        }

    def operator_watermarks(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Per task and operator: (input watermark, output watermark) as last committed."""
        result: dict[str, dict[str, tuple[int, int]]] = {}
        for task, checkpoint in sorted(self._checkpoint_cache.items()):
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
        if isinstance(serde, KVSerde):
            return info.system.read_frame(output_stream_id, serde=serde.value_serde, key_serde=serde.key_serde)
        return info.system.read_frame(output_stream_id, serde=serde)

    def __repr__(self) -> str:
        return f"Job({self.plan.app_name!r}, state={self._state!r}, epoch={self.epoch})"

    def _repr_html_(self) -> str:
        return (
            f"<p>Job <b>{html.escape(self.plan.app_name)}</b> (grouper "
            f"<code>{html.escape(self.grouper)}</code>)</p>{self.status()._repr_html_()}"
        )


def _drains(control: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each task's DrainStates within its committed control state."""
    return {task: state.get("drain", {}) for task, state in control.items()}


def _empty_task_metrics() -> dict[str, Any]:
    return {
        "messages_in": 0, "messages_out": 0, "epochs": 0, "epoch_seconds": 0.0, "restores": 0,
        "restored_records": 0, "restore_seconds": 0.0, "skipped": 0, "last_epoch_restores": 0,
    }


def job_home(plan: ExecutionPlan) -> Path:
    """The folder of a job's metadata store and state: ``job.home``, else
    ``{system path}/jobs/{app}-{job id}`` in the job's default system."""
    configured = plan.config.get_str("job.home")
    if configured:
        return Path(configured).expanduser()
    return Path(default_system(plan).path) / "jobs" / f"{plan.app_name}-{plan.job_id}"


def metadata_store_path(plan_or_home: ExecutionPlan | Path) -> Path:
    """The job's embedded metadata store (checkpoints, run id, drain notifications), given
    its plan or its job home folder."""
    home = plan_or_home if isinstance(plan_or_home, Path) else job_home(plan_or_home)
    return home / EMBEDDED_FILE_NAME


def run(
    app: Any,
    config: Config | dict[str, Any] | None = None,
    *,
    processors: int = 1,
    grouper: str = "group-by-container-count",
    until: str | int = "end-of-stream",
    background: bool = False,
    clock: Callable[[], int] | None = None,
) -> Job:
    """Run ``app`` on Spark; returns the Job (finished unless ``background=True``)."""
    if not (isinstance(until, int) and until > 0) and until not in _UNTIL:
        msg = f"until must be one of {list(_UNTIL)} or a positive number of epochs, got {until!r}"
        raise ConfigError(msg)
    if not isinstance(processors, int) or processors < 1:
        msg = f"processors must be a positive int, got {processors!r}"
        raise ConfigError(msg)
    job = Job(
        app,
        Config.of(config),
        processors=processors,
        grouper=grouper,
        until=until,
        clock=clock,
    )
    return job.start(background)
