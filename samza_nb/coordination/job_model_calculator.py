"""The one place job models are computed (Samza's JobModelCalculator, SAMZA.md §1–§4).

Every coordinator calls it: the embedded one in the driver, the ZooKeeper and Azure leaders in
their processes, and the grouper explorer for its previews, so a preview is the model the job
then runs. The steps:

1. the SSP grouper of ``job.systemstreampartition.grouper.factory`` groups every consumed
   partition into tasks (broadcast partitions into every task);
2. with durable stores and a previous model, partitions of expanded streams go back to the
   tasks that held their keys (SSPGrouperProxy, §2.6);
3. task models keep their previous changelog partitions; new tasks get the next ones (§2.5);
4. the task grouper (``task.name.grouper.factory`` or the one asked for) assigns tasks to the
   live processors with GrouperMetadata; a replication factor above 1 places standby copies
   (§4) instead;
5. every container carries its processor's location.

The model carries no config (Samza strips it before storing a model), so no secret is ever in a
stored or displayed job model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from samza_nb.config import Config
from samza_nb.errors import GroupingError
from samza_nb.grouping import (
    GroupByPartition,
    GrouperMetadata,
    build_task_models,
    expand_partitions,
    grouper_for_processors,
    ssp_grouper_from_config,
)
from samza_nb.grouping.ssp_groupers import AllSspToSingleTask, GroupBySystemStreamPartition
from samza_nb.grouping.standby import active_task_name, assign_with_standbys, failover
from samza_nb.grouping.standby_tasks import check_replication_factor
from samza_nb.model import (
    ContainerModel,
    JobModel,
    LocationId,
    SystemStreamPartition,
    TaskMode,
    TaskModel,
)

__all__ = ["JobInputs", "JobModelCalculator", "assign_tasks", "check_standby_grouper", "unassigned_standbys"]

_DEFAULT_GROUPER = "group-by-container-count"
#: The groupers a replication factor above 1 accepts: host affinity places the actives, and
#: the embedded and standalone defaults stand for it.
_STANDBY_GROUPERS = ("host-affinity", _DEFAULT_GROUPER, "group-by-container-ids")


@dataclass(frozen=True)
class JobInputs:
    """What a coordinator needs to know of a job, as plain values (no plan, no system).

    ``ssps``: every partition of every stream the job consumes (inputs, side inputs and
    intermediate streams); ``broadcast``: those read by every task; ``has_durable_stores``:
    whether tasks keep state whose keys must not move when a stream expands.
    """

    ssps: frozenset[SystemStreamPartition]
    broadcast: frozenset[SystemStreamPartition] = frozenset()
    has_durable_stores: bool = False
    config: Config = field(default_factory=Config)

    def partition_counts(self) -> dict[str, int]:
        """Stream → partition count, as the partition-count monitor compares them."""
        counts: dict[str, int] = {}
        for ssp in self.ssps:
            counts[ssp.stream] = max(counts.get(ssp.stream, 0), ssp.partition + 1)
        return counts


def assign_tasks(
    tasks: Mapping[str, TaskModel] | Iterable[TaskModel],
    processors: Mapping[str, LocationId],
    metadata: GrouperMetadata,
    *,
    grouper: str,
    options: Mapping[str, Any] | None = None,
    replication_factor: int = 1,
    place_fewer_standbys: bool = False,
) -> JobModel:
    """Steps 4 and 5: tasks over the live ``processors`` (id → location) with ``metadata``.

    ``place_fewer_standbys``: with fewer distinct locations than the replication factor, place
    as many standbys as they allow (a distributed job whose processes join one by one) instead
    of refusing (a GroupingError).

    With a replication factor above 1, actives are placed by host affinity (the hot-standby
    SEP's standalone placement, as Samza requires host affinity for standbys): the embedded
    and standalone default groupers (count, ids) stand for it, their options kept for when the
    factor is 1 again, and any other grouper is refused rather than ignored."""
    check_replication_factor(replication_factor, "assign_tasks")
    models = list(tasks.values()) if isinstance(tasks, Mapping) else list(tasks)
    containers: Iterable[ContainerModel]
    if replication_factor > 1:
        check_standby_grouper(grouper, processors, options, replication_factor)
        containers = assign_with_standbys(
            models, metadata.with_processors(processors), replication_factor, place_fewer=place_fewer_standbys
        )
    elif grouper == "group-by-container-count":
        containers = _count_grouped(models, processors, metadata, options)
    else:
        containers = _onto_live_processors(
            grouper_for_processors(grouper, processors, options).group(models, metadata.with_processors(processors)),
            processors,
            grouper,
        )
    return JobModel(
        {},
        [c.replace(location_id=processors.get(c.processor_id, c.location_id)) for c in containers],
    )


def check_standby_grouper(
    grouper: str, processors: Mapping[str, LocationId], options: Mapping[str, Any] | None, replication_factor: int
) -> None:
    """Refuse a grouper that cannot stand for host affinity under standbys, a misspelled
    one, or bad options (a failover checks them too, though it moves only the lost tasks)."""
    grouper_for_processors(grouper, processors, options)  # a bad name or option fails here
    if grouper not in _STANDBY_GROUPERS:
        msg = (
            f"grouper {grouper!r} cannot place tasks with hot standbys (replication factor "
            f"{replication_factor}): actives are placed by host affinity then; use "
            "grouper 'host-affinity' (task.name.grouper.factory) or replication factor 1 "
            "(job.standbytasks.replication.factor)"
        )
        raise GroupingError(msg)


def _count_grouped(
    models: list[TaskModel],
    processors: Mapping[str, LocationId],
    metadata: GrouperMetadata,
    options: Mapping[str, Any] | None,
) -> list[ContainerModel]:
    """GroupByContainerCount over processors whose ids need not be ``"0"`` … ``"N-1"``.

    The grouper numbers its containers and its balance keeps tasks on the *numbers* of the
    previous assignment; processor ids are those numbers only until one leaves (``1`` and ``2``
    after ``0`` was killed) or when they are names (``p1``, ``p2``). So the processors are
    numbered for it: those of the previous assignment that are still live first, then the new
    ones, then the ones that left (whose containers the balance empties), each group in id
    order; its containers are then named back. A previous assignment stays where it was, and
    only a departed processor's tasks move. Processors joining while others leave (a restart
    under a new id) replace them, in id order: a replacement takes its predecessor's number, so
    the departed processor's tasks move to it and no other task moves (numbered apart, the
    departed and the new would leave a gap in the numbers, and the grouper would start afresh
    with round robin, as Samza's does)."""
    previous = metadata.previous_task_to_processor
    before = set(previous.values())
    kept = sorted(p for p in processors if p in before)
    joined = sorted(p for p in processors if p not in before)
    left = sorted(before - set(processors))
    replaced = dict(zip(left, joined, strict=False))  # departed -> the new processor in its place
    number = {pid: str(i) for i, pid in enumerate(kept + joined + left[len(replaced):])}
    numbered = GrouperMetadata(
        processor_locality={number[pid]: location for pid, location in processors.items()},
        task_locality=metadata.task_locality,
        previous_task_to_processor={task: number[replaced.get(pid, pid)] for task, pid in previous.items()},
    )
    grouped = grouper_for_processors("group-by-container-count", processors, options).group(models, numbered)
    named = {number[pid]: pid for pid in processors}
    return _onto_live_processors(
        [c.replace(processor_id=named.get(c.processor_id, c.processor_id)) for c in grouped],
        processors,
        "group-by-container-count",
    )


def _onto_live_processors(
    containers: Iterable[ContainerModel], processors: Mapping[str, LocationId], grouper: str
) -> list[ContainerModel]:
    """The grouper's containers, each on a live processor. Count groupers name their containers
    ``"0"`` … ``"N-1"``, which are the processor ids only until one of them leaves (processors
    ``1`` and ``2`` after ``0`` was killed): a container whose id is not a live processor goes
    to a live processor that has none, in id order, so no task is left on a processor that
    is gone."""
    made = sorted(containers, key=lambda c: c.processor_id)
    unknown = [c for c in made if c.processor_id not in processors]
    if not unknown:
        return made
    free = sorted(set(processors) - {c.processor_id for c in made})
    if len(unknown) > len(free):
        msg = (
            f"grouper {grouper!r} made containers {[c.processor_id for c in made]} for the live "
            f"processors {sorted(processors)}: more containers than processors, so tasks of "
            f"{[c.processor_id for c in unknown[len(free):]]} would run nowhere; ask the "
            "grouper for at most as many containers as there are processors"
        )
        raise GroupingError(msg)
    moved = dict(zip((c.processor_id for c in unknown), free, strict=False))
    return [c.replace(processor_id=moved.get(c.processor_id, c.processor_id)) for c in made]


def unassigned_standbys(model: JobModel, replication_factor: int) -> int:
    """Standby tasks the replication factor asks for that ``model`` does not place (after a
    failover left fewer locations than the factor)."""
    if replication_factor <= 1:
        return 0
    wanted = (replication_factor - 1) * len(model.active_tasks())
    return max(0, wanted - len(model.standby_tasks()))


def _history_after_failover(
    metadata: GrouperMetadata, previous: JobModel, promoted: JobModel, processors: Mapping[str, LocationId]
) -> GrouperMetadata:
    """``metadata`` as if the failover's model had run, for the copies it found warm: a task
    that stayed, or was promoted onto the processor holding its standby, has that processor
    and its location as its history, so a balance over more processors starts from there. A
    task the failover placed where no copy of it was keeps its old history (its store's
    location)."""
    warm = {
        (pid, name if task.mode is TaskMode.ACTIVE else active_task_name(name))
        for pid, container in previous.containers.items()
        for name, task in container.tasks.items()
    }
    actives = {
        name: pid for name, pid in promoted.task_to_processor(mode=TaskMode.ACTIVE).items() if (pid, name) in warm
    }
    before = previous.task_to_processor(mode=TaskMode.STANDBY)
    standbys = {
        name: pid for name, pid in promoted.task_to_processor(mode=TaskMode.STANDBY).items() if before.get(name) == pid
    }
    return GrouperMetadata(
        processor_locality=processors,
        task_locality={**metadata.task_locality, **{name: processors[pid] for name, pid in actives.items()}},
        previous_task_to_processor=actives,
        previous_task_to_ssps=metadata.previous_task_to_ssps,
        previous_standby_to_processor=standbys,
        store_locality=metadata.store_locality,
    )


class JobModelCalculator:
    """Computes job models for one job (see the module docstring for the steps).

    ``grouper`` and ``options`` override ``task.name.grouper.factory``; the options a grouper
    needs and leaves out come from the live processors (count, ids). ``place_fewer_standbys``:
    see :func:`assign_tasks` (the distributed coordinators' processes join one by one).
    """

    def __init__(
        self,
        inputs: JobInputs,
        *,
        grouper: str | None = None,
        options: Mapping[str, Any] | None = None,
        replication_factor: int = 1,
        place_fewer_standbys: bool = False,
    ) -> None:
        self.inputs = inputs
        self.place_fewer_standbys = place_fewer_standbys
        config = inputs.config
        self.grouper = grouper or config.get_str("task.name.grouper.factory") or _DEFAULT_GROUPER
        filled = dict(options or {})
        if self.grouper == "group-by-container-ids":
            filled.setdefault("host_affinity", config.get_bool("job.host-affinity.enabled"))
        self.options = filled
        self.replication_factor = replication_factor

    def with_grouper(self, grouper: str | None, options: Mapping[str, Any] | None) -> JobModelCalculator:
        """The same job with another task grouper (None keeps this one and its options)."""
        if grouper is None:
            return self
        return JobModelCalculator(
            self.inputs,
            grouper=grouper,
            options=options,
            replication_factor=self.replication_factor,
            place_fewer_standbys=self.place_fewer_standbys,
        )

    def with_replication_factor(self, replication_factor: int | None) -> JobModelCalculator:
        """The same job with another standby replication factor (None keeps this one)."""
        if replication_factor is not None:
            check_replication_factor(replication_factor, "replication_factor")
        if replication_factor is None or replication_factor == self.replication_factor:
            return self
        return JobModelCalculator(
            self.inputs,
            grouper=self.grouper,
            options=self.options,
            replication_factor=replication_factor,
            place_fewer_standbys=self.place_fewer_standbys,
        )

    def task_models(self, processor_ids: list[str], previous: JobModel | None) -> dict[str, TaskModel]:
        """Steps 1–3: the job's active task models, given the previous model."""
        ssp_grouper = self._ssp_grouper(processor_ids)
        if isinstance(ssp_grouper, AllSspToSingleTask) and len(processor_ids) > 1:
            msg = (
                f"all-ssp-to-single-task with {len(processor_ids)} processors makes a task per "
                "processor reading every partition, for consumers that split partitions between "
                "them; samza_nb's readers do not, so each message would be processed once per "
                "processor: run it with one processor, or use group-by-partition "
                "(job.systemstreampartition.grouper.factory)"
            )
            raise GroupingError(msg)
        grouped = ssp_grouper.group(self.inputs.ssps)
        if previous is not None and self.inputs.has_durable_stores:
            previous_ssps = {
                name: task.ssps for name, task in previous.active_tasks().items()
            }
            if previous_ssps:
                grouped = expand_partitions(
                    grouped, previous_ssps, broadcast_inputs=self.inputs.broadcast
                )
        changelog = {} if previous is None else {
            name: task.changelog_partition for name, task in previous.active_tasks().items()
        }
        return build_task_models(grouped, changelog)

    def calculate(
        self,
        processors: Mapping[str, LocationId],
        metadata: GrouperMetadata,
        previous: JobModel | None,
        *,
        same_run: bool = True,
    ) -> JobModel:
        """A new job model for the live ``processors`` (id → location).

        With standbys, losing processors (the tasks unchanged) is a failover: each active task
        of a lost processor is promoted onto a processor holding its standby, and lost standbys
        are placed again where the invariant allows, new processors first in line (fewer than
        RF − 1 when too few locations are left: :func:`unassigned_standbys` counts them). When
        at most as many processors joined meanwhile (a crashed process back under a new id),
        that is the model; when more joined, the tasks are then balanced over every processor
        from where the failover put them, so the lost tasks start on their standbys as far as
        the balance allows (the hot-standby SEP, standalone). Anything else is a fresh
        placement (balanced, tasks kept where their stores are), which needs RF distinct
        locations (a GroupingError says so). ``same_run``: whether ``previous`` is this run's
        model; a new run id keeps checkpoints but not locality, so it never fails over from
        the previous run's placement."""
        tasks = self.task_models(sorted(processors), previous)
        if self.replication_factor > 1 and same_run and previous is not None and previous.standby_tasks():
            dead = set(previous.containers) - set(processors)
            joined = set(processors) - set(previous.containers)
            # With no processor of the previous model left (every process redeployed under a
            # new id) there is no standby to promote onto: a fresh placement by location.
            survived = set(processors) & set(previous.containers)
            if dead and survived and tasks == previous.active_tasks():
                check_standby_grouper(self.grouper, processors, self.options, self.replication_factor)
                promoted = failover(
                    previous, dead, metadata.with_processors(processors), replication_factor=self.replication_factor
                )
                if len(joined) <= len(dead):
                    return JobModel(
                        {},
                        [
                            c.replace(location_id=processors.get(c.processor_id, c.location_id))
                            for c in promoted.containers.values()
                        ],
                    )
                metadata = _history_after_failover(metadata, previous, promoted, processors)
        return assign_tasks(
            tasks,
            processors,
            metadata,
            grouper=self.grouper,
            options=self.options,
            replication_factor=self.replication_factor,
            place_fewer_standbys=self.place_fewer_standbys,
        )

    def _ssp_grouper(self, processor_ids: list[str]) -> Any:
        config = self.inputs.config
        grouper = ssp_grouper_from_config(config, processor_ids)
        if not self.inputs.broadcast:
            return grouper
        # Broadcast streams of the plan join those named by task.broadcast.inputs.
        factor = config.get_int("job.elasticity.factor")
        if isinstance(grouper, GroupByPartition):
            return GroupByPartition(grouper.broadcast_inputs | self.inputs.broadcast, factor)
        if isinstance(grouper, GroupBySystemStreamPartition):
            return GroupBySystemStreamPartition(grouper.broadcast_inputs | self.inputs.broadcast, factor)
        return grouper
