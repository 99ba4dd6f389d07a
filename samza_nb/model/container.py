"""ContainerModel: the tasks one processor runs, and where it runs (§3.1, SEP host affinity)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from samza_nb.errors import ModelError
from samza_nb.model.location import LocationId, check_location_id
from samza_nb.model.names import java_sorted
from samza_nb.model.task import TaskMode, TaskModel

__all__ = ["ContainerModel"]


class ContainerModel:
    """An immutable processor → tasks assignment.

    ``tasks`` maps task name to TaskModel (an iterable of TaskModels is accepted too) and holds
    active and standby tasks alike. ``location_id`` is the processor's location when the grouper
    knew it (the SEP adds it to ContainerModel; Samza's JSON has no such field, so it is written
    as ``location-id`` only when set and ignored by Samza readers). Two containers are equal when
    processor id, tasks and location are equal.

    >>> from samza_nb.model import TaskModel
    >>> container = ContainerModel("p1", [TaskModel("Partition 1"), TaskModel("Partition 0")])
    >>> list(container.tasks)
    ['Partition 0', 'Partition 1']
    >>> len(container)
    2
    """

    __slots__ = ("_hash", "_location_id", "_processor_id", "_tasks")

    _processor_id: str
    _tasks: Mapping[str, TaskModel]
    _location_id: LocationId | None
    _hash: int | None

    def __init__(
        self,
        processor_id: str,
        tasks: Mapping[str, TaskModel] | Iterable[TaskModel] = (),
        location_id: LocationId | None = None,
    ) -> None:
        if not isinstance(processor_id, str) or not processor_id:
            msg = f"ContainerModel: processor id must be a non-empty string, got {processor_id!r}"
            raise ModelError(msg)
        if location_id is not None:
            check_location_id(location_id, what=f"ContainerModel {processor_id!r}: location id")
        by_name: dict[str, TaskModel] = {}
        if isinstance(tasks, Mapping):
            for key, task in tasks.items():
                if not isinstance(task, TaskModel):
                    msg = (
                        f"ContainerModel {processor_id!r}: expected TaskModel values, got {task!r}"
                    )
                    raise ModelError(msg)
                if key != task.name:
                    msg = (
                        f"ContainerModel {processor_id!r}: task key {key!r} does not match the "
                        f"task's name {task.name!r}"
                    )
                    raise ModelError(msg)
                by_name[key] = task
        else:
            for task in tasks:
                if not isinstance(task, TaskModel):
                    msg = f"ContainerModel {processor_id!r}: expected TaskModels, got {task!r}"
                    raise ModelError(msg)
                if task.name in by_name:
                    msg = f"ContainerModel {processor_id!r}: task {task.name!r} appears twice"
                    raise ModelError(msg)
                by_name[task.name] = task
        ordered = {name: by_name[name] for name in java_sorted(by_name)}
        object.__setattr__(self, "_processor_id", processor_id)
        object.__setattr__(self, "_tasks", MappingProxyType(ordered))
        object.__setattr__(self, "_location_id", location_id)
        object.__setattr__(self, "_hash", None)

    @property
    def processor_id(self) -> str:
        """The processor id (Samza's ContainerModel ``id``; ``"0"``, ``"1"`` … in YARN style)."""
        return self._processor_id

    @property
    def tasks(self) -> Mapping[str, TaskModel]:
        """Task name → TaskModel, in task-name order (read-only)."""
        return self._tasks

    @property
    def location_id(self) -> LocationId | None:
        return self._location_id

    def active_tasks(self) -> dict[str, TaskModel]:
        return {name: task for name, task in self._tasks.items() if task.mode is TaskMode.ACTIVE}

    def standby_tasks(self) -> dict[str, TaskModel]:
        return {name: task for name, task in self._tasks.items() if task.mode is TaskMode.STANDBY}

    def replace(
        self,
        *,
        processor_id: str | None = None,
        tasks: Mapping[str, TaskModel] | Iterable[TaskModel] | None = None,
        location_id: LocationId | None = None,
    ) -> ContainerModel:
        """A copy with some fields changed (``location_id=None`` keeps the current one)."""
        return ContainerModel(
            self._processor_id if processor_id is None else processor_id,
            self._tasks if tasks is None else tasks,
            self._location_id if location_id is None else location_id,
        )

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[TaskModel]:
        return iter(self._tasks.values())

    def __contains__(self, task_name: object) -> bool:
        return task_name in self._tasks

    def __setattr__(self, name: str, value: Any) -> None:
        msg = f"ContainerModel is immutable; use replace() instead of setting {name!r}"
        raise AttributeError(msg)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ContainerModel):
            return NotImplemented
        return (
            self._processor_id == other._processor_id
            and self._location_id == other._location_id
            and self._tasks == other._tasks
        )

    def __hash__(self) -> int:
        # Hashing names only keeps grouping 10,000 tasks cheap; equal containers have equal names.
        if self._hash is None:
            value = hash((self._processor_id, frozenset(self._tasks)))
            object.__setattr__(self, "_hash", value)
            return value
        return self._hash

    def __repr__(self) -> str:
        where = f", location_id={self._location_id!r}" if self._location_id is not None else ""
        names = ", ".join(
            name if task.mode is TaskMode.ACTIVE else f"{name} (standby)"
            for name, task in self._tasks.items()
        )
        return f"ContainerModel({self._processor_id!r}, tasks=[{names}]{where})"

    def to_json(self) -> dict[str, Any]:
        """Samza's JSON object for a ContainerModel (``processor-id`` and ``tasks``)."""
        value: dict[str, Any] = {
            "processor-id": self._processor_id,
            "tasks": {name: task.to_json() for name, task in self._tasks.items()},
        }
        if self._location_id is not None:
            value["location-id"] = self._location_id
        return value

    @classmethod
    def from_json(cls, value: Any, *, key: str | None = None) -> ContainerModel:
        """Read Samza's JSON with its compatibility rules (§3.3).

        The id comes from ``processor-id``; without it, from the deprecated integer
        ``container-id`` of pre-0.13 models; a bare ``id`` is not accepted. Unknown fields are
        ignored. A non-numeric ``container-id`` is an error here (Samza would read it as 0,
        which can silently merge two containers).
        """
        where = f"container {key!r}" if key is not None else "container"
        if not isinstance(value, dict):
            msg = f"JobModel JSON: {where} must be an object, got {type(value).__name__}"
            raise ModelError(msg)
        processor_id: str
        if "processor-id" in value and value["processor-id"] is not None:
            raw = value["processor-id"]
            processor_id = raw if isinstance(raw, str) else _json_scalar_text(raw)
        elif "container-id" in value and value["container-id"] is not None:
            raw = value["container-id"]
            if isinstance(raw, bool) or not (
                isinstance(raw, int) or (isinstance(raw, str) and raw.strip().lstrip("-").isdigit())
            ):
                msg = f"JobModel JSON: {where} has a non-numeric 'container-id' {raw!r}"
                raise ModelError(msg)
            processor_id = str(int(raw))
        else:
            msg = (
                f"JobModel JSON: {where} is missing 'processor-id' and 'container-id'; "
                "one of them is required"
            )
            raise ModelError(msg)
        raw_tasks = value.get("tasks", {})
        if not isinstance(raw_tasks, dict):
            msg = f"JobModel JSON: {where}: 'tasks' must be an object"
            raise ModelError(msg)
        tasks = [TaskModel.from_json(task, name=name) for name, task in raw_tasks.items()]
        for name, task in zip(raw_tasks, tasks, strict=True):
            if task.name != name:
                msg = f"JobModel JSON: {where}: task stored under {name!r} is named {task.name!r}"
                raise ModelError(msg)
        location = value.get("location-id")
        return cls(
            processor_id, tasks, location if isinstance(location, str) and location else None
        )


def _json_scalar_text(value: Any) -> str:
    """The text Jackson's ``asText`` gives for a scalar JSON value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
