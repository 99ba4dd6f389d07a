"""TaskMode and TaskModel: one task, its input partitions and its changelog partition (§3.1)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from samza_nb.errors import ModelError
from samza_nb.model.names import java_sort_key
from samza_nb.model.system_stream import SystemStreamPartition

__all__ = ["TaskMode", "TaskModel"]


class TaskMode(StrEnum):
    """Whether a task processes its inputs (active) or only restores its state (standby)."""

    ACTIVE = "Active"
    STANDBY = "Standby"

    @classmethod
    def parse(cls, value: Any) -> TaskMode:
        """Read a stored mode; missing or empty means active (Samza's rule, §3.3)."""
        if value is None or value == "":
            return cls.ACTIVE
        if isinstance(value, TaskMode):
            return value
        for mode in cls:
            if mode.value == value:
                return mode
        msg = f"unknown task mode {value!r}; expected 'Active' or 'Standby'"
        raise ModelError(msg)


@dataclass(frozen=True, slots=True, eq=True)
class TaskModel:
    """A task: its name, the SSPs it reads, its changelog partition and its mode.

    Equality uses all four fields; ordering uses the task name only, as in Samza.

    >>> from samza_nb.model import SystemStreamPartition
    >>> task = TaskModel("Partition 0", [SystemStreamPartition("kafka", "PVE", 0)], 0)
    >>> task.mode
    <TaskMode.ACTIVE: 'Active'>
    >>> task.to_json()["task-mode"]
    'Active'
    """

    name: str
    ssps: frozenset[SystemStreamPartition] = field(default=frozenset())
    changelog_partition: int = 0
    mode: TaskMode = TaskMode.ACTIVE

    def __init__(
        self,
        name: str,
        ssps: Iterable[SystemStreamPartition] = (),
        changelog_partition: int = 0,
        mode: TaskMode | str = TaskMode.ACTIVE,
    ) -> None:
        if not isinstance(name, str) or not name:
            msg = f"TaskModel: task name must be a non-empty string, got {name!r}"
            raise ModelError(msg)
        frozen = ssps if isinstance(ssps, frozenset) else frozenset(ssps)
        for ssp in frozen:
            if not isinstance(ssp, SystemStreamPartition):
                msg = f"TaskModel {name!r}: expected SystemStreamPartition values, got {ssp!r}"
                raise ModelError(msg)
        if type(changelog_partition) is not int or changelog_partition < 0:
            msg = (
                f"TaskModel {name!r}: changelog partition must be an integer >= 0, "
                f"got {changelog_partition!r}"
            )
            raise ModelError(msg)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "ssps", frozen)
        object.__setattr__(self, "changelog_partition", changelog_partition)
        object.__setattr__(self, "mode", TaskMode.parse(mode))

    def __lt__(self, other: TaskModel) -> bool:
        if not isinstance(other, TaskModel):
            return NotImplemented
        return java_sort_key(self.name) < java_sort_key(other.name)

    def replace(
        self,
        *,
        name: str | None = None,
        ssps: Iterable[SystemStreamPartition] | None = None,
        changelog_partition: int | None = None,
        mode: TaskMode | str | None = None,
    ) -> TaskModel:
        """A copy with some fields changed."""
        return TaskModel(
            self.name if name is None else name,
            self.ssps if ssps is None else ssps,
            self.changelog_partition if changelog_partition is None else changelog_partition,
            self.mode if mode is None else mode,
        )

    def to_json(self) -> dict[str, Any]:
        """Samza's JSON object for a TaskModel (SSPs in sorted order for stable output)."""
        return {
            "task-name": self.name,
            "system-stream-partitions": [ssp.to_json() for ssp in sorted(self.ssps)],
            "changelog-partition": self.changelog_partition,
            "task-mode": self.mode.value,
        }

    @classmethod
    def from_json(cls, value: Any, *, name: str | None = None) -> TaskModel:
        """Read Samza's JSON; ``task-mode`` missing or empty reads as Active (§3.3).

        ``name`` is the key the task was stored under; it is used when ``task-name`` is absent.
        """
        if not isinstance(value, dict):
            msg = f"TaskModel JSON for {name!r} must be an object, got {type(value).__name__}"
            raise ModelError(msg)
        task_name = value.get("task-name", name)
        if not isinstance(task_name, str) or not task_name:
            msg = f"TaskModel JSON {value!r} has no 'task-name'"
            raise ModelError(msg)
        raw_ssps = value.get("system-stream-partitions", [])
        if not isinstance(raw_ssps, list):
            msg = f"TaskModel {task_name!r}: 'system-stream-partitions' must be a list"
            raise ModelError(msg)
        if "changelog-partition" not in value:
            msg = f"TaskModel {task_name!r}: 'changelog-partition' is missing"
            raise ModelError(msg)
        changelog = value["changelog-partition"]
        if isinstance(changelog, bool) or not isinstance(changelog, int):
            msg = f"TaskModel {task_name!r}: 'changelog-partition' must be an integer, got {changelog!r}"
            raise ModelError(msg)
        ssps = [SystemStreamPartition.from_json(item) for item in raw_ssps]
        return cls(task_name, ssps, changelog, TaskMode.parse(value.get("task-mode")))
