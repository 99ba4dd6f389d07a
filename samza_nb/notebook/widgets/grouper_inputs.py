"""What the grouper explorer groups, checked where the user wrote it: the tasks of a plan or of
a count or names, the locations cycled over processors, the explorer's starting model, and one
grouping call made the way the coordinators make it (notebook/widgets/grouper_explorer.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from samza_nb.coordination.job_model_calculator import assign_tasks
from samza_nb.errors import ConfigError
from samza_nb.grouping import (
    GroupByPartition,
    GrouperMetadata,
    HostAffinityGrouper,
    build_task_models,
    grouper_names,
)
from samza_nb.model import (
    JobModel,
    SystemStreamPartition,
    TaskModel,
)
from samza_nb.plan.execution_plan import ExecutionPlan

if TYPE_CHECKING:
    from samza_nb.job.handle import Job

__all__ = ["ExplorerStart", "explorer_start", "group", "tasks_of_plan"]


def tasks_of_plan(plan: ExecutionPlan) -> list[TaskModel]:
    """The tasks a job of ``plan`` runs: one per input partition, as :func:`run` groups them
    (group-by-partition, broadcast streams joining every task)."""
    ssps: list[SystemStreamPartition] = []
    broadcast: list[SystemStreamPartition] = []
    for stream_id, info in plan.streams.items():
        if info.kind == "output":
            continue
        for partition in range(int(info.partitions)):
            ssp = SystemStreamPartition(info.system_name, stream_id, partition)
            ssps.append(ssp)
            if info.is_broadcast:
                broadcast.append(ssp)
    grouped = GroupByPartition(broadcast_inputs=broadcast).group(ssps)
    return list(build_task_models(grouped).values())


def _task_models(tasks: int | Iterable[str | TaskModel]) -> list[TaskModel]:
    """TaskModels from a count (``Partition 0`` …), task names or TaskModels."""
    given: list[str | TaskModel] = (
        [f"Partition {i}" for i in range(tasks)] if isinstance(tasks, int) else list(tasks)
    )
    if not given:
        msg = "tasks is empty; the explorer needs at least one task to group"
        raise ConfigError(msg)
    if all(isinstance(task, TaskModel) for task in given):
        models = [task for task in given if isinstance(task, TaskModel)]
        names = [task.name for task in models]
    elif all(isinstance(task, str) for task in given):
        names = [str(task) for task in given]
        blank = [name for name in names if not name.strip()]
        if blank:
            msg = f"tasks= holds a blank task name ({blank[0]!r}); give every task a name"
            raise ConfigError(msg)
        models = []
    else:
        msg = f"tasks must be a count, task names or TaskModels (not a mix), got {given!r}"
        raise ConfigError(msg)
    # Grouping by name would silently merge two tasks of one name into one.
    repeated = [name for name, times in Counter(names).items() if times > 1]
    if repeated:
        msg = (
            f"tasks= names task {repeated[0]!r} more than once; task names must be unique, "
            f"got {names!r}"
        )
        raise ConfigError(msg)
    return models or list(build_task_models({name: () for name in names}).values())


def _locations(locations: Sequence[str] | str) -> list[str]:
    """The locations cycled over the processors, checked where the user wrote them."""
    given = [locations] if isinstance(locations, str) else list(locations)
    if not given:
        msg = (
            "locations= is empty; give at least one location, or leave locations out for one "
            "location per processor (host-<id>)"
        )
        raise ConfigError(msg)
    bad = [location for location in given if not isinstance(location, str) or not location.strip()]
    if bad:
        msg = (
            f"locations= holds {bad[0]!r}; every location must be a non-empty string, "
            f"e.g. locations=['rack-a', 'rack-b']; got {locations!r}"
        )
        raise ConfigError(msg)
    # As in the locations text box, surrounding spaces are not part of a location.
    return [location.strip() for location in given]


def group(
    grouper: str,
    tasks: Sequence[TaskModel],
    previous: JobModel | None,
    processors: Mapping[str, str],
    config: Mapping[str, str],
    options: Mapping[str, Any] | None = None,
) -> JobModel:
    """Group ``tasks`` over ``processors`` (id → location) with the history of ``previous``.

    ``options`` are the grouper's options (a Job's ``grouper_options``); those the grouper
    needs and ``options`` leave out are filled from the processors the way :func:`run` does.
    """
    # The coordinators compute every job model with the same function, so a preview made here
    # is the model a job regrouped to these processors runs.
    return assign_tasks(
        tasks,
        dict(processors),
        GrouperMetadata.from_job_model(previous, processors),
        grouper=grouper,
        options=options,
    )


def _processors_of(model: JobModel) -> dict[str, str]:
    # A container without a location gets one of its own, so location checks never merge two
    # processors whose location nobody recorded.
    return {
        pid: container.location_id or f"host-{pid}" for pid, container in model.containers.items()
    }


class ExplorerStart(NamedTuple):
    """Where a GrouperExplorer starts: the job it may change (None: a preview), the attached
    job it previews, the current model, its live processors (id → location), the grouper the
    dropdown starts on and the replication factor."""

    job: Job | None
    attached: Any
    current: JobModel
    live: dict[str, str]
    grouper: str
    replication_factor: int


def explorer_start(
    job: Job | None,
    *,
    job_model: JobModel | None,
    plan: ExecutionPlan | None,
    tasks: int | Iterable[str | TaskModel] | None,
    processors: int,
    locations: Sequence[str] | str | None,
    grouper: str | None,
    replication_factor: int | None,
) -> ExplorerStart:
    """Check a GrouperExplorer's arguments where the user wrote them and resolve its start:
    exactly one of a job (or an attached job), a JobModel, a plan or tasks; without a job the
    tasks are grouped with ``grouper`` over ``processors`` at ``locations``."""
    # An attached job (``%samza attach``) is observed, never regrouped: a preview only.
    attached = job if getattr(job, "preview_only", None) else None
    if attached is not None:
        job_model, job = attached.job_model, None
        if job_model is None:
            msg = f"{attached!r} has no job model yet: nothing to explore"
            raise ConfigError(msg)
        if replication_factor is None:
            replication_factor = int(attached.replication_factor)
    given = [
        name
        for name, value in (
            ("job", job),
            ("job_model", job_model),
            ("plan", plan),
            ("tasks", tasks),
        )
        if value is not None
    ]
    if len(given) != 1:
        msg = (
            "GrouperExplorer needs exactly one of job, job_model, plan or tasks "
            f"(got {', '.join(given) or 'none'}); e.g. GrouperExplorer(tasks=8, processors=3)"
        )
        raise ConfigError(msg)
    if replication_factor is None:
        # A job's explorer starts on the job's factor: Apply then keeps its standbys.
        replication_factor = int(getattr(job, "replication_factor", 1)) if job is not None else 1
    if (
        isinstance(replication_factor, bool)
        or not isinstance(replication_factor, int)
        or replication_factor < 1
    ):
        msg = f"replication_factor must be an int >= 1, got {replication_factor!r}"
        raise ConfigError(msg)
    if job is not None and not isinstance(getattr(job, "job_model", None), JobModel):
        msg = (
            f"GrouperExplorer's first argument is a Job, got {type(job).__name__}; "
            "pass a plan as plan=, a JobModel as job_model=, tasks as tasks="
        )
        raise ConfigError(msg)
    if grouper is None:
        grouper = job.grouper if job is not None else HostAffinityGrouper.name
    if grouper not in grouper_names():
        msg = f"unknown task grouper {grouper!r}; known: {', '.join(grouper_names())}"
        raise ConfigError(msg)
    if job is not None:
        current = job.job_model
        live = job.processors
    elif job_model is not None:
        current = job_model
        live = _processors_of(current)
    else:
        if isinstance(processors, bool) or not isinstance(processors, int) or processors < 1:
            msg = f"processors must be a positive int, got {processors!r}"
            raise ConfigError(msg)
        cycle = [] if locations is None else _locations(locations)
        live = {
            str(i): (cycle[i % len(cycle)] if cycle else f"host-{i}") for i in range(processors)
        }
        models = tasks_of_plan(plan) if plan is not None else _task_models(tasks or [])
        current = group(grouper, models, None, live, {})
    return ExplorerStart(job, attached, current, live, grouper, replication_factor)
