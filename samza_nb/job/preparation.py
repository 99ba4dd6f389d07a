"""What a job needs before its first epoch: inputs checked, streams created, the coordinator's
inputs, its processors (ids and locations) and its metadata store, all from plan and config."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

from samza_nb.config import Config
from samza_nb.coordination import get_location_id_provider
from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
from samza_nb.errors import ConfigError, PlanError, StreamNotFoundError
from samza_nb.grouping import GroupBySystemStreamPartition, ssp_grouper_from_config
from samza_nb.job.home import metadata_store_path
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.registry import get_metadata_store
from samza_nb.model import SystemStreamPartition
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.runtime.plan_systems import default_system_of, system_of

__all__ = [
    "MAX_PROCESSORS",
    "base_location",
    "existing_job_data",
    "check_inputs",
    "create_streams",
    "initial_processors",
    "input_partition_counts",
    "job_inputs",
    "metadata_store_name",
    "open_metadata_store",
]

#: Processors one process runs at most (job.container.count's maximum too).
MAX_PROCESSORS = 1024


def check_inputs(plan: ExecutionPlan) -> None:
    """A missing input, or one whose partitions differ from its descriptor's ``partitions=``,
    is found before the job writes anything (the usual first-run mistakes), as is an
    application that reads nothing."""
    if not any(info.kind == "input" for info in plan.streams.values()):
        msg = (
            f"application {plan.app_name!r} reads no input stream: there is nothing to run "
            f"(add one with app.input(system.input(...)))"
        )
        raise PlanError(msg)
    for stream_id, info in plan.streams.items():
        if info.kind not in ("input", "side_input"):
            continue
        actual = info.system.partition_count(stream_id)
        if actual is None:
            msg = (
                f"input stream {stream_id!r} does not exist in system {info.system.name!r}; "
                f"create it with {info.system.name}.create_stream({stream_id!r}, partitions=N) "
                f"and write to it"
            )
            raise StreamNotFoundError(msg)
        if actual != info.partitions:
            consequence = (
                "wait forever for partitions that do not exist"
                if actual < info.partitions
                else f"never read partition {info.partitions}"
                if actual == info.partitions + 1
                else f"never read partitions {info.partitions} to {actual - 1}"
            )
            msg = (
                f"input stream {stream_id!r} of system {info.system.name!r} has {actual} "
                f"partitions, but its descriptor says partitions={info.partitions}: the job "
                f"would {consequence}; drop partitions= (the stream's own count is used) or "
                f"pass partitions={actual}"
            )
            raise PlanError(msg)


def check_grouping(plan: ExecutionPlan) -> None:
    """Groupings the engine cannot run are refused before the job writes anything: key
    buckets (``job.elasticity.factor`` > 1: each bucket's task would read its whole partition,
    every message once per bucket), and a job with state whose SSP grouper makes more tasks
    than its changelogs have partitions (one per task of the default grouping)."""
    factor = plan.config.get_int("job.elasticity.factor")
    if factor > 1:
        msg = (
            f"job.elasticity.factor={factor}: samza_nb does not split an input partition into key "
            f"buckets (each bucket's task would read the whole partition, every message {factor} "
            f"times); use 1, and more input partitions for more tasks"
        )
        raise ConfigError(msg)
    if not plan.store_names:
        return
    grouper = ssp_grouper_from_config(plan.config, ["0"])
    if isinstance(grouper, GroupBySystemStreamPartition):
        ssps = sum(
            info.partitions
            for info in plan.streams.values()
            if info.kind in ("input", "intermediate") and not info.is_broadcast  # broadcast: every task
        )
        if ssps > plan.task_count:
            msg = (
                f"job.systemstreampartition.grouper.factory: group-by-system-stream-partition "
                f"makes one task per input partition of every stream ({ssps} tasks), but the "
                f"changelogs of the job's stores ({', '.join(sorted(plan.store_names))}) have one "
                f"partition per task of group-by-partition ({plan.task_count}); use "
                f"group-by-partition for a job with state (windows, joins, tables)"
            )
            raise ConfigError(msg)


def create_streams(plan: ExecutionPlan) -> None:
    """Outputs and intermediate streams with their planned partition counts; a compacted
    changelog per store, one partition per task, in the default system. A stream that exists
    must have the planned count: an output's descriptor may not contradict its stream, and an
    intermediate stream or changelog made by an earlier run with another count needs a reset."""
    for stream_id, info in plan.streams.items():
        if info.kind in ("input", "side_input"):
            continue
        actual = info.system.partition_count(stream_id)
        if actual is None:
            system_of(plan, stream_id).create_stream(stream_id, int(info.partitions))
        elif actual != info.partitions:
            if info.kind == "output":
                msg = (
                    f"output stream {stream_id!r} of system {info.system.name!r} has {actual} "
                    f"partitions, but its descriptor says partitions={info.partitions}: drop "
                    f"partitions= (the stream's own count is used) or pass partitions={actual}"
                )
                raise PlanError(msg)
            what = f"intermediate stream {stream_id!r}"
            raise PlanError(_made_by_earlier_run(plan, what, actual, info.partitions))
    system = default_system_of(plan)
    if system is None:
        return
    for store in plan.store_names:
        stream_id = plan.changelog_stream_id(store)
        actual = system.partition_count(stream_id)
        if actual is None:
            system.create_stream(stream_id, plan.task_count, compacted=True)
        elif actual != plan.task_count:
            what = f"changelog {stream_id!r} of store {store!r}"
            raise PlanError(_made_by_earlier_run(plan, what, actual, plan.task_count))


def _made_by_earlier_run(plan: ExecutionPlan, what: str, actual: int, planned: int) -> str:
    return (
        f"{what} has {actual} partitions, made by an earlier run of job "
        f"{plan.app_name!r} (id {plan.job_id!r}), but this plan needs {planned} (the inputs' "
        f"partitions or job.intermediate.stream.partitions changed): run it with the settings "
        f"it was made with, or start the job over with `samza-nb reset MODULE:APP --yes` "
        f"(reset_job(app.plan()) from samza_nb.job.reset in Python; inputs and outputs stay)"
    )


def existing_job_data(plan: ExecutionPlan, store_root: Path) -> list[str]:
    """The job's own data that outlive a run: intermediate streams and changelogs holding
    messages, store folders. With a fresh metadata store, any of it means the store was lost
    (JobHomeGuard)."""
    found = []
    streams = [sid for sid, info in plan.streams.items() if info.kind == "intermediate"]
    streams += [plan.changelog_stream_id(store) for store in plan.store_names]
    system = default_system_of(plan)
    for stream_id in streams:
        owner = system_of(plan, stream_id) if stream_id in plan.streams else system
        if owner is None or owner.partition_count(stream_id) is None:
            continue
        messages = sum(owner.newest_offsets(stream_id).values())
        if messages:
            found.append(f"stream {stream_id!r} ({messages} messages)")
    if store_root.is_dir():
        found += [f"store folder {path}" for path in sorted(store_root.glob("*/*/*")) if path.is_dir()]
    return found


def forget_cached_offsets(plan: ExecutionPlan) -> None:
    """What this process saw of the job's streams and changelogs may be of topics made again
    since (broker data lost, or deleted and created by another process): a run starts from the
    broker."""
    for stream_id in plan.streams:
        system_of(plan, stream_id).forget_cached_offsets(stream_id)
    default = default_system_of(plan)
    if default is not None:
        for store in plan.store_names:
            default.forget_cached_offsets(plan.changelog_stream_id(store))


def model_calculator(plan: ExecutionPlan, grouper: str | None, *, one_process: bool) -> JobModelCalculator:
    """The calculator of the job's models; processes of a distributed job (``one_process``
    false) have their own ids, so Samza's standalone grouper unless one is configured."""
    if grouper is None and not one_process and "task.name.grouper.factory" not in plan.config:
        grouper = "group-by-container-ids"
    return JobModelCalculator(
        job_inputs(plan),
        grouper=grouper,
        replication_factor=plan.config.get_int("job.standbytasks.replication.factor"),
        # A distributed job's processes join one at a time: the first ones run with the
        # standbys their locations allow (status().unassigned_standbys) until more join.
        place_fewer_standbys=not one_process,
    )


def job_inputs(plan: ExecutionPlan) -> JobInputs:
    """The plain inputs a coordinator groups: every consumed SSP, the broadcast ones, stores."""
    ssps, broadcast = set(), set()
    for stream_id, info in plan.consumed_streams.items():
        for partition in range(int(info.partitions)):
            ssp = SystemStreamPartition(info.system.name, stream_id, partition)
            ssps.add(ssp)
            if info.is_broadcast:
                broadcast.add(ssp)
    return JobInputs(frozenset(ssps), frozenset(broadcast), bool(plan.store_names), plan.config)


def input_partition_counts(plan: ExecutionPlan) -> Callable[[], dict[str, int]]:
    """A callable reading each input stream's partition count from its system now (Kafka's
    topic metadata, the embedded log's table), for a leader's partition-count monitor
    (``job.coordinator.monitor-partition-change.frequency.ms``). A stream its system does not
    list at that moment (a topic being re-created) is left out: its count did not change."""
    inputs = sorted(stream_id for stream_id, info in plan.streams.items() if info.kind == "input")

    def counts() -> dict[str, int]:
        found = {stream_id: system_of(plan, stream_id).partition_count(stream_id) for stream_id in inputs}
        return {stream_id: count for stream_id, count in found.items() if count is not None}

    return counts


def initial_processors(config: Config, count: int | None, *, single: bool = False) -> dict[str, str]:
    """Processor id → location: ``run(processors=N)`` over ``job.container.count``; ids from
    ``processor.id`` (a list) or 0..N-1; locations from ``processor.locations`` or the
    LocationIdProvider. ``single``: a processor process of a distributed coordinator, one
    processor whose id (unless configured) is unique among the group's processes."""
    if single:
        if count not in (None, 1):
            msg = (
                f"processors={count!r}: a process of a job on {config.get_str('job.coordinator.factory')} "
                f"hosts one processor; start one process per processor (each with its own "
                f"processor.id)"
            )
            raise ConfigError(msg)
        ids = config.get_list("processor.id")
        pid = ids[0] if ids else f"{socket.gethostname()}-{os.getpid()}"
        configured = config.get_list("processor.locations")
        return {pid: configured[0] if configured else base_location(config)}
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        msg = f"processors must be a positive int, got {count!r}"
        raise ConfigError(msg)
    if count is not None and count > MAX_PROCESSORS:
        msg = (
            f"processors must be at most {MAX_PROCESSORS} (each is a thread of this process with "
            f"its own epochs; a processor past the job's task count gets no task), got {count}"
        )
        raise ConfigError(msg)
    ids = config.get_list("processor.id")
    count = count or (len(ids) if ids else config.get_int("job.container.count"))
    if ids and len(ids) != count:
        msg = f"processor.id names {len(ids)} processors ({ids}) but the job has {count}"
        raise ConfigError(msg)
    ids = ids or [str(i) for i in range(count)]
    configured = config.get_list("processor.locations")
    base = base_location(config)
    return {pid: (configured[i] if i < len(configured) else base) for i, pid in enumerate(ids)}


def base_location(config: Config) -> str:
    """This process's location id from ``locationid.provider.factory``."""
    provider = config.get_str("locationid.provider.factory") or "default"
    return str(get_location_id_provider(provider, config).location_id())


def metadata_store_name(config: Config) -> str:
    """``metadata.store.factory``: embedded in the job home by default, ZooKeeper (Azure) by
    default for a job coordinated through ZooKeeper (Azure): every processor process must see
    the same."""
    name = config.get_str("metadata.store.factory")
    coordinator = config.get_str("job.coordinator.factory")
    if "metadata.store.factory" not in config and coordinator in ("zookeeper", "azure"):
        name = coordinator  # the distributed coordinator's own service
    return name or "embedded"


def open_metadata_store(config: Config, home: Path) -> MetadataStore:
    """The job's metadata store (see :func:`metadata_store_name`)."""
    name = metadata_store_name(config)
    if name == "embedded":
        return get_metadata_store(name, config, path=metadata_store_path(home))
    return get_metadata_store(name, config)
