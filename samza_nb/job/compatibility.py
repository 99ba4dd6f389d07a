"""Combinations of settings the engine cannot run, refused when the job is planned.

Each rule names the keys involved and the supported alternative in one line, so that a job
that would fail at its first commit (or, worse, run without doing what its settings promise)
never starts. The rules:

- A ZooKeeper or Azure coordinator fences its processors' commits through its own service: a
  commit to another metadata store could not be fenced (a processor the leader dropped could
  still write checkpoints), so ``metadata.store.factory`` must name the coordinator's service.
- Exactly-once keeps checkpoints in the Kafka checkpoint topic, in one transaction with the
  epoch's outputs: the checkpoint system and every stream the job writes must be on one Kafka
  cluster (runtime/task/exactly_once.py's ``checkpoint_system``, called here so that the job is
  refused before it writes anything rather than when it opens its checkpoints).
- The ``kafka`` metadata store (the coordinator stream) needs the address of a Kafka cluster,
  whatever system the job's streams are on.
- With the embedded coordinator every processor is in this process, so a standby replication
  factor above 1 needs that many distinct processor locations (a standby never shares its
  active's location); a distributed job's processes join one at a time and run with the
  standbys their locations allow until more join.
- The embedded system is one file on this machine's disk: on a Spark master whose executors
  run on other hosts (runtime/executors/masters.py), task epochs could not read or write it, so the job's
  streams must be on Kafka there.

:func:`check_job` applies every rule in this order; the job calls it before it writes anything,
and job/compatibility_matrix.py tabulates what it says for every combination.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from samza_nb.config import Config
from samza_nb.errors import ConfigError
from samza_nb.kafka_settings import KafkaClientConfig
from samza_nb.runtime.executors.masters import check_master_url, effective_master, on_this_machine
from samza_nb.runtime.task.exactly_once import checkpoint_system, exactly_once
from samza_nb.systems.embedded import EmbeddedSystem

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["check_compatibility", "check_job", "check_standby_locations", "check_streams_reach_executors"]

#: Coordinators whose commits are fenced through their own service's metadata store.
_FENCED_BY_OWN_STORE = ("zookeeper", "azure")


def check_job(
    plan: ExecutionPlan, executor: str, processors: Mapping[str, str], spark: Any = None
) -> None:
    """Raise :class:`ConfigError` for the first combination of ``plan``'s settings, the
    ``executor`` and the ``processors`` this process hosts (id -> location) the engine cannot
    run."""
    check_compatibility(plan.config)
    if exactly_once(plan):
        checkpoint_system(plan)
    check_standby_locations(plan.config, processors)
    check_streams_reach_executors(plan, executor, spark)


def check_compatibility(config: Config) -> None:
    """Raise :class:`ConfigError` for the first combination of ``config`` the engine cannot run."""
    _check_coordinator_store(config)
    _check_coordinator_stream_cluster(config)


def _check_coordinator_stream_cluster(config: Config) -> None:
    if (config.get_str("metadata.store.factory") or "").strip().lower() != "kafka":
        return
    # The same default as samza_nb.metadata.kafka.CoordinatorStreamMetadataStore.from_config.
    system = config.get_str("job.coordinator.system") or config.get_str("job.default.system") or "kafka"
    try:
        KafkaClientConfig.from_config(system, config)
    except ConfigError as error:
        msg = (
            f"metadata.store.factory=kafka keeps the job's metadata in a coordinator stream on a "
            f"Kafka cluster, but system {system!r} (job.coordinator.system, else "
            f"job.default.system) has no bootstrap servers: name a Kafka system in "
            f"job.coordinator.system and set its systems.<name>.bootstrap.servers (or "
            f"$SAMZA_NB_KAFKA_BOOTSTRAP), or use metadata.store.factory=embedded"
        )
        raise ConfigError(msg) from error


def check_standby_locations(config: Config, processors: Mapping[str, str]) -> None:
    """Refuse more copies of each task than the embedded coordinator's processors have
    distinct locations (``processors``: id -> location)."""
    factor = config.get_int("job.standbytasks.replication.factor")
    coordinator = (config.get_str("job.coordinator.factory") or "embedded").strip().lower()
    locations = sorted(set(processors.values()))
    if factor <= 1 or coordinator != "embedded" or len(locations) >= factor:
        return
    msg = (
        f"job.standbytasks.replication.factor={factor} places each task's copies at {factor} "
        f"distinct locations, but the job's {len(processors)} processor(s) are at {len(locations)} "
        f"({', '.join(locations)}): run processors={factor} with processor.locations naming "
        f"{factor} locations, or set job.standbytasks.replication.factor=1"
    )
    raise ConfigError(msg)


def _check_coordinator_store(config: Config) -> None:
    coordinator = (config.get_str("job.coordinator.factory") or "embedded").strip().lower()
    if coordinator not in _FENCED_BY_OWN_STORE or "metadata.store.factory" not in config:
        return  # unset: the coordinator's own service (preparation.metadata_store_name)
    store = config.get_str("metadata.store.factory") or "embedded"
    if store.strip().lower() != coordinator:
        msg = (
            f"job.coordinator.factory={coordinator} with metadata.store.factory={store}: the "
            f"{coordinator} coordinator fences its processors' commits in its own store; set "
            f"metadata.store.factory={coordinator} (or leave it unset)"
        )
        raise ConfigError(msg)


def check_streams_reach_executors(plan: ExecutionPlan, executor: str, spark: Any = None) -> None:
    """Refuse embedded streams when the Spark executors may run on other hosts."""
    if executor != "spark":
        return
    master = str(spark.sparkContext.master) if spark is not None else effective_master(plan.config)
    check_master_url(master)
    if on_this_machine(master):
        return
    systems: list[tuple[str, object]] = [
        (f"stream {stream_id!r}", info.system) for stream_id, info in plan.streams.items()
    ]
    systems.append(("changelogs and intermediate streams (the default system)", plan.default_system))
    for what, system in systems:
        if isinstance(system, EmbeddedSystem):
            msg = (
                f"{what} is on the embedded system {system.name!r}, a log file on this machine "
                f"({system.path}); the executors of spark.master={master} may run on other hosts "
                f"and cannot read it: put the job's streams on Kafka (samza_nb.systems."
                f"KafkaSystem), or run on a local[*] master"
            )
            raise ConfigError(msg)
