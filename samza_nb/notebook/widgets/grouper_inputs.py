"""What the grouper explorer groups, checked where the user wrote it: the tasks of a plan or of
a count or names, the locations cycled over processors, and one grouping call made the way the
coordinators make it (notebook/widgets/grouper_explorer.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from samza_nb.coordination.job_model_calculator import assign_tasks
from samza_nb.errors import ConfigError
from samza_nb.grouping import (
    GroupByPartition,
    GrouperMetadata,
    build_task_models,
)
from samza_nb.model import (
    JobModel,
    SystemStreamPartition,
    TaskModel,
)
from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["group", "tasks_of_plan"]


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
